// SPDX-License-Identifier: MIT
/*
 * The context's ops, which applications call through verbs.h's inline functions: they must
 * all be there. Polling takes the core's completions and reports them as ibv_wc.
 */
#include "verbs_int.h"

#include <errno.h>
#include <sched.h>
#include <string.h>

#define VB_POLL_BATCH 32
/*
 * A thread that keeps polling an empty CQ yields the CPU now and then. Programs spin on a
 * CQ that stays empty for long stretches (perftest's server on its handshake CQ for a
 * whole bandwidth run), and here the one moving their data may be a thread of ours
 * (iwarp's engine, which then gets the CPU) or the peer process. The clock is read once
 * every VB_POLL_CLOCK_EVERY empty polls, and a yield comes only after VB_YIELD_AFTER_NS of
 * them: a latency loop (its completion within a microsecond or so on shm, a few dozen
 * polls on iwarp) never pays for one.
 */
#define VB_POLL_CLOCK_EVERY 64
#define VB_YIELD_AFTER_NS 20000

static const enum ibv_wc_status wc_status_of[] = {
    [ND_WCS_SUCCESS] = IBV_WC_SUCCESS,
    [ND_WCS_FLUSHED] = IBV_WC_WR_FLUSH_ERR,
    [ND_WCS_LOC_LEN] = IBV_WC_LOC_LEN_ERR,
    [ND_WCS_LOC_PROT] = IBV_WC_LOC_PROT_ERR,
    [ND_WCS_REM_ACCESS] = IBV_WC_REM_ACCESS_ERR,
    [ND_WCS_REM_INV_REQ] = IBV_WC_REM_INV_REQ_ERR,
    [ND_WCS_RNR_RETRY] = IBV_WC_RNR_RETRY_EXC_ERR,
    [ND_WCS_RETRY_EXC] = IBV_WC_RETRY_EXC_ERR,
    [ND_WCS_MW_BIND] = IBV_WC_MW_BIND_ERR,
    [ND_WCS_LOC_QP_OP] = IBV_WC_LOC_QP_OP_ERR,
    [ND_WCS_REM_OP] = IBV_WC_REM_OP_ERR,
    [ND_WCS_GENERAL] = IBV_WC_GENERAL_ERR,
};

/* By nd_request_type; a Write's is the default (switch-free: this is on every poll). */
static const uint8_t wc_opcode_of[] = {
    [ND_REQUEST_TYPE_RECEIVE] = IBV_WC_RECV,
    [ND_REQUEST_TYPE_SEND] = IBV_WC_SEND,
    [ND_REQUEST_TYPE_BIND] = IBV_WC_BIND_MW,
    [ND_REQUEST_TYPE_INVALIDATE] = IBV_WC_LOCAL_INV,
    [ND_REQUEST_TYPE_READ] = IBV_WC_RDMA_READ,
    [ND_REQUEST_TYPE_WRITE] = IBV_WC_RDMA_WRITE,
    [ND_REQUEST_TYPE_FETCH_ADD] = IBV_WC_FETCH_ADD,
    [ND_REQUEST_TYPE_CMP_SWAP] = IBV_WC_COMP_SWAP,
};

static enum ibv_wc_opcode wc_opcode(nd_request_type t)
{
    return (unsigned)t < ND_ARRAY_SIZE(wc_opcode_of) ? (enum ibv_wc_opcode)wc_opcode_of[t] : IBV_WC_RDMA_WRITE;
}

/* Plain loads and stores (no locked add on the poll path): the count and the time that
 * two pollers race on only delay or hasten one yield. */
static inline void vb_cq_polled(struct vb_cq *q)
{
    if (__atomic_load_n(&q->empty_polls, __ATOMIC_RELAXED))
        __atomic_store_n(&q->empty_polls, 0, __ATOMIC_RELAXED);
}

static void vb_cq_empty_poll(struct vb_cq *q)
{
    uint32_t n = __atomic_load_n(&q->empty_polls, __ATOMIC_RELAXED) + 1;
    uint64_t now;

    __atomic_store_n(&q->empty_polls, n, __ATOMIC_RELAXED);
    if (n % VB_POLL_CLOCK_EVERY)
        return;
    now = nd_now_ns();
    if (n == VB_POLL_CLOCK_EVERY) {
        __atomic_store_n(&q->empty_since_ns, now, __ATOMIC_RELAXED);
    } else if (now - __atomic_load_n(&q->empty_since_ns, __ATOMIC_RELAXED) >= VB_YIELD_AFTER_NS) {
        __atomic_store_n(&q->empty_polls, 0, __ATOMIC_RELAXED);
        sched_yield();
    }
}

/* The verbs status of a completion that failed (off the path of every other). */
static __attribute__((noinline)) enum ibv_wc_status wc_failure(const struct nd_wc *c)
{
    enum nd_wc_status s = nd_wc_status_of(c->status, (nd_request_type)c->type, c->flags & ND_WC_LOC_PROT);

    return (unsigned)s < ND_ARRAY_SIZE(wc_status_of) ? wc_status_of[s] : IBV_WC_GENERAL_ERR;
}

/* The work completion of @c; false for one that is dropped. */
static inline bool wc_of(const struct nd_wc *c, struct ibv_wc *w)
{
    const struct vb_qp *qp = c->qp_context;

    if (ND_UNLIKELY(qp && __atomic_load_n(&qp->dead, __ATOMIC_ACQUIRE)))
        return false;           /* its QP is destroyed: dropped, as rdma-core does */
    /* One assignment: the fields not named are zeroed with the stores, with no call. */
    *w = (struct ibv_wc){
        .wr_id = (uint64_t)(uintptr_t)c->request_context,
        .status = ND_LIKELY(c->status == 0) ? IBV_WC_SUCCESS : wc_failure(c),
        .opcode = wc_opcode(c->type),
        .byte_len = c->bytes,
        .qp_num = ND_LIKELY(qp != NULL) ? qp->qp.qp_num : 0,
    };
    if (ND_UNLIKELY(c->flags & (ND_WC_IMM | ND_WC_INV | ND_WC_DGRAM))) {
        if (c->flags & ND_WC_DGRAM) {
            /* UD: the GRH space leads the receive; the sender is its port's QP. sl says
             * which header the GRH space holds, as mlx5 reports a RoCE packet's type there
             * (1: IPv6, 2: IPv4): UCX reads it to find the destination address in it. */
            w->wc_flags = IBV_WC_GRH;
            w->src_qp = ND_DGRAM_QPN(c->src_port);
            w->sl = c->flags & ND_WC_DGRAM_V6 ? 1 : 2;
        }
        if (c->flags & ND_WC_IMM) {
            w->wc_flags |= IBV_WC_WITH_IMM;
            w->imm_data = c->imm;
            if (c->flags & ND_WC_RDMA_IMM)
                w->opcode = IBV_WC_RECV_RDMA_WITH_IMM;
        } else if (c->flags & ND_WC_INV) {
            w->wc_flags = IBV_WC_WITH_INV;
            w->invalidated_rkey = c->imm;
        }
    }
    return true;
}

static int poll_more(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc, int done);

/*
 * Most polls ask for a few completions (perftest's for one): one batch, with no loop around
 * it, and this the only caller of the core's poll, which is inlined here. A poll for more
 * than a batch goes on in poll_more, a batch at a time. A completion of a destroyed QP is
 * dropped and not replaced: the poll returns fewer, as it may.
 */
static int poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
    struct vb_cq *q = to_vb_cq(cq);
    struct nd_wc c[VB_POLL_BATCH];
    uint32_t want, n;
    int done = 0;

    if (ND_UNLIKELY(num_entries <= 0))
        return num_entries < 0 ? -1 : 0;
    want = num_entries < VB_POLL_BATCH ? (uint32_t)num_entries : VB_POLL_BATCH;
    n = nd_cq_get_wc(q->core, c, want);
    for (uint32_t i = 0; i < n; i++)
        done += wc_of(&c[i], &wc[done]);
    if (ND_UNLIKELY(n == VB_POLL_BATCH && num_entries > VB_POLL_BATCH))
        return poll_more(cq, num_entries, wc, done);
    if (done)
        vb_cq_polled(q);
    else
        vb_cq_empty_poll(q);
    return done;
}

static __attribute__((noinline)) int poll_more(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc, int done)
{
    while (done < num_entries) {
        int want = num_entries - done < VB_POLL_BATCH ? num_entries - done : VB_POLL_BATCH;
        int got = poll_cq(cq, want, wc + done);

        done += got;
        if (got < want)
            break;
    }
    return done;
}

void vb_ops_fill(struct ibv_context_ops *ops)
{
    memset(ops, 0, sizeof(*ops));
    ops->poll_cq = poll_cq;
    ops->req_notify_cq = vb_req_notify_cq;
    ops->post_send = vb_post_send;
    ops->post_recv = vb_post_recv;
    ops->post_srq_recv = vb_post_srq_recv;
    ops->alloc_mw = vb_alloc_mw;
    ops->dealloc_mw = vb_dealloc_mw;
    ops->bind_mw = vb_bind_mw;
}
