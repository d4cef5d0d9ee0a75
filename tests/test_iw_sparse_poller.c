// SPDX-License-Identifier: MIT
/*
 * Over iwarp, a peer that polls its CQ now and then (every 3 ms, asleep between, as UCX's
 * one-sided target waits on its control socket) answers every Read, with the right bytes,
 * each within the poll's 5 s bound. The engine serves such a peer's socket, as a NIC answers
 * without the host: it used to leave the socket to the poller (parked while it had polled
 * within 4 ms), and each Read waited for the next poll, half the poll period at the median
 * (1672 us against 35 us since). How long they take is printed, not checked: the figure
 * depends on the host's load, and timing is a benchmark's business.
 */
#include "t_conn.h"

#define POLL_PERIOD_MS 3
#define READS 40

static int info_pipe[2], done_pipe[2];

static void server(int port_pipe)
{
    struct t_side s;
    uint64_t addr;
    char c;

    t_serve_open(&s, port_pipe);
    /* Written before the accept starts the engine thread that serves Reads from it. */
    memcpy(s.buf, "sparse!", 8);
    t_accept(&s, 8, NULL, 0);
    addr = (uintptr_t)s.buf;
    CHECK(write(info_pipe[1], &addr, sizeof(addr)) == sizeof(addr));
    CHECK(write(info_pipe[1], &s.token, sizeof(s.token)) == sizeof(s.token));
    /* Poll now and then until the client is done. */
    for (;;) {
        struct pollfd p = { .fd = done_pipe[0], .events = POLLIN };
        nd_result r;

        nd_cq_get_results(s.cq, &r, 1);
        if (poll(&p, 1, POLL_PERIOD_MS) == 1)
            break;
    }
    CHECK(read(done_pipe[0], &c, 1) == 1);
    t_side_close(&s);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

static uint64_t now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

int main(void)
{
    struct t_side s;
    uint64_t raddr, took[READS];
    uint32_t rtoken;
    uint16_t port;
    int port_rd;
    pid_t pid;

    setenv("ND_TRANSPORT", "iwarp", 1);
    CHECK(pipe(info_pipe) == 0 && pipe(done_pipe) == 0);
    pid = t_fork_server(server, &port_rd);
    CHECK(read(port_rd, &port, sizeof(port)) == sizeof(port));
    t_side_open(&s, 4096, 4, 1);
    t_connect(&s, port, NULL, NULL);
    CHECK(read(info_pipe[0], &raddr, sizeof(raddr)) == sizeof(raddr));
    CHECK(read(info_pipe[0], &rtoken, sizeof(rtoken)) == sizeof(rtoken));
    for (int i = 0; i < READS; i++) {
        nd_sge sge = { s.buf, 8, s.token };
        uint64_t t0 = now_us();
        nd_result r;

        memset(s.buf, 0, 8);
        CHECK_ST(nd_qp_read(s.qp, NULL, &sge, 1, raddr, rtoken, 0), ND_SUCCESS);
        r = t_poll_one(s.cq, 5000);
        took[i] = now_us() - t0;
        CHECK_ST(r.status, ND_SUCCESS);
        CHECK(!memcmp(s.buf, "sparse!", 8));
        usleep(1000 + (unsigned)i * 37 % 1000);     /* land anywhere in the peer's period */
    }
    qsort(took, READS, sizeof(took[0]), cmp_u64);
    printf("Read from a peer polling every %d ms: median %llu us, max %llu us\n", POLL_PERIOD_MS,
           (unsigned long long)took[READS / 2], (unsigned long long)took[READS - 1]);
    CHECK(write(done_pipe[1], "x", 1) == 1);
    t_expect_child_ok(pid);
    t_side_close(&s);
    return 0;
}
