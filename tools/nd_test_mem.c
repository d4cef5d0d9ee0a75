// SPDX-License-Identifier: MIT
/*
 * nd_test's memory, queue-pair and CQ cases: ndmemorytest's remote-access, registration and
 * flush tests, ndcq, ndmval and a shortened ndmw (winverbs-lessons §10).
 */
#include "nd_test.h"
#include "nd_tool.h"

enum {
    WINDOW = 64 << 10,              /* the window the remote-access cases expose */
    GUARD = 4096,                   /* after it: must never change */
    DESC_OFF = WINDOW + GUARD,      /* the descriptor sent to the initiator */
    OWNER_LEN = DESC_OFF + 4096,
    MW_LEN = 64 << 20,              /* ndmw's window */
    MW_BURST = 50000,               /* ndmw's small Writes (ND's runs millions; this is a CI run) */
};

static uint8_t pattern_at(size_t off, uint8_t seed)
{
    return (uint8_t)(seed + off * 7 + (off >> 12));
}

static void fill(uint8_t *p, size_t off, size_t n, uint8_t seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = pattern_at(off + i, seed);
}

static bool filled(const uint8_t *p, size_t off, size_t n, uint8_t seed)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != pattern_at(off + i, seed))
            return false;
    return true;
}

static void wait_completion(struct nt *t, struct nt_ep *e, const char *step, nd_status want)
{
    nt_step(step);
    nt_expect(t, step, nt_next(e->cq, 10000).status, want);
}

/* ---- remote access violations: the client owns a window, the server reaches into it ---- */

enum access_how { INVALIDATED, OVER_RANGE, READ_ONLY_WINDOW, BAD_TOKEN, DEREGISTERED };

static void access_owner(struct nt *t, enum access_how how)
{
    uint32_t rights = how == READ_ONLY_WINDOW ? ND_OP_FLAG_ALLOW_READ : ND_OP_FLAG_ALLOW_READ | ND_OP_FLAG_ALLOW_WRITE;
    struct nt_ep e;

    nt_ep_open(t, &e, OWNER_LEN, ND_MR_FLAG_ALLOW_REMOTE_READ | ND_MR_FLAG_ALLOW_REMOTE_WRITE, 2, 4);
    fill(e.buf, 0, DESC_OFF, 3);
    NT_SETUP(t, nt_post_recv(&e, (void *)0x51, DESC_OFF + 1024, 64));   /* catches the teardown */
    nt_ep_connect_complete(t, &e);
    struct nt_window w = { (uintptr_t)e.buf, WINDOW, 0, 0 };
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    nd_mr *exposed = NULL;
    if (how == DEREGISTERED) {
        /* A region of its own over the window: its token goes out, then it is deregistered. */
        NT_SETUP(t, nd_adapter_create_memory_region(t->adapter, t->port, &exposed));
        NT_SETUP(t, nt_wait(nd_mr_register(exposed, e.buf, WINDOW, ND_MR_FLAG_ALLOW_REMOTE_READ |
                                           ND_MR_FLAG_ALLOW_REMOTE_WRITE, &ov), &ov));
        w.token = nd_mr_get_remote_token(exposed);
    } else {
        NT_SETUP(t, nd_adapter_create_memory_window(t->adapter, &e.mw));
        NT_SETUP(t, nd_qp_bind(e.qp, NULL, e.mr, e.mw, e.buf, WINDOW, rights));
        wait_completion(t, &e, "Bind", ND_SUCCESS);
        w.token = nd_mw_get_remote_token(e.mw);
    }
    if (how == BAD_TOKEN) {
        w.token ^= 0x5a5a0000u;         /* names nothing (and surely not our region) */
        if (w.token == nd_mr_get_remote_token(e.mr))
            w.token ^= 1u;
    }
    memcpy(e.buf + DESC_OFF, &w, sizeof(w));
    NT_SETUP(t, nt_post_send(&e, NULL, DESC_OFF, sizeof(w), 0));
    wait_completion(t, &e, "Send the window's descriptor", ND_SUCCESS);
    if (how == INVALIDATED) {
        NT_SETUP(t, nd_qp_invalidate(e.qp, NULL, e.mw, 0));
        wait_completion(t, &e, "Invalidate", ND_SUCCESS);
    }
    if (exposed) {
        nt_expect(t, "Deregister the exposed region", nt_wait(nd_mr_deregister(exposed, &ov), &ov), ND_SUCCESS);
        nd_mr_close(exposed);
    }
    nt_ctl_send(t, NT_CTL_GO);
    nt_step("the flushed receive");
    nd_result r = nt_next(e.cq, 10000);
    nt_expect(t, "posted receive after the peer's access violation", r.status, ND_CANCELED);
    nt_check(t, "the flush carries the receive's context", r.request_context == (void *)0x51, NULL);
    bool whole = how != OVER_RANGE;     /* an over-range Write may place its in-range part */
    nt_check(t, whole ? "nothing written into the window or after it" : "nothing written after the window",
             filled(e.buf + (whole ? 0 : WINDOW), whole ? 0 : WINDOW, whole ? DESC_OFF : GUARD, 3), NULL);
    nt_ctl_barrier(t);
    nt_ep_close(t, &e);
}

static void access_initiator(struct nt *t, bool write, enum access_how how)
{
    struct nt_window w;
    struct nt_ep e;

    nt_ep_open(t, &e, 2 * WINDOW, ND_MR_FLAG_ALLOW_LOCAL_WRITE | ND_MR_FLAG_RDMA_READ_SINK, 2, 4);
    fill(e.buf, 0, 2 * WINDOW, 0xEE);
    NT_SETUP(t, nt_post_recv(&e, NULL, 2 * WINDOW - 64, sizeof(w)));
    nt_ep_take(t, &e);
    NT_SETUP(t, nt_ep_accept(t, &e));
    wait_completion(t, &e, "receive the window's descriptor", ND_SUCCESS);
    memcpy(&w, e.buf + 2 * WINDOW - 64, sizeof(w));
    nt_step("the client's go-ahead");
    nt_ctl_recv(t);
    nd_sge sge = { e.buf, how == OVER_RANGE ? WINDOW + 1 : 4096, e.token };
    if (write)
        NT_SETUP(t, nd_qp_write(e.qp, NULL, &sge, 1, w.base, w.token, 0));
    else
        NT_SETUP(t, nd_qp_read(e.qp, NULL, &sge, 1, w.base, w.token, 0));
    wait_completion(t, &e, write ? "Write" : "Read", ND_ACCESS_VIOLATION);
    nt_ctl_barrier(t);
    nt_ep_close(t, &e);
}

static void invalid_read_server(struct nt *t) { access_initiator(t, false, INVALIDATED); }
static void invalid_write_server(struct nt *t) { access_initiator(t, true, INVALIDATED); }
static void invalid_client(struct nt *t) { access_owner(t, INVALIDATED); }
static void over_read_server(struct nt *t) { access_initiator(t, false, OVER_RANGE); }
static void over_write_server(struct nt *t) { access_initiator(t, true, OVER_RANGE); }
static void over_client(struct nt *t) { access_owner(t, OVER_RANGE); }
static void violation_server(struct nt *t) { access_initiator(t, true, READ_ONLY_WINDOW); }
static void violation_client(struct nt *t) { access_owner(t, READ_ONLY_WINDOW); }
static void bad_token_server(struct nt *t) { access_initiator(t, true, BAD_TOKEN); }
static void bad_token_client(struct nt *t) { access_owner(t, BAD_TOKEN); }
static void deregistered_server(struct nt *t) { access_initiator(t, true, DEREGISTERED); }
static void deregistered_client(struct nt *t) { access_owner(t, DEREGISTERED); }

/* ---- queue pairs and registrations ---- */

static void large_qp_depth(struct nt *t)
{
    nd_cq *cq;
    nd_qp *qp = NULL;

    NT_SETUP(t, nd_adapter_create_completion_queue(t->adapter, t->port, 2, 0, 0, &cq));
    nt_expect(t, "CreateQueuePair, receive depth MaxReceiveQueueDepth + 1",
              nd_adapter_create_queue_pair(t->adapter, cq, cq, NULL, t->info.max_receive_queue_depth + 1, 1, 2, 2, 0,
                                           &qp), ND_INVALID_PARAMETER_5);
    nt_expect(t, "CreateQueuePair, initiator depth MaxInitiatorQueueDepth + 1",
              nd_adapter_create_queue_pair(t->adapter, cq, cq, NULL, 1, t->info.max_initiator_queue_depth + 1, 2, 2,
                                           0, &qp), ND_INVALID_PARAMETER_6);
    nd_cq_close(cq);
}

/* Every maximum at once; then the connection carries a Send of MaxInitiatorSge pieces. */
static void qp_max_side(struct nt *t)
{
    const nd_adapter_info *in = &t->info;
    uint32_t nsge = t->server ? in->max_receive_sge : in->max_initiator_sge, piece = 16;
    nd_sge sge[64];
    struct nt_ep e;

    nt_ep_open(t, &e, 4096, ND_MR_FLAG_ALLOW_LOCAL_WRITE, in->max_receive_queue_depth, in->max_initiator_queue_depth);
    NT_SETUP(t, nd_qp_close(e.qp));
    nt_expect(t, "CreateQueuePair with every maximum",
              nd_adapter_create_queue_pair(t->adapter, e.cq, e.cq, &e, in->max_receive_queue_depth,
                                           in->max_initiator_queue_depth, in->max_receive_sge, in->max_initiator_sge,
                                           in->max_inline_data_size, &e.qp), ND_SUCCESS);
    if (nsge > 64 || nsge * piece > 4096)
        nt_abort(t, "an SGE list this tool can hold", ND_NOT_SUPPORTED);
    for (uint32_t i = 0; i < nsge; i++)
        sge[i] = (nd_sge){ e.buf + i * piece, piece, e.token };
    if (t->server) {
        NT_SETUP(t, nd_qp_receive(e.qp, NULL, sge, nsge));
        nt_ep_listen(t, &e);
        nt_ep_get_request(t, &e);
        nt_expect(t, "Accept", nt_ep_accept(t, &e), ND_SUCCESS);
        nd_result r = nt_next(e.cq, 10000);
        nt_expect(t, "receive into MaxReceiveSge pieces", r.status, ND_SUCCESS);
        nt_check(t, "every piece arrived in order",
                 r.bytes_transferred == in->max_initiator_sge * piece &&
                 filled(e.buf, 0, r.bytes_transferred, 5), NULL);
    } else {
        fill(e.buf, 0, nsge * piece, 5);
        nt_ep_connect_complete(t, &e);
        NT_SETUP(t, nd_qp_send(e.qp, NULL, sge, nsge, 0));
        wait_completion(t, &e, "Send of MaxInitiatorSge pieces", ND_SUCCESS);
    }
    nt_ctl_barrier(t);
    nt_ep_close(t, &e);
}

static void mr_deregister_server(struct nt *t)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    struct nt_ep e;

    nt_ep_open(t, &e, 1 << 20, ND_MR_FLAG_ALLOW_LOCAL_WRITE, 1, 4);
    nt_ep_take(t, &e);
    NT_SETUP(t, nt_ep_accept(t, &e));
    NT_SETUP(t, nd_adapter_create_memory_window(t->adapter, &e.mw));
    NT_SETUP(t, nd_qp_bind(e.qp, NULL, e.mr, e.mw, e.buf, e.len, ND_OP_FLAG_ALLOW_READ));
    wait_completion(t, &e, "Bind", ND_SUCCESS);
    nt_expect(t, "Deregister with a window bound", nt_wait(nd_mr_deregister(e.mr, &ov), &ov), ND_DEVICE_BUSY);
    NT_SETUP(t, nd_qp_invalidate(e.qp, NULL, e.mw, 0));
    wait_completion(t, &e, "Invalidate", ND_SUCCESS);
    nt_expect(t, "Deregister once the window is invalidated", nt_wait(nd_mr_deregister(e.mr, &ov), &ov), ND_SUCCESS);
    nd_mr_close(e.mr);
    e.mr = NULL;
    nt_ctl_barrier(t);
    nt_ep_close(t, &e);
}

static void connect_and_wait_client(struct nt *t)
{
    struct nt_ep e;

    nt_ep_open_small(t, &e);
    nt_ep_connect_complete(t, &e);
    nt_ctl_barrier(t);
    nt_ep_close(t, &e);
}

static void mr_invalid_buffer(struct nt *t)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    static char ten[10];
    nd_mr *mr;

    NT_SETUP(t, nd_adapter_create_memory_region(t->adapter, t->port, &mr));
    nt_expect(t, "Register(NULL, 0)", nt_wait(nd_mr_register(mr, NULL, 0, ND_MR_FLAG_ALLOW_LOCAL_WRITE, &ov), &ov),
              ND_INVALID_PARAMETER);
    nt_expect(t, "Register(buffer, 0)", nt_wait(nd_mr_register(mr, ten, 0, ND_MR_FLAG_ALLOW_LOCAL_WRITE, &ov), &ov),
              ND_INVALID_BUFFER_SIZE);
    nd_mr_close(mr);
}

/* Two receives on an unconnected QP, Flush, and only then Notify: it must still complete. */
static void receive_flush_qp(struct nt *t)
{
    nd_overlapped ov = { 0 }, *got = NULL;
    nd_result r[3];
    struct nt_ep e;

    nt_ep_open(t, &e, 4096, ND_MR_FLAG_ALLOW_LOCAL_WRITE, 2, 1);
    NT_SETUP(t, nt_post_recv(&e, (void *)1, 0, 64));
    NT_SETUP(t, nt_post_recv(&e, (void *)2, 64, 64));
    nt_expect(t, "Flush", nd_qp_flush(e.qp), ND_SUCCESS);
    nd_status st = nd_cq_notify(e.cq, ND_CQ_NOTIFY_ANY, &ov);
    if (st == ND_PENDING && nd_port_wait(t->port, 5000, &got) == ND_SUCCESS && got == &ov)
        st = ov.status;
    nt_expect(t, "Notify(ANY) after the flush", st, ND_SUCCESS);
    uint32_t n = nd_cq_get_results(e.cq, r, 3);
    nt_check(t, "two receives completed ND_CANCELED, in order",
             n == 2 && r[0].status == ND_CANCELED && r[1].status == ND_CANCELED &&
             r[0].request_context == (void *)1 && r[1].request_context == (void *)2 &&
             r[0].request_type == ND_REQUEST_TYPE_RECEIVE, NULL);
    nt_ep_close(t, &e);
}

static void send_no_receive_client(struct nt *t)
{
    struct nt_ep e;

    nt_ep_open_small(t, &e);
    nt_ep_connect_complete(t, &e);
    NT_SETUP(t, nt_post_send(&e, NULL, 0, 64, 0));
    wait_completion(t, &e, "Send with no receive posted at the peer", ND_IO_TIMEOUT);
    nt_ctl_barrier(t);
    nt_ep_close(t, &e);
}

static void accept_then_wait_server(struct nt *t)
{
    struct nt_ep e;

    nt_ep_open_small(t, &e);
    nt_ep_take(t, &e);
    nt_expect(t, "Accept", nt_ep_accept(t, &e), ND_SUCCESS);
    nt_ctl_barrier(t);
    nt_ep_close(t, &e);
}

/* ---- ndcq: Notify and cancel on two CQs bound to one port ---- */

static bool port_yields(struct nt *t, nd_overlapped *first, nd_overlapped *second)
{
    nd_overlapped *a = NULL, *b = NULL;

    /* Cancellation completes synchronously: both are queued before the call returns. */
    return nd_port_wait(t->port, 0, &a) == ND_SUCCESS && nd_port_wait(t->port, 0, &b) == ND_SUCCESS &&
           a == first && b == second && a->status == ND_CANCELED && b->status == ND_CANCELED;
}

static void ndcq(struct nt *t)
{
    nd_cq *cq1, *cq2;
    unsigned bad[3] = { 0, 0, 0 };

    NT_SETUP(t, nd_adapter_create_completion_queue(t->adapter, t->port, 16, 0, 0, &cq1));
    NT_SETUP(t, nd_adapter_create_completion_queue(t->adapter, t->port, 16, 0, 0, &cq2));
    for (int i = 0; i < 1000; i++) {
        nd_overlapped o1 = { 0 }, o2 = { 0 };

        bad[0] += nd_cq_notify(cq1, ND_CQ_NOTIFY_ANY, &o1) != ND_PENDING ||
                  nd_cq_notify(cq2, ND_CQ_NOTIFY_ANY, &o2) != ND_PENDING ||
                  nd_cq_cancel_overlapped_requests(cq1) != ND_SUCCESS ||
                  nd_cq_cancel_overlapped_requests(cq2) != ND_SUCCESS || !port_yields(t, &o1, &o2);
        bad[1] += nd_cq_notify(cq1, ND_CQ_NOTIFY_ANY, &o1) != ND_PENDING ||
                  nd_cq_notify(cq2, ND_CQ_NOTIFY_SOLICITED, &o2) != ND_PENDING ||
                  nd_cq_cancel_overlapped_requests(cq2) != ND_SUCCESS ||
                  nd_cq_cancel_overlapped_requests(cq1) != ND_SUCCESS || !port_yields(t, &o2, &o1);
        bad[2] += nd_cq_notify(cq1, ND_CQ_NOTIFY_ANY, &o1) != ND_PENDING ||
                  nd_cq_notify(cq1, ND_CQ_NOTIFY_ANY, &o2) != ND_PENDING ||
                  nd_cq_cancel_overlapped_requests(cq1) != ND_SUCCESS || !port_yields(t, &o1, &o2);
    }
    nt_check(t, "Notify both CQs, cancel in order: ND_CANCELED x2, FIFO, synchronous (1000 times)", !bad[0], NULL);
    nt_check(t, "Notify both CQs, cancel in reverse order (1000 times)", !bad[1], NULL);
    nt_check(t, "two Notify on one CQ, cancel (1000 times)", !bad[2], NULL);
    nd_overlapped o = { 0 };
    nt_expect(t, "Notify on a CQ being closed", nd_cq_notify(cq1, ND_CQ_NOTIFY_ANY, &o), ND_PENDING);
    nd_cq_close(cq1);
    nd_overlapped *got = NULL;
    nt_check(t, "closing the CQ cancels its Notify",
             nd_port_wait(t->port, 0, &got) == ND_SUCCESS && got == &o && o.status == ND_CANCELED, NULL);
    nd_cq_close(cq2);
}

/* ---- ndmval: 1024 bytes into a 1023-byte receive ---- */

static void ndmval_server(struct nt *t)
{
    struct nt_ep e;

    nt_ep_open_small(t, &e);
    NT_SETUP(t, nt_post_recv(&e, NULL, 0, 1023));
    nt_ep_take(t, &e);
    NT_SETUP(t, nt_ep_accept(t, &e));
    wait_completion(t, &e, "1023-byte receive of a 1024-byte Send", ND_DATA_OVERRUN);
    nt_ctl_barrier(t);
    nt_ep_close(t, &e);
}

static void ndmval_client(struct nt *t)
{
    struct nt_ep e;

    nt_ep_open_small(t, &e);
    nt_ep_connect_complete(t, &e);
    NT_SETUP(t, nt_post_send(&e, NULL, 0, 1024, 0));
    nt_step("the 1024-byte Send");
    nd_status st = nt_next(e.cq, 10000).status;
    char detail[96];
    snprintf(detail, sizeof(detail), "got %s, expected ND_SUCCESS (iWARP) or STATUS_DATA_ERROR (IB)", nd_strerror(st));
    nt_check(t, "1024-byte Send into a 1023-byte receive", st == ND_SUCCESS || st == STATUS_DATA_ERROR, detail);
    nt_ctl_barrier(t);
    nt_ep_close(t, &e);
}

/* ---- ndmw, shortened: a 64 MiB window, Reads and Writes at offsets, a burst of small Writes ---- */

static const size_t mw_read_at[] = { 0, 16 << 20, 32 << 20 };
static const size_t mw_write_at[] = { 8 << 20, 24 << 20, 40 << 20 };
enum { MW_PIECE = 64 << 10, MW_BURST_AT = 48 << 20, MW_HELLO = 1024 };

static void ndmw_client(struct nt *t)
{
    struct nt_ep e;
    bool ok = true;

    nt_ep_open(t, &e, MW_LEN + 4096, ND_MR_FLAG_ALLOW_REMOTE_READ | ND_MR_FLAG_ALLOW_REMOTE_WRITE, 2, 4);
    fill(e.buf, 0, MW_LEN, 11);
    NT_SETUP(t, nt_post_recv(&e, (void *)0x99, MW_LEN + 2048, 64));
    nt_ep_connect_complete(t, &e);
    NT_SETUP(t, nd_adapter_create_memory_window(t->adapter, &e.mw));
    NT_SETUP(t, nd_qp_bind(e.qp, NULL, e.mr, e.mw, e.buf, MW_LEN, ND_OP_FLAG_ALLOW_READ | ND_OP_FLAG_ALLOW_WRITE));
    wait_completion(t, &e, "Bind a 64 MiB window", ND_SUCCESS);
    struct nt_window w = { (uintptr_t)e.buf, MW_LEN, nd_mw_get_remote_token(e.mw), 0 };
    memcpy(e.buf + MW_LEN, &w, sizeof(w));
    fill(e.buf + MW_LEN + sizeof(w), 0, MW_HELLO, 12);
    NT_SETUP(t, nt_post_send(&e, NULL, MW_LEN, sizeof(w) + MW_HELLO, 0));
    wait_completion(t, &e, "Send the descriptor and 1 KiB", ND_SUCCESS);
    wait_completion(t, &e, "the server's done message", ND_SUCCESS);
    for (size_t i = 0; i < 3; i++) {
        size_t at = mw_write_at[i];

        ok &= filled(e.buf + at, 0, MW_PIECE, 13);
        ok &= filled(e.buf + at - 64, at - 64, 64, 11) && filled(e.buf + at + MW_PIECE, at + MW_PIECE, 64, 11);
    }
    nt_check(t, "the server's 64 KiB Writes at 8, 24 and 40 MiB landed, and only there", ok, NULL);
    ok = true;
    for (uint32_t i = 0; i < MW_BURST; i++) {
        uint32_t v;

        memcpy(&v, e.buf + MW_BURST_AT + 4 * (size_t)i, 4);
        ok &= v == (i ^ 0x5a5a0000u);
    }
    nt_check(t, "every one of the burst's 4-byte Writes landed", ok, NULL);
    NT_SETUP(t, nd_qp_invalidate(e.qp, NULL, e.mw, 0));
    wait_completion(t, &e, "Invalidate", ND_SUCCESS);
    nt_ctl_barrier(t);
    nt_ep_close(t, &e);
}

static void ndmw_burst(struct nt *t, struct nt_ep *e, const struct nt_window *w, size_t src)
{
    uint32_t posted = 0, done = 0, failed = 0;

    for (uint32_t i = 0; i < MW_BURST; i++) {
        uint32_t v = i ^ 0x5a5a0000u;

        memcpy(e->buf + src + 4 * (size_t)i, &v, 4);
    }
    nt_step("the burst of small Writes");
    while (done < MW_BURST) {
        while (posted < MW_BURST && posted - done < 32) {
            nd_sge sge = { e->buf + src + 4 * (size_t)posted, 4, e->token };

            NT_SETUP(t, nd_qp_write(e->qp, NULL, &sge, 1, w->base + MW_BURST_AT + 4 * (uint64_t)posted, w->token, 0));
            posted++;
        }
        nd_result r = nt_next(e->cq, 10000);
        failed += r.status != ND_SUCCESS;
        if (r.status == ND_TIMEOUT)
            break;
        done++;
    }
    char detail[64];
    snprintf(detail, sizeof(detail), "%u of %u failed", failed, (unsigned)MW_BURST);
    nt_check(t, "a burst of 4-byte Writes", !failed && done == MW_BURST, detail);
}

static void ndmw_server(struct nt *t)
{
    size_t src = 4 * MW_PIECE;
    struct nt_window w;
    struct nt_ep e;
    bool ok = true;

    nt_ep_open(t, &e, src + 4 * MW_BURST + 4096, ND_MR_FLAG_ALLOW_LOCAL_WRITE | ND_MR_FLAG_RDMA_READ_SINK, 2, 64);
    NT_SETUP(t, nt_post_recv(&e, NULL, 0, sizeof(w) + MW_HELLO));
    nt_ep_take(t, &e);
    NT_SETUP(t, nt_ep_accept(t, &e));
    wait_completion(t, &e, "receive the descriptor and 1 KiB", ND_SUCCESS);
    memcpy(&w, e.buf, sizeof(w));
    nt_check(t, "the 1 KiB arrived intact", filled(e.buf + sizeof(w), 0, MW_HELLO, 12), NULL);
    for (size_t i = 0; i < 3; i++) {
        nd_sge sge = { e.buf + i * MW_PIECE, MW_PIECE, e.token };

        NT_SETUP(t, nd_qp_read(e.qp, NULL, &sge, 1, w.base + mw_read_at[i], w.token, 0));
    }
    for (size_t i = 0; i < 3; i++)
        wait_completion(t, &e, "64 KiB Read at 0, 16 or 32 MiB", ND_SUCCESS);
    for (size_t i = 0; i < 3; i++)
        ok &= filled(e.buf + i * MW_PIECE, mw_read_at[i], MW_PIECE, 11);
    nt_check(t, "the Reads returned the client's pattern", ok, NULL);
    fill(e.buf + 3 * MW_PIECE, 0, MW_PIECE, 13);
    for (size_t i = 0; i < 3; i++) {
        nd_sge sge = { e.buf + 3 * MW_PIECE, MW_PIECE, e.token };

        NT_SETUP(t, nd_qp_write(e.qp, NULL, &sge, 1, w.base + mw_write_at[i], w.token, 0));
    }
    for (size_t i = 0; i < 3; i++)
        wait_completion(t, &e, "64 KiB Write at 8, 24 or 40 MiB", ND_SUCCESS);
    ndmw_burst(t, &e, &w, src);
    NT_SETUP(t, nt_post_send(&e, NULL, 0, 0, 0));
    wait_completion(t, &e, "Send done", ND_SUCCESS);
    nt_ctl_barrier(t);
    nt_ep_close(t, &e);
}

const struct nt_case nt_mem_cases[] = {
    { "NdInvalidRead", "Read through an invalidated window: ND_ACCESS_VIOLATION, the owner's receive flushes",
      invalid_read_server, invalid_client },
    { "NdInvalidWrite", "Write through an invalidated window: ND_ACCESS_VIOLATION, nothing written",
      invalid_write_server, invalid_client },
    { "NdOverRead", "Read one byte beyond the window: ND_ACCESS_VIOLATION", over_read_server, over_client },
    { "NdOverWrite", "Write one byte beyond the window: ND_ACCESS_VIOLATION", over_write_server, over_client },
    { "NdWriteViolation", "Write into a read-only window: ND_ACCESS_VIOLATION", violation_server, violation_client },
    { "NdBadToken", "Write with a token that names nothing: ND_ACCESS_VIOLATION, nothing written",
      bad_token_server, bad_token_client },
    { "NdDeregisteredRegion", "Write into a region deregistered after its token went out: ND_ACCESS_VIOLATION",
      deregistered_server, deregistered_client },
    { "NdLargeQPDepth", "CreateQueuePair with a depth over the maximum fails", large_qp_depth, NULL },
    { "NdQpMax", "CreateQueuePair with every maximum, and a Send of MaxInitiatorSge pieces",
      qp_max_side, qp_max_side },
    { "NdMRDeregister", "Deregister a region with a window bound: ND_DEVICE_BUSY",
      mr_deregister_server, connect_and_wait_client },
    { "NdMRInvalidBuffer", "Register(NULL, 0) and Register(buffer, 0)", mr_invalid_buffer, mr_invalid_buffer },
    { "NdReceiveFlushQP", "Flush an unconnected QP, then Notify: completes, 2 x ND_CANCELED",
      NULL, receive_flush_qp },
    { "NdSendNoReceive", "Send with no receive posted at the peer: ND_IO_TIMEOUT",
      accept_then_wait_server, send_no_receive_client },
    { "ndcq", "Notify and cancel on one and two CQs through one port: ND_CANCELED, FIFO, synchronous",
      NULL, ndcq },
    { "ndmval", "1024 bytes into a 1023-byte receive: ND_DATA_OVERRUN at the receiver", ndmval_server,
      ndmval_client },
    { "ndmw", "a 64 MiB window: Reads and Writes at offsets, 50,000 small Writes, patterns verified",
      ndmw_server, ndmw_client },
};
const unsigned nt_mem_case_count = sizeof(nt_mem_cases) / sizeof(nt_mem_cases[0]);
