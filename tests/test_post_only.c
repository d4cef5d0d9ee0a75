// SPDX-License-Identifier: MIT
/*
 * An application that only posts must still make progress: Sends held because the peer
 * had no receive go out once the peer posts receives, while the sender only retries its
 * posts (silent Sends, a full queue, no poll, no wait). Both transports.
 */
#include "t_conn.h"

#define DEPTH 4u
#define TOTAL 64u

int main(void)
{
    struct t_side c;
    int p[2], back[2];
    uint16_t port;
    uint32_t sent = 0, got;
    pid_t pid;

    CHECK(pipe(p) == 0 && pipe(back) == 0);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        /* One descriptor each way would do for t_fork_server; this test talks both ways. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        t_become_child_side();
        close(p[0]);
        close(back[1]);
        CHECK(dup2(back[0], 100) == 100 && dup2(p[1], 101) == 101);
        struct t_side s;
        uint16_t lport;
        uint32_t n = 0;
        char ch;

        t_side_open(&s, TOTAL * 8, TOTAL, 1);
        lport = t_listen(&s);
        CHECK(write(101, &lport, sizeof(lport)) == sizeof(lport));
        t_accept(&s, 0, NULL, 0);
        CHECK(read(100, &ch, 1) == 1);
        for (uint32_t i = 0; i < TOTAL; i++) {
            nd_sge rs = { s.buf + i * 8, 8, s.token };
            CHECK_ST(nd_qp_receive(s.qp, NULL, &rs, 1), ND_SUCCESS);
        }
        while (n < TOTAL) {
            nd_result r = t_poll_one(s.cq, 10000);

            CHECK_ST(r.status, ND_SUCCESS);
            n++;
        }
        CHECK(write(101, &n, sizeof(n)) == sizeof(n));
        CHECK(read(100, &ch, 1) == 0);
        t_side_close(&s);
        _exit(0);
    }
    close(p[1]);
    close(back[0]);
    CHECK(read(p[0], &port, sizeof(port)) == sizeof(port));
    t_side_open(&c, 4096, DEPTH, 1);
    t_connect(&c, port, NULL, NULL);
    uint64_t end = t_now_ms() + 5000;
    bool told = false;

    while (sent < TOTAL) {
        nd_sge ss = { &sent, sizeof(sent), 0 };
        nd_status st = nd_qp_send(c.qp, NULL, &ss, 1, ND_OP_FLAG_INLINE | ND_OP_FLAG_SILENT_SUCCESS);

        if (st == ND_SUCCESS) {
            sent++;
            continue;
        }
        CHECK_ST(st, ND_NO_MORE_ENTRIES);
        if (!told) {
            CHECK(write(back[1], "f", 1) == 1);    /* full: the peer may post its receives */
            told = true;
        }
        if (t_now_ms() > end) {
            fprintf(stderr, "only posting: %u of %u Sends went out in 5 s\n", sent, TOTAL);
            return 1;
        }
    }
    CHECK(read(p[0], &got, sizeof(got)) == sizeof(got) && got == TOTAL);
    close(back[1]);
    t_expect_child_ok(pid);
    t_side_close(&c);
    close(p[0]);
    return 0;
}
