// SPDX-License-Identifier: MIT
/*
 * A listener destroyed right after its CONNECT_REQUEST is taken (perftest's server does
 * this): the CM thread re-arms the listener for the next request at that moment, and
 * rdma_destroy_id must still cancel that request and return. Both sides in one process,
 * many rounds; a destroy that never returns fails the test through alarm().
 * Runs on the transport ND_TRANSPORT picks.
 */
#include "cm_test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ROUNDS 300

static void hung(int sig)
{
    static const char msg[] = "rdma_destroy_id of the listener did not return\n";

    (void)sig;
    (void)!write(2, msg, sizeof(msg) - 1);
    _exit(1);
}

static void one_round(struct rdma_event_channel *sch, struct rdma_event_channel *cch)
{
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct rdma_cm_id *l, *c, *child;
    struct rdma_cm_event *ev;

    CHECK(rdma_create_id(sch, &l, NULL, RDMA_PS_TCP) == 0);
    CHECK(rdma_bind_addr(l, (struct sockaddr *)&addr) == 0 && rdma_listen(l, 4) == 0);
    addr.sin_port = ((struct sockaddr_in *)rdma_get_local_addr(l))->sin_port;
    CHECK(rdma_create_id(cch, &c, NULL, RDMA_PS_TCP) == 0);
    cm_resolve(cch, c, &addr);
    struct ibv_qp_init_attr qa = { .cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
                                   .qp_type = IBV_QPT_RC };
    CHECK(rdma_create_qp(c, NULL, &qa) == 0);
    struct rdma_conn_param p = { .private_data = "x", .private_data_len = 1 };
    CHECK(rdma_connect(c, &p) == 0);
    ev = expect(sch, RDMA_CM_EVENT_CONNECT_REQUEST);
    child = ev->id;
    CHECK(rdma_ack_cm_event(ev) == 0);
    /* At once, while the CM thread may still be arming the listener's next request. */
    CHECK(rdma_destroy_id(l) == 0);
    CHECK(rdma_reject(child, NULL, 0) == 0 && rdma_destroy_id(child) == 0);
    CHECK(rdma_ack_cm_event(expect(cch, RDMA_CM_EVENT_REJECTED)) == 0);
    rdma_destroy_qp(c);
    CHECK(rdma_destroy_id(c) == 0);
}

int main(void)
{
    struct rdma_event_channel *sch = rdma_create_event_channel(), *cch = rdma_create_event_channel();

    CHECK(sch && cch);
    signal(SIGALRM, hung);
    alarm(60);
    for (int i = 0; i < ROUNDS; i++)
        one_round(sch, cch);
    rdma_destroy_event_channel(sch);
    rdma_destroy_event_channel(cch);
    printf("listener destroyed after its request, %d rounds: ok\n", ROUNDS);
    return 0;
}
