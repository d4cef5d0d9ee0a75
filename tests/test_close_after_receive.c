// SPDX-License-Identifier: MIT
/*
 * A receiver that closes as soon as it has received everything (ucmatose's server does):
 * every Send it received must complete ND_SUCCESS at the sender, never ND_CANCELED. The
 * client posts 10 Sends back to back; the server, with 10 receives posted, disconnects and
 * closes the moment the 10th completes. 30 connections in a row. Runs on every transport.
 */
#include "t_conn.h"

#define ROUNDS 30
#define NMSG 10

static void server(int port_pipe)
{
    struct t_side s;
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    uint16_t port;

    t_side_open(&s, 1 << 16, 16, 1);
    port = t_listen(&s);
    CHECK(write(port_pipe, &port, sizeof(port)) == sizeof(port));
    for (int round = 0; round < ROUNDS; round++) {
        for (uint32_t i = 0; i < NMSG; i++) {
            nd_sge rs = { s.buf + i * 128, 128, s.token };
            CHECK_ST(nd_qp_receive(s.qp, NULL, &rs, 1), ND_SUCCESS);
        }
        t_accept(&s, 8, NULL, 0);
        for (uint32_t got = 0; got < NMSG; got++) {
            nd_result r = t_poll_one(s.cq, 5000);

            CHECK(r.request_type == ND_REQUEST_TYPE_RECEIVE && r.status == ND_SUCCESS && r.bytes_transferred == 100);
        }
        /* At once: no more polls, no wait for the client. */
        t_wait(nd_connector_disconnect(s.c, &ov), &ov);
        CHECK_ST(nd_connector_close(s.c), ND_SUCCESS);
        CHECK_ST(nd_qp_close(s.qp), ND_SUCCESS);
        while (nd_cq_get_results(s.cq, &(nd_result){ 0 }, 1))
            ;
        CHECK_ST(nd_adapter_create_connector(s.a, s.port, &s.c), ND_SUCCESS);
        CHECK_ST(nd_adapter_create_queue_pair(s.a, s.cq, s.cq, &s, 16, 16, 1, 1, 128, &s.qp), ND_SUCCESS);
    }
    t_side_close(&s);
}

int main(void)
{
    int port_rd;
    pid_t pid = t_fork_server(server, &port_rd);
    uint16_t port;
    uint32_t cancelled = 0;

    CHECK(read(port_rd, &port, sizeof(port)) == sizeof(port));
    for (int round = 0; round < ROUNDS; round++) {
        struct t_side c;

        t_side_open(&c, 1 << 16, 16, 1);
        t_connect(&c, port, NULL, NULL);
        nd_sge ss = { c.buf, 100, c.token };
        for (uint32_t i = 0; i < NMSG; i++)
            CHECK_ST(nd_qp_send(c.qp, (void *)(uintptr_t)i, &ss, 1, 0), ND_SUCCESS);
        for (uint32_t done = 0; done < NMSG; done++) {
            nd_result r = t_poll_one(c.cq, 5000);

            CHECK(r.request_type == ND_REQUEST_TYPE_SEND);
            if (r.status != ND_SUCCESS) {
                fprintf(stderr, "round %d: Send %u of %u completed %s\n", round, done, NMSG, nd_strerror(r.status));
                cancelled++;
            }
        }
        t_side_close(&c);
    }
    t_expect_child_ok(pid);
    if (cancelled) {
        fprintf(stderr, "%u delivered Sends did not complete ND_SUCCESS\n", cancelled);
        return 1;
    }
    printf("%d connections: every Send delivered to a receiver that closed at once completed ND_SUCCESS\n",
           ROUNDS);
    return 0;
}
