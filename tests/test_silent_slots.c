// SPDX-License-Identifier: MIT
/*
 * SILENT_SUCCESS requests free their slots when they complete, with no entry and no poll:
 * a queue filled with silent Sends (the peer has receives for all of them) takes new posts
 * again within a bound, while this process never polls its CQ. Both transports.
 */
#include "t_conn.h"

#define DEPTH 4u
#define TOTAL 64u

static void sink(int port_pipe)
{
    struct t_side s;
    uint16_t port;
    uint32_t got = 0;

    t_side_open(&s, TOTAL * 8, TOTAL, 1);
    port = t_listen(&s);
    for (uint32_t i = 0; i < TOTAL; i++) {
        nd_sge rs = { s.buf + i * 8, 8, s.token };
        CHECK_ST(nd_qp_receive(s.qp, NULL, &rs, 1), ND_SUCCESS);
    }
    CHECK(write(port_pipe, &port, sizeof(port)) == sizeof(port));
    t_accept(&s, 0, NULL, 0);
    while (got < TOTAL) {
        nd_result r = t_poll_one(s.cq, 10000);

        CHECK_ST(r.status, ND_SUCCESS);
        got++;
    }
    /* All in: the client may go. */
    CHECK(write(port_pipe, &got, sizeof(got)) == sizeof(got));
    nd_sge rs = { s.buf, 8, s.token };
    CHECK_ST(nd_qp_receive(s.qp, NULL, &rs, 1), ND_SUCCESS);
    for (uint64_t end = t_now_ms() + 10000; t_now_ms() < end;) {
        nd_result r;

        if (nd_cq_get_results(s.cq, &r, 1))
            break;                  /* the flush of the client's close */
    }
    t_side_close(&s);
}

int main(void)
{
    struct t_side c;
    int pipe_rd;
    pid_t pid = t_fork_server(sink, &pipe_rd);
    uint16_t port;
    uint32_t got;

    CHECK(read(pipe_rd, &port, sizeof(port)) == sizeof(port));
    t_side_open(&c, 4096, DEPTH, 1);
    t_connect(&c, port, NULL, NULL);
    uint64_t end = t_now_ms() + 5000;
    for (uint32_t i = 0; i < TOTAL; i++) {
        nd_sge ss = { &i, sizeof(i), 0 };
        nd_status st;

        while ((st = nd_qp_send(c.qp, NULL, &ss, 1, ND_OP_FLAG_INLINE | ND_OP_FLAG_SILENT_SUCCESS)) ==
               ND_NO_MORE_ENTRIES) {
            if (t_now_ms() > end) {
                fprintf(stderr, "the queue stayed full after %u silent Sends with no poll\n", i);
                return 1;
            }
            sched_yield();
        }
        CHECK_ST(st, ND_SUCCESS);
    }
    CHECK(read(pipe_rd, &got, sizeof(got)) == sizeof(got) && got == TOTAL);
    nd_result r;
    CHECK(nd_cq_get_results(c.cq, &r, 1) == 0);     /* silent: not one entry */
    t_side_close(&c);
    t_expect_child_ok(pid);
    close(pipe_rd);
    return 0;
}
