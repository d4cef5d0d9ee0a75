// SPDX-License-Identifier: MIT
/*
 * nd_ping: Send bandwidth with credit flow control, as ND's ndping. The server keeps -q
 * receives posted and returns them as credits (one small Send per half of the queue);
 * the client never sends without a credit, so no Send ever waits for a receive. As in
 * ndping, every receive lands in the same buffer (the data is not looked at); a zero-byte
 * Send ends the run.
 *   nd_ping -s <ip>[:port]       server
 *   nd_ping -c <ip>[:port]       client   [-b|-p] [-q depth] [-S size] [-M max] [-i iterations] [--json]
 */
#include "nd_tool.h"

#define DEFAULT_PORT 54327
#define MAX_SIZE (1u << 20)
#define CREDIT_BUFS 4u


struct client {
    struct tool_ep e;
    uint32_t credits, sends_out;
    bool ending;                    /* the end message is out: the server may leave */
};

/* Client: take one completion; a receive is a credit message from the server. */
static void client_take(struct client *cl)
{
    nd_result r = tool_next_any(&cl->e);
    uint8_t *cbuf = (uint8_t *)cl->e.buf + MAX_SIZE;

    /* Once the server has our end message it may close before our last Send completes:
     * the credit receives flush then, in no set order with that completion. */
    if (r.status != ND_SUCCESS && !(cl->ending && r.request_type == ND_REQUEST_TYPE_RECEIVE &&
                                    r.status == ND_CANCELED))
        TOOL_DIE("completion failed: %s (type %d)", nd_strerror(r.status), r.request_type);
    if (r.status != ND_SUCCESS)
        return;
    if (r.request_type == ND_REQUEST_TYPE_SEND) {
        cl->sends_out--;
        return;
    }
    uintptr_t k = (uintptr_t)r.request_context;
    uint32_t n;
    nd_sge rs = { cbuf + k * 8, 8, cl->e.token };

    memcpy(&n, cbuf + k * 8, sizeof(n));
    cl->credits += n;
    TOOL_CHECK(nd_qp_receive(cl->e.qp, (void *)k, &rs, 1));
}

static void client_send(struct client *cl, const nd_sge *sge, uint32_t depth)
{
    while (!cl->credits || cl->sends_out == depth)
        client_take(cl);
    TOOL_CHECK(nd_qp_send(cl->e.qp, NULL, sge, sge->buffer_length ? 1 : 0,
                          sge->buffer_length <= 64 ? ND_OP_FLAG_INLINE : 0));
    cl->credits--;
    cl->sends_out++;
}

static void run_size(struct client *cl, const struct tool_opts *o, uint32_t size, uint32_t iters)
{
    nd_sge ds = { cl->e.buf, size, cl->e.token };

    for (uint32_t i = 0; i < iters; i++)
        client_send(cl, &ds, o->depth);
    while (cl->sends_out)
        client_take(cl);
}

/* Server: every receive lands at the start of the buffer; credits go back in batches. */
static void serve(struct tool_ep *e, const struct tool_opts *o)
{
    uint8_t *cbuf = (uint8_t *)e->buf + MAX_SIZE;
    uint32_t owed = 0, batch = o->depth / 2;
    nd_sge rs = { e->buf, MAX_SIZE, e->token };

    for (uint32_t k = 0; k < o->depth; k++)
        TOOL_CHECK(nd_qp_receive(e->qp, NULL, &rs, 1));
    tool_accept(e, &o->addr, NULL, 0);
    for (;;) {
        nd_result r = tool_next(e);

        if (r.request_type == ND_REQUEST_TYPE_SEND)
            continue;               /* a credit message went out */
        if (!r.bytes_transferred)
            break;
        TOOL_CHECK(nd_qp_receive(e->qp, NULL, &rs, 1));
        if (++owed >= batch) {
            nd_sge cs = { cbuf, 8, e->token };

            memcpy(cbuf, &owed, sizeof(owed));
            TOOL_CHECK(nd_qp_send(e->qp, NULL, &cs, 1, ND_OP_FLAG_INLINE));
            owed = 0;
        }
    }
}

static void usage(void)
{
    fprintf(stderr, "usage: nd_ping -s|-c <ip>[:port] [-b|-p] [-q depth] [-S size] [-M max size] "
                    "[-i iterations] [-a] [--json]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    struct client cl = { .credits = 0 };
    struct tool_opts o = { .depth = 16, .max_size = MAX_SIZE };
    uint32_t sizes[32], nsizes = 0;

    if (!tool_parse(argc, argv, "bpqSMia", DEFAULT_PORT, &o) || o.depth < 2 || o.depth > 64 ||
        o.max_size > MAX_SIZE || o.size > MAX_SIZE)
        usage();
    bool blocking = o.blocking;
    /* Both sides use the same depth: the client starts with that many credits. */
    cl.e.shared = o.shared_mem;
    tool_open(&cl.e, &o.addr, 2 * MAX_SIZE, o.depth + CREDIT_BUFS + 2, 1);
    cl.e.blocking = blocking;
    if (o.server) {
        serve(&cl.e, &o);
        tool_close(&cl.e);
        return 0;
    }
    for (uintptr_t k = 0; k < CREDIT_BUFS; k++) {
        nd_sge rs = { (uint8_t *)cl.e.buf + MAX_SIZE + k * 8, 8, cl.e.token };
        TOOL_CHECK(nd_qp_receive(cl.e.qp, (void *)k, &rs, 1));
    }
    tool_connect(&cl.e, &o.addr, NULL, NULL);
    cl.credits = o.depth;
    nsizes = tool_sizes(&o, sizes);
    if (!o.json)
        printf("%10s %10s %14s %8s %14s\n", "Size", "Iter", "Latency(us)", "CPU(%)", "Bytes/s");
    for (uint32_t i = 0; i < nsizes; i++) {
        uint32_t iters = tool_bw_iters(&o, sizes[i], 100000);

        run_size(&cl, &o, sizes[i], iters / 10 + 1);    /* warm-up */
        double t0 = tool_now_us(), c0 = tool_cpu_us();
        run_size(&cl, &o, sizes[i], iters);
        double us = tool_now_us() - t0, cpu = tool_cpu_us() - c0;
        double bps = (double)sizes[i] * iters / (us / 1e6);
        if (o.json)
            printf("{\"op\":\"send\",\"size\":%u,\"iterations\":%u,\"depth\":%u,\"latency_us\":%.3f,"
                   "\"cpu_percent\":%.1f,\"bytes_per_sec\":%.0f,\"mode\":\"%s\"}\n", sizes[i], iters, o.depth,
                   us / iters, 100.0 * cpu / us, bps, blocking ? "blocking" : "polling");
        else
            printf("%10u %10u %14.3f %8.1f %14.0f\n", sizes[i], iters, us / iters, 100.0 * cpu / us, bps);
        fflush(stdout);
    }
    nd_sge es = { NULL, 0, 0 };
    client_send(&cl, &es, o.depth);
    cl.ending = true;
    while (cl.sends_out)
        client_take(&cl);
    tool_close(&cl.e);
    return 0;
}
