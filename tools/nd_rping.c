// SPDX-License-Identifier: MIT
/*
 * nd_rping: RDMA Write (-w, default) or Read (-r) bandwidth, as ND's ndrping. The server
 * only registers a buffer and hands its address and token over in the connection's
 * private data; its CPU takes no part. The client keeps -q operations in flight against
 * it and reports, per size, the time per operation and the bytes per second.
 *   nd_rping -s <ip>[:port]       server
 *   nd_rping -c <ip>[:port]       client   [-w|-r] [-b|-p] [-q depth] [-S size] [-M max] [-i iterations] [--json]
 */
#include "nd_tool.h"

#define DEFAULT_PORT 54326
#define MAX_SIZE (4u << 20)


struct target {
    uint64_t addr;
    uint32_t token;
};

/* @iters operations of @size bytes, @depth in flight; the source (or sink) is our buffer. */
static void run_size(struct tool_ep *e, const struct tool_opts *o, const struct target *t, uint32_t size, uint32_t iters)
{
    nd_sge sge = { e->buf, size, e->token };
    uint32_t posted = 0, done = 0;

    while (done < iters) {
        while (posted < iters && posted - done < o->depth) {
            TOOL_CHECK(o->read ? nd_qp_read(e->qp, NULL, &sge, 1, t->addr, t->token, 0)
                               : nd_qp_write(e->qp, NULL, &sge, 1, t->addr, t->token, 0));
            posted++;
        }
        tool_next(e);
        done++;
    }
}

static void usage(void)
{
    fprintf(stderr, "usage: nd_rping -s|-c <ip>[:port] [-w|-r] [-b|-p] [-q depth] [-S size] [-M max size] "
                    "[-i iterations] [-a] [--json]\n");
    exit(2);
}

static void serve(struct tool_ep *e, const struct tool_opts *o)
{
    struct target t = { (uint64_t)(uintptr_t)e->buf, nd_mr_get_remote_token(e->mr) };
    nd_sge rs = { e->buf, 64, e->token };

    TOOL_CHECK(nd_qp_receive(e->qp, NULL, &rs, 1));
    tool_accept(e, &o->addr, &t, sizeof(t));
    tool_next(e);                   /* the client's "done": everything before it is over */
}

int main(int argc, char **argv)
{
    struct tool_ep e = { 0 };
    struct tool_opts o = { .depth = 16, .max_size = MAX_SIZE };
    struct target t;
    uint32_t tl = sizeof(t), sizes[32], nsizes = 0;

    if (!tool_parse(argc, argv, "wrbpqSMia", DEFAULT_PORT, &o) || o.depth < 1 || o.depth > 64 ||
        o.max_size > MAX_SIZE || o.size > MAX_SIZE)
        usage();
    bool blocking = o.blocking;
    e.shared = o.shared_mem;
    tool_open(&e, &o.addr, MAX_SIZE, o.depth + 1, 1);
    e.blocking = blocking;
    if (o.server) {
        serve(&e, &o);
        tool_close(&e);
        return 0;
    }
    tool_connect(&e, &o.addr, &t, &tl);
    if (tl != sizeof(t))
        TOOL_DIE("the server sent no buffer");
    nsizes = tool_sizes(&o, sizes);
    if (!o.json)
        printf("%10s %10s %14s %8s %14s\n", "Size", "Iter", "Latency(us)", "CPU(%)", "Bytes/s");
    for (uint32_t i = 0; i < nsizes; i++) {
        uint32_t iters = tool_bw_iters(&o, sizes[i], 20000);

        run_size(&e, &o, &t, sizes[i], iters / 10 + 1);  /* warm-up */
        double t0 = tool_now_us(), c0 = tool_cpu_us();
        run_size(&e, &o, &t, sizes[i], iters);
        double us = tool_now_us() - t0, cpu = tool_cpu_us() - c0;
        double bps = (double)sizes[i] * iters / (us / 1e6);
        if (o.json)
            printf("{\"op\":\"%s\",\"size\":%u,\"iterations\":%u,\"depth\":%u,\"latency_us\":%.3f,"
                   "\"cpu_percent\":%.1f,\"bytes_per_sec\":%.0f,\"mode\":\"%s\"}\n", o.read ? "read" : "write",
                   sizes[i], iters, o.depth, us / iters, 100.0 * cpu / us, bps, blocking ? "blocking" : "polling");
        else
            printf("%10u %10u %14.3f %8.1f %14.0f\n", sizes[i], iters, us / iters, 100.0 * cpu / us, bps);
        fflush(stdout);
    }
    nd_sge done = { e.buf, 8, e.token };
    TOOL_CHECK(nd_qp_send(e.qp, NULL, &done, 1, 0));
    tool_next(&e);
    tool_close(&e);
    return 0;
}
