// SPDX-License-Identifier: MIT
/* Server: ./hello SERVER_IP PORT; client: ./hello SERVER_IP PORT LOCAL_IP. It Sends "hello". */
#include <netdirect/netdirect.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(x) do { nd_status s_ = (x); if (ND_FAILED(s_)) { fprintf(stderr, "%s: %s\n", #x, nd_strerror(s_)); exit(1); } } while (0)
#define WAIT(x) do { nd_status w_ = (x); CHECK(w_ == ND_PENDING ? nd_get_overlapped_result(&ov, 1) : w_); } while (0)

int main(int argc, char **argv)
{
    struct sockaddr_in peer = { .sin_family = AF_INET }, me = { .sin_family = AF_INET };
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    nd_adapter *a; nd_port *port; nd_cq *cq; nd_qp *qp; nd_connector *c; nd_mr *mr; nd_listener *l;
    char buf[64] = "hello";
    nd_result r;

    if (argc < 3 || inet_pton(AF_INET, argv[1], &peer.sin_addr) != 1 ||
        inet_pton(AF_INET, argv[argc == 4 ? 3 : 1], &me.sin_addr) != 1)
        return 2;
    peer.sin_port = htons((uint16_t)atoi(argv[2]));
    CHECK(nd_open_adapter_by_address((struct sockaddr *)&me, sizeof(me), &a));
    CHECK(nd_adapter_create_overlapped_file(a, &port));
    CHECK(nd_adapter_create_completion_queue(a, port, 8, 0, 0, &cq));
    CHECK(nd_adapter_create_queue_pair(a, cq, cq, NULL, 4, 4, 1, 1, 0, &qp));
    CHECK(nd_adapter_create_connector(a, port, &c));
    CHECK(nd_adapter_create_memory_region(a, port, &mr));
    WAIT(nd_mr_register(mr, buf, sizeof(buf), ND_MR_FLAG_ALLOW_LOCAL_WRITE, &ov));
    nd_sge sge = { buf, argc == 4 ? 6 : sizeof(buf), nd_mr_get_local_token(mr) };
    if (argc == 3) {                                    /* server: a receive, then listen */
        CHECK(nd_qp_receive(qp, NULL, &sge, 1));
        CHECK(nd_adapter_create_listener(a, port, &l));
        CHECK(nd_listener_bind(l, (struct sockaddr *)&peer, sizeof(peer)));
        CHECK(nd_listener_listen(l, 0));
        fputs("listening\n", stderr);
        WAIT(nd_listener_get_connection_request(l, c, &ov));
        WAIT(nd_connector_accept(c, qp, 0, 0, NULL, 0, &ov));
    } else {                                            /* client: connect, then Send */
        CHECK(nd_connector_bind(c, (struct sockaddr *)&me, sizeof(me)));
        WAIT(nd_connector_connect(c, qp, (struct sockaddr *)&peer, sizeof(peer), 0, 0, NULL, 0, &ov));
        WAIT(nd_connector_complete_connect(c, &ov));
        CHECK(nd_qp_send(qp, NULL, &sge, 1, 0));
    }
    while (nd_cq_get_results(cq, &r, 1) == 0)           /* spin: nd_cq_notify would sleep */
        ;
    CHECK(r.status);
    if (argc == 3)
        puts(buf);
    return 0;                                           /* exit releases everything */
}
