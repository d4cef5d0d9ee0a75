// SPDX-License-Identifier: MIT
/*
 * A receiver that closes as soon as it has received everything (ucmatose's server does):
 * every Send it received must complete ND_SUCCESS at the sender, never ND_CANCELED. The
 * client posts 10 Sends back to back; the server, with 10 receives posted, disconnects and
 * closes the moment the 10th completes, 30 connections in a row; then 30 servers that
 * each exit(0) the moment their 10th receive completes, closing nothing. Runs on every
 * transport.
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

/* LeakSanitizer asks this at exit: the exiting server leaves its objects open on purpose. */
static int leaks_expected;
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
    return leaks_expected;
}

/* One connection; the process ends with exit(0) as its last receive completes. */
static void exiting_server(int port_pipe)
{
    struct t_side s;

    t_side_open(&s, 1 << 16, 16, 1);
    for (uint32_t i = 0; i < NMSG; i++) {
        nd_sge rs = { s.buf + i * 128, 128, s.token };
        CHECK_ST(nd_qp_receive(s.qp, NULL, &rs, 1), ND_SUCCESS);
    }
    uint16_t port = t_listen(&s);
    CHECK(write(port_pipe, &port, sizeof(port)) == sizeof(port));
    t_accept(&s, 8, NULL, 0);
    for (uint32_t got = 0; got < NMSG; got++)
        CHECK_ST(t_poll_one(s.cq, 5000).status, ND_SUCCESS);
    leaks_expected = 1;
    exit(0);
}

/* 10 Sends to the server on @port; how many did not complete ND_SUCCESS. */
static uint32_t send_burst(uint16_t port, int round)
{
    struct t_side c;
    uint32_t bad = 0;

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
            bad++;
        }
    }
    t_side_close(&c);
    return bad;
}

int main(void)
{
    int port_rd;
    pid_t pid = t_fork_server(server, &port_rd);
    uint16_t port;
    uint32_t cancelled = 0, exited = 0;

    CHECK(read(port_rd, &port, sizeof(port)) == sizeof(port));
    for (int round = 0; round < ROUNDS; round++)
        cancelled += send_burst(port, round);
    t_expect_child_ok(pid);
    close(port_rd);
    for (int round = 0; round < ROUNDS; round++) {
        pid = t_fork_server(exiting_server, &port_rd);
        CHECK(read(port_rd, &port, sizeof(port)) == sizeof(port));
        exited += send_burst(port, round);
        t_expect_child_ok(pid);
        close(port_rd);
    }
    if (cancelled || exited) {
        fprintf(stderr, "delivered Sends that did not complete ND_SUCCESS: %u (receiver closed), %u (receiver exited)\n",
                cancelled, exited);
        return 1;
    }
    printf("%d connections whose receiver closed at once, %d whose receiver exited: every delivered Send completed "
           "ND_SUCCESS\n", ROUNDS, ROUNDS);
    return 0;
}
