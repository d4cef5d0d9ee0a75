// SPDX-License-Identifier: MIT
/*
 * nd_pingpong: Send/Receive latency, as ND's ndpingpong. The client sends, the server
 * echoes; latency is half the round trip. -p polls the CQ (default), -b arms it and
 * sleeps in GetOverlappedResult.
 *   nd_pingpong -s <ip>[:port]       server
 *   nd_pingpong -c <ip>[:port]       client   [-b|-p] [-P] [-N [-T]] [-I] [-n sge] [-q depth] [-S size] [-i iterations] [--json]
 * -N calls in ndpingpong's order (each side re-posts its receive before it replies and
 * waits for each Send's completion), so that the SDK program on the SPI can be compared
 * with the same calls made on the C API; it is perftest's ib_send_lat order too. -q sets
 * the queues' depth, each side's on its own command line (64; with -N, ndpingpong's 16384,
 * all of it kept posted with receives). -T, with -N, also does on each side what
 * ib_send_lat does each turn besides its calls (perftest_turn.h): compared with ib_send_lat
 * over the verbs drop-in, the two then differ in the library underneath alone.
 */
#include "nd_tool.h"
#include "perftest_turn.h"

#define DEFAULT_PORT 54325
#define MAX_SIZE (4u << 20)
#define MAX_SGE 32u     /* per message (-n): the adapter's initiator SGE limit */

/* Every receive takes the buffer's second half. */
static nd_sge receive_sge(const struct tool_ep *e)
{
    return (nd_sge){ (uint8_t *)e->buf + MAX_SIZE, MAX_SIZE, e->token };
}

/* A receive the server's -N run took in while it waited for its last Send's completion:
 * the client's next control message, which may come before that completion. */
static bool control_early;
static nd_result control_early_result;

/*
 * The server's next receive. Results of different queues come in any order, so our own
 * sends' completions are skipped here rather than awaited: waiting for them could swallow
 * the client's next message, which may already be behind them.
 */
static nd_result next_receive(struct tool_ep *e)
{
    nd_result r;

    if (control_early) {
        control_early = false;
        return control_early_result;
    }
    while ((r = tool_next(e)).request_type == ND_REQUEST_TYPE_SEND)
        ;
    return r;
}

static void run_size(struct tool_ep *e, const struct tool_opts *o, uint32_t size, uint32_t iters, bool client)
{
    uint8_t *buf = e->buf;
    uint32_t per = o->nsge ? (size + o->nsge - 1) / o->nsge : 0, nsge = 0;
    nd_sge sge[MAX_SGE];
    nd_sge rsge = receive_sge(e);
    /* -I: no inline Sends, as perftest's on a device it does not know (it keeps inline for
     * the vendors it lists). */
    uint32_t flags = size <= 128 && !o->no_inline ? ND_OP_FLAG_INLINE : 0;

    for (uint32_t off = 0; off < size; off += per)
        sge[nsge++] = (nd_sge){ buf + off, size - off < per ? size - off : per, e->token };
    /* Each side keeps one receive posted beyond the one the next message takes, so a
     * receive is re-posted after the Send rather than before it, off the round trip, as
     * ucx_perftest's tag_lat posts its next receive; the spare also reaches the peer with
     * the Send as a credit, so the peer never has to look for it. */
    for (uint32_t i = 0; i < iters; i++) {
        if (client) {
            TOOL_CHECK(nd_qp_send(e->qp, NULL, sge, nsge, flags));
            TOOL_CHECK(nd_qp_receive(e->qp, NULL, &rsge, 1));
            tool_next(e);
            tool_next(e);
        } else {
            nd_result r = next_receive(e);

            if (r.bytes_transferred != size)
                TOOL_DIE("unexpected receive of %u bytes (want %u)", r.bytes_transferred, size);
            TOOL_CHECK(nd_qp_send(e->qp, NULL, sge, nsge, flags));
            TOOL_CHECK(nd_qp_receive(e->qp, NULL, &rsge, 1));
        }
    }
}

static nd_result last_receive;  /* the newest receive await_kind counted */

/* Until a Send's (@want_send) or a receive's completion is in; completions of the other
 * kind that come first are counted for later, as ndpingpong's flags keep them. */

static void await_kind(struct tool_ep *e, uint32_t *sends, uint32_t *recvs, bool want_send)
{
    uint32_t *want = want_send ? sends : recvs;

    while (!*want) {
        nd_result r = tool_next(e);

        if (r.request_type == ND_REQUEST_TYPE_SEND) {
            (*sends)++;
        } else {
            (*recvs)++;
            last_receive = r;
        }
    }
    (*want)--;
}

/* ndpingpong's Ping (client) and Pong (server), on the C API. Its buffers come from the
 * heap, 16 bytes past a cache line (malloc's header on an mmapped block): ours start there
 * too, so that a 64-byte message spans the same two lines. Its queues are as deep as the
 * adapter allows (it parses -q but passes 0, "the adapter's limit", to both roles) and
 * hold that many receives: a ring of 16384 entries and slots, whose first lap through
 * cold memory is part of what its figures measure. */
#define SDK_BUF_OFFSET 16u
#define SDK_QUEUE_DEPTH 16384u
static void run_size_sdk_order(struct tool_ep *e, uint32_t size, uint32_t iters, bool client, uint32_t recvs,
                               bool no_inline, bool turn_work)
{
    struct perftest_turn turn = { 0 };
    nd_sge sge = { (uint8_t *)e->buf + SDK_BUF_OFFSET, size, e->token }, rsge = receive_sge(e);
    uint32_t flags = size < e->inline_threshold && !no_inline ? ND_OP_FLAG_INLINE : 0, sends = 0;

    rsge.buffer = (uint8_t *)rsge.buffer + SDK_BUF_OFFSET;
    rsge.buffer_length -= SDK_BUF_OFFSET;
    /* ndpingpong keeps its queue depth of receives posted; ours has two up to here. */
    for (; e->extra_receives < e->depth - 2; e->extra_receives++)
        TOOL_CHECK(nd_qp_receive(e->qp, rsge.buffer, &rsge, 1));

    if (turn_work && !perftest_turn_init(&turn, iters))
        TOOL_DIE("no memory for %u turns' stamps", iters);
    for (uint32_t i = 0; i < iters; i++) {
        if (client) {
            perftest_turn_work(&turn, i);   /* ND's Sends are signalled anyway */
            TOOL_CHECK(nd_qp_send(e->qp, NULL, &sge, 1, flags));
            await_kind(e, &sends, &recvs, true);
            await_kind(e, &sends, &recvs, false);
            TOOL_CHECK(nd_qp_receive(e->qp, rsge.buffer, &rsge, 1));
        } else {
            await_kind(e, &sends, &recvs, false);
            TOOL_CHECK(nd_qp_receive(e->qp, rsge.buffer, &rsge, 1));
            perftest_turn_work(&turn, i);
            TOOL_CHECK(nd_qp_send(e->qp, NULL, &sge, 1, flags));
            await_kind(e, &sends, &recvs, true);
        }
    }
    perftest_turn_fini(&turn);
    /* Over iwarp a Send completes once a later answer proves it placed, so the client's
     * next control message can come before our last Send's completion. */
    if (recvs > 1 || (recvs && client))
        TOOL_DIE("%u receives more than the run's", recvs);
    if (recvs) {
        control_early = true;
        control_early_result = last_receive;
    }
}

static void usage(void)
{
    fprintf(stderr, "usage: nd_pingpong -s|-c <ip>[:port] [-b|-p] [-P] [-N [-T]] [-I] [-n sge] [-S size] [-M max size] "
                    "[-q depth] [-i iterations] [-a] [--json]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    struct tool_ep e = { 0 };
    struct tool_opts o = { .nsge = 1, .max_size = 1u << 20 };
    uint32_t sizes[32], nsizes = 0, hdr[4];

    if (!tool_parse(argc, argv, "bpnqSMiaPNIT", DEFAULT_PORT, &o) || (o.turn_work && !o.sdk_order) || o.nsge < 1 || o.nsge > MAX_SGE || o.max_size > MAX_SIZE ||
        o.size > MAX_SIZE || (o.depth && o.depth < 4))   /* room for the receives each order keeps */
        usage();
    bool blocking = o.blocking;
    e.shared = o.shared_mem;
    /* The server learns each run's SGE count from the client: room for the most. */
    if (!o.depth)
        o.depth = o.sdk_order ? SDK_QUEUE_DEPTH : 64;
    tool_open(&e, &o.addr, 2 * MAX_SIZE, o.depth, o.server ? MAX_SGE : o.nsge);
    e.blocking = blocking;
    e.pause_polls = o.pause_polls;
    if (o.server) {
        nd_sge rsge = receive_sge(&e);

        /* Two: the next message's and the spare (run_size). */
        TOOL_CHECK(nd_qp_receive(e.qp, NULL, &rsge, 1));
        TOOL_CHECK(nd_qp_receive(e.qp, NULL, &rsge, 1));
        tool_accept(&e, &o.addr, NULL, 0);
        /* The client announces each size and count in an 12-byte message first. */
        for (;;) {
            nd_result r = next_receive(&e);

            if (r.bytes_transferred != sizeof(hdr))
                TOOL_DIE("bad control message (%u bytes)", r.bytes_transferred);
            /* A receive -N posted names where its buffer starts (16 bytes in). */
            memcpy(hdr, r.request_context ? r.request_context : (uint8_t *)e.buf + MAX_SIZE, sizeof(hdr));
            TOOL_CHECK(nd_qp_receive(e.qp, NULL, &rsge, 1));
            if (hdr[0] == 0)
                break;
            o.nsge = hdr[2];
            /* Every receive shares one buffer, and over iwarp a message is placed while we
             * run: the client sends its run only on this answer, once hdr is read. */
            TOOL_CHECK(nd_qp_send(e.qp, NULL, &(nd_sge){ e.buf, 4, e.token }, 1, ND_OP_FLAG_INLINE));
            if (hdr[3]) {
                uint32_t sends = 0, recvs = 0;

                await_kind(&e, &sends, &recvs, true);
                run_size_sdk_order(&e, hdr[1], hdr[0], false, recvs, o.no_inline, hdr[3] & 2);
            } else {
                run_size(&e, &o, hdr[1], hdr[0], false);   /* it skips the answer's completion */
            }
        }
        tool_close(&e);
        return 0;
    }
    tool_connect(&e, &o.addr, NULL, NULL);
    nd_sge spare = receive_sge(&e);
    TOOL_CHECK(nd_qp_receive(e.qp, NULL, &spare, 1));   /* run_size */
    nsizes = tool_sizes(&o, sizes);
    if (!o.json)
        printf("%10s %10s %14s %8s %14s %10s\n", "Size", "Iter", "Latency(us)", "CPU(%)", "Bytes/s", "Syscalls/RT");
    for (uint32_t i = 0; i < nsizes; i++) {
        uint32_t iters = o.iters ? o.iters : sizes[i] <= 4096 ? 100000 : sizes[i] <= 65536 ? 20000 : 2000;
        nd_sge cs = { e.buf, sizeof(hdr), e.token };

        hdr[0] = iters + 1000;   /* the first 1000 are warm-up */
        hdr[1] = sizes[i];
        hdr[2] = o.nsge;
        hdr[3] = o.sdk_order | (uint32_t)o.turn_work << 1;     /* the server's -N and -T */
        memcpy(e.buf, hdr, sizeof(hdr));
        TOOL_CHECK(nd_qp_send(e.qp, NULL, &cs, 1, ND_OP_FLAG_INLINE));
        tool_next(&e);          /* the Send's completion and the server's answer, either order */
        tool_next(&e);
        TOOL_CHECK(nd_qp_receive(e.qp, NULL, &spare, 1));
        /* The first 1000 round trips count system calls (the tracepoint slows each call,
         * so they are not timed) and warm up; the rest are timed. */
        int counter = tool_counter_start();     /* -1 (reported as -1) without tracefs or rights */
        if (o.sdk_order)
            run_size_sdk_order(&e, sizes[i], 1000, true, 0, o.no_inline, o.turn_work);
        else
            run_size(&e, &o, sizes[i], 1000, true);
        long long calls = tool_counter_stop(counter);
        double t0 = tool_now_us(), c0 = tool_cpu_us();
        if (o.sdk_order)
            run_size_sdk_order(&e, sizes[i], iters, true, 0, o.no_inline, o.turn_work);
        else
            run_size(&e, &o, sizes[i], iters, true);
        double us = tool_now_us() - t0, cpu = tool_cpu_us() - c0;
        double per_rt = calls < 0 ? -1 : (double)calls / 1000;
        double lat = us / iters / 2, bps = 2.0 * sizes[i] * iters / (us / 1e6);
        if (o.json)
            printf("{\"size\":%u,\"iterations\":%u,\"latency_us\":%.3f,\"cpu_percent\":%.1f,\"bytes_per_sec\":%.0f,"
                   "\"syscalls_per_roundtrip\":%.4f,\"mode\":\"%s\"}\n", sizes[i], iters, lat, 100.0 * cpu / us, bps,
                   per_rt, blocking ? "blocking" : "polling");
        else
            printf("%10u %10u %14.3f %8.1f %14.0f %10.4f\n", sizes[i], iters, lat, 100.0 * cpu / us, bps, per_rt);
        fflush(stdout);
    }
    hdr[0] = 0;
    memcpy(e.buf, hdr, sizeof(hdr));
    nd_sge cs = { e.buf, sizeof(hdr), e.token };
    TOOL_CHECK(nd_qp_send(e.qp, NULL, &cs, 1, ND_OP_FLAG_INLINE));
    /* The server closes on this message: the spare receive may come back flushed first. */
    for (nd_result r; (r = tool_next_any(&e)).request_type != ND_REQUEST_TYPE_SEND || r.status != ND_SUCCESS;)
        if (r.request_type != ND_REQUEST_TYPE_RECEIVE || r.status != ND_CANCELED)
            TOOL_DIE("completion failed: %s (type %d)", nd_strerror(r.status), r.request_type);
    tool_close(&e);
    return 0;
}
