// SPDX-License-Identifier: MIT
/*
 * nd_rpingpong: RDMA Write latency, as ND's ndrpingpong. Each side hands its buffer over
 * in the connection's private data. The client Writes @size bytes into the server's buffer,
 * the last byte carrying a sequence number; the server watches its own memory for that
 * byte and Writes back the same way. Half the round trip is the latency. Both sides poll
 * their CQ while they watch (to reap their Writes' completions, and so that a transport
 * that needs a poller to move bytes gets one); with -W they only read the byte, and reap
 * after it changed, as ND's ndrpingpong does (the transport's own thread then places the
 * peer's Write).
 *   nd_rpingpong -s <ip>[:port]       server
 *   nd_rpingpong -c <ip>[:port]       client   [-W] [-S size] [-M max] [-i iterations] [--json]
 */
#include "nd_tool.h"

#define DEFAULT_PORT 54328
#define MAX_SIZE (1u << 20)

struct target {
    uint64_t addr;
    uint32_t token;
};

struct side {
    struct tool_ep e;
    struct target peer;
    uint32_t writes_out;
};

static void reap(struct side *s)
{
    nd_result r;

    while (nd_cq_get_results(s->e.cq, &r, 1) == 1) {
        if (r.status != ND_SUCCESS)
            TOOL_DIE("completion failed: %s (type %d)", nd_strerror(r.status), r.request_type);
        s->writes_out--;
    }
}

/* Wait until the last byte of our buffer's [0, size) reads @seq. */
static void watch(struct side *s, uint32_t size, uint8_t seq, bool watch_only)
{
    volatile uint8_t *last = (volatile uint8_t *)s->e.buf + size - 1;

    while (*last != seq)
        if (!watch_only)
            reap(s);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (watch_only)
        reap(s);
}

static void write_to_peer(struct side *s, uint32_t size, uint8_t seq)
{
    uint8_t *src = (uint8_t *)s->e.buf + MAX_SIZE;
    nd_sge sge = { src, size, s->e.token };

    src[size - 1] = seq;
    while (s->writes_out >= 32)
        reap(s);
    TOOL_CHECK(nd_qp_write(s->e.qp, NULL, &sge, 1, s->peer.addr, s->peer.token, size <= 64 ? ND_OP_FLAG_INLINE : 0));
    s->writes_out++;
}

/* @iters round trips of @size; the sequence byte starts where the last run left it. */
static void run(struct side *s, uint32_t size, uint32_t iters, bool client, bool watch_only, uint8_t *seq)
{
    for (uint32_t i = 0; i < iters; i++) {
        (*seq)++;
        if (client) {
            write_to_peer(s, size, *seq);
            watch(s, size, *seq, watch_only);
        } else {
            watch(s, size, *seq, watch_only);
            write_to_peer(s, size, *seq);
        }
    }
}

static void usage(void)
{
    fprintf(stderr, "usage: nd_rpingpong -s|-c <ip>[:port] [-W] [-S size] [-M max size] [-i iterations] [-a] [--json]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    struct side s = { 0 };
    struct tool_opts o = { .max_size = 64u << 10 };
    struct hello {
        struct target t;
        uint32_t plan[4];           /* size, max size, iterations, -W: both sides run the client's */
    } in = { 0 };
    uint32_t tl = sizeof(struct target), hl = sizeof(in);
    uint8_t seq = 0;

    if (!tool_parse(argc, argv, "SMiaW", DEFAULT_PORT, &o) || o.size > MAX_SIZE || o.max_size > MAX_SIZE ||
        o.max_size < 1)
        usage();
    s.e.shared = o.shared_mem;
    tool_open(&s.e, &o.addr, 2 * MAX_SIZE, 40, 1);
    struct hello mine = { { (uint64_t)(uintptr_t)s.e.buf, nd_mr_get_remote_token(s.e.mr) },
                          { o.size, o.max_size, o.iters, o.watch_only } };
    uint32_t *plan = mine.plan;
    if (o.server) {
        tool_accept_pd(&s.e, &o.addr, &mine.t, sizeof(mine.t), &in, &hl);
        if (hl != sizeof(in))
            TOOL_DIE("bad private data");
        s.peer = in.t;
        plan = in.plan;
    } else {
        tool_connect_pd(&s.e, &o.addr, &mine, sizeof(mine), &s.peer, &tl);
        if (!o.json)
            printf("%10s %10s %14s %8s\n", "Size", "Iter", "Latency(us)", "CPU(%)");
    }
    bool server = o.server, json = o.json;
    for (uint32_t sz = plan[0] ? plan[0] : 1; sz <= (plan[0] ? plan[0] : plan[1]); sz *= 2) {
        uint32_t n = plan[2] ? plan[2] : sz <= 4096 ? 50000 : 5000;

        run(&s, sz, 500, !server, plan[3], &seq);     /* warm-up */
        double t0 = tool_now_us(), c0 = tool_cpu_us();
        run(&s, sz, n, !server, plan[3], &seq);
        double us = tool_now_us() - t0, cpu = tool_cpu_us() - c0;
        if (!server && json)
            printf("{\"op\":\"write\",\"size\":%u,\"iterations\":%u,\"latency_us\":%.3f,\"cpu_percent\":%.1f}\n", sz, n,
                   us / n / 2, 100.0 * cpu / us);
        else if (!server)
            printf("%10u %10u %14.3f %8.1f\n", sz, n, us / n / 2, 100.0 * cpu / us);
        fflush(stdout);
        if (plan[0])
            break;
    }
    while (s.writes_out)
        reap(&s);
    tool_close(&s.e);
    return 0;
}
