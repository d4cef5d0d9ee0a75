// SPDX-License-Identifier: MIT
/* Queue pairs: creation, the three completion rings, flush and the error state. */
#include "qp_int.h"
#include "copy.h"
#include "srq_int.h"
#include "transport.h"
#include "log.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static uint32_t pow2_at_least(uint32_t n)
{
    uint32_t p = 1;

    while (p < n)
        p <<= 1;
    return p;
}

static size_t align_up(size_t n, size_t a)
{
    return (n + a - 1) & ~(a - 1);
}

void nd_qp_layout(uint32_t rq_entries, uint32_t max_sge, uint32_t slot_size, struct nd_qp_layout *l)
{
    l->ring = sizeof(struct nd_qp_ctl);
    l->ents = l->ring + sizeof(struct nd_ring_hdr);
    l->rwqe = align_up(l->ents + (size_t)rq_entries * sizeof(struct nd_cqe), ND_CACHELINE);
    l->rwqe_stride = align_up(sizeof(struct nd_rwqe) + (size_t)max_sge * sizeof(struct nd_rwqe_sge), 16);
    l->slots = align_up(l->rwqe + (size_t)rq_entries * l->rwqe_stride, ND_CACHELINE);
    l->size = align_up(l->slots + (size_t)rq_entries * slot_size, 4096);
}

void nd_qp_region_populate(uint8_t *map, const struct nd_qp_layout *l, uint32_t slot_size)
{
    if (slot_size >= 4096)
        return;
    /* Only a hint: a kernel before 5.14 (EINVAL) or a short memory (ENOMEM) leaves the
     * pages to be faulted in on first use, as before. */
    if (madvise(map, l->size, MADV_POPULATE_WRITE) != 0)
        nd_log(ND_LOG_DEBUG, ND_SUB_CORE, "queue region not populated: %s", strerror(errno));
}

uint32_t nd_qp_slot_size(uint32_t rq_entries)
{
    uint32_t size = ND_SLOT_MAX;

    while (size > ND_SLOT_MIN && (uint64_t)size * rq_entries > ND_SLOT_BUDGET)
        size /= 2;
    return size;
}

bool nd_qp_valid(const struct nd_qp *qp)
{
    return qp && qp->magic == ND_MAGIC_QP;
}

static struct nd_rq_slot *rq_slot(struct nd_qp *qp, uint32_t k)
{
    return &qp->rq[k & (qp->rq_entries - 1)];
}

/* ---- translation of ring entries into results (CQ lock held) ---- */

static void advance_reaped(struct nd_qp *qp)
{
    uint32_t r = atomic_load_explicit(&qp->sq_reaped, memory_order_acquire);

    /* Skip requests that completed silently; posters race us here, hence the CAS. */
    while (r != __atomic_load_n(&qp->sq_posted, __ATOMIC_ACQUIRE) &&
           __atomic_load_n(&qp->sq[r & (qp->iq_entries - 1)].done, __ATOMIC_ACQUIRE))
        if (atomic_compare_exchange_weak(&qp->sq_reaped, &r, r + 1))
            r++;
}

/* A requester's result whose own memory failed its check: say so to a front end that asks. */
static __attribute__((noinline)) enum nd_xlate initiator_failed(struct nd_qp *qp, const struct nd_cqe *e,
                                                                 nd_result *r)
{
    struct nd_wc *x = nd_cq_wc_of(qp->icq, r);

    if (x && (e->flags & ND_CQE_LOC_PROT))
        x->flags |= ND_WC_LOC_PROT;
    r->status = nd_status_shown(r->status);
    return ND_XLATE_OK;
}

static enum nd_xlate initiator_translate(void *ctx, const struct nd_cqe *e, nd_result *r)
{
    struct nd_qp *qp = ctx;
    uint32_t reaped = atomic_load(&qp->sq_reaped);
    struct nd_sq_slot *slot;

    if ((int32_t)(e->wr_index - reaped) < 0 ||
        (int32_t)(e->wr_index - __atomic_load_n(&qp->sq_posted, __ATOMIC_ACQUIRE)) >= 0)
        return ND_XLATE_BAD;
    slot = &qp->sq[e->wr_index & (qp->iq_entries - 1)];
    r->status = e->status;
    r->bytes_transferred = e->bytes;
    r->qp_context = qp->context;
    r->request_context = slot->ctx;
    r->request_type = (nd_request_type)slot->type;
    /* A tail call, and the status is in a register: a success costs one test. */
    if (ND_UNLIKELY(r->status != 0))
        return initiator_failed(qp, e, r);
    return ND_XLATE_OK;
}

static void initiator_retire(void *ctx, const struct nd_cqe *e)
{
    struct nd_qp *qp = ctx;

    atomic_store_explicit(&qp->sq_reaped, e->wr_index + 1, memory_order_release);
    advance_reaped(qp);
}

static void receive_result(struct nd_qp *qp, uint32_t k, int st, uint32_t bytes, nd_result *r)
{
    r->status = st;
    r->bytes_transferred = st == 0 ? bytes : 0;
    r->qp_context = qp->context;
    r->request_context = rq_slot(qp, k)->ctx;
    r->request_type = ND_REQUEST_TYPE_RECEIVE;
}

/* Receive @k's slot may take a new receive. */
static void receive_retire(void *ctx, const struct nd_cqe *e)
{
    struct nd_qp *qp = ctx;

    if (!qp->srq)
        atomic_store_explicit(&qp->rq_expected, e->wr_index + 1, memory_order_release);
}

/*
 * Scatter a message (from its slot, or from the entry itself) into the receive's buffers,
 * each checked again now: a region deregistered since the receive was posted is not
 * touched (false: the receive fails as a local protection error).
 */
static bool scatter(struct nd_qp *qp, uint32_t k, const uint8_t *src, uint32_t bytes)
{
    struct nd_rq_slot *slot = rq_slot(qp, k);

    for (uint32_t i = 0; i < slot->nsge && bytes; i++) {
        uint32_t n = slot->sge[i].buffer_length < bytes ? slot->sge[i].buffer_length : bytes;

        if (n && nd_mtab_check_local(qp->adapter, &qp->scatter_memo, slot->sge[i].memory_region_token,
                                     (uintptr_t)slot->sge[i].buffer, n, ND_ACCESS_LOCAL_WRITE) != 0)
            return false;
        nd_copy(slot->sge[i].buffer, src, n);
        src += n;
        bytes -= n;
    }
    return true;
}

/* Immediate data, for a poll that asked for it (verbs). After the request type is stored:
 * the flags share its word. */
static void receive_ext(struct nd_qp *qp, const struct nd_cqe *e, nd_result *r)
{
    struct nd_wc *x = nd_cq_wc_of(qp->rcq, r);

    if (!x)
        return;
    x->imm = nd_cqe_imm(e);
    x->flags = (e->flags & ND_CQE_IMM ? ND_WC_IMM : 0) | (e->flags & ND_CQE_RDMA_IMM ? ND_WC_RDMA_IMM : 0) |
               (e->flags & ND_CQE_INV ? ND_WC_INV : 0);
}

/* A Send with Invalidate from a peer that left the invalidation to us (shm): the STag must
 * be a bound window of the QP's domain. Done before the message is reported, as RFC 5040
 * §6.10 has it done before it is placed. */
static bool invalidate_asked(struct nd_qp *qp, const struct nd_cqe *e)
{
    if (!(e->flags & ND_CQE_INV_ASK))
        return true;
    return (e->flags & ND_CQE_INV) && nd_mtab_remote_invalidate(qp->adapter, nd_cqe_imm(e), qp->pd);
}

/* The most a message may carry in the entry itself. */
static uint32_t entry_data_max(const struct nd_cqe *e)
{
    return e->flags & ND_CQE_IMM ? ND_CQE_IMM_INLINE_MAX : ND_CQE_INLINE_MAX;
}

static void take_credits(struct nd_qp *qp, const struct nd_cqe *e)
{
    /* Credits ride on every entry; a lying peer only hurts its own receive queue. */
    atomic_store_explicit(&qp->peer_posted, e->credit_posted, memory_order_relaxed);
    atomic_store_explicit(&qp->peer_consumed, e->credit_consumed, memory_order_relaxed);
}

/* A Write with immediate consumed SRQ slot e->wr_index: nothing is placed in it; the
 * result reports the Write's length. */
static enum nd_xlate srq_write_imm(struct nd_qp *qp, const struct nd_cqe *e, nd_result *r)
{
    struct nd_cqe empty = *e;
    enum nd_xlate x;
    bool overrun;

    if (!(e->flags & ND_CQE_IMM) || (e->flags & (ND_CQE_INLINE | ND_CQE_INLINE_DATA)))
        return ND_XLATE_BAD;
    empty.bytes = 0;
    x = nd_srq_complete(qp->srq, e->wr_index, &empty, NULL, r, &overrun);
    if (x != ND_XLATE_OK)
        return x;
    r->bytes_transferred = r->status == 0 ? e->bytes : 0;
    r->qp_context = qp->context;
    r->request_type = ND_REQUEST_TYPE_RECEIVE;
    receive_ext(qp, e, r);
    take_credits(qp, e);
    if (overrun) {
        nd_qp_fail(qp, r->status);
        r->status = nd_status_shown(r->status);
    }
    return ND_XLATE_OK;
}

/* SRQ slot e->wr_index's buffers were found unwritable (iwarp): as inbound_unwritable. */
static enum nd_xlate srq_unwritable(struct nd_qp *qp, const struct nd_cqe *e, nd_result *r)
{
    struct nd_cqe empty = *e;
    enum nd_xlate x;
    bool overrun;

    if (e->bytes || (e->flags & (ND_CQE_INLINE | ND_CQE_INLINE_DATA | ND_CQE_RDMA_IMM)))
        return ND_XLATE_BAD;
    x = nd_srq_complete(qp->srq, e->wr_index, &empty, NULL, r, &overrun);
    if (x != ND_XLATE_OK)
        return x;
    r->status = -EFAULT;
    r->bytes_transferred = 0;
    r->qp_context = qp->context;
    r->request_type = ND_REQUEST_TYPE_RECEIVE;
    take_credits(qp, e);
    nd_qp_fail(qp, -EFAULT);
    r->status = nd_status_shown(-EFAULT);
    return ND_XLATE_OK;
}

/* A peer's completion for a receive it claimed from our SRQ (slot number in wr_index). */
static enum nd_xlate srq_translate(struct nd_qp *qp, const struct nd_cqe *e, const uint8_t *slot_data, nd_result *r)
{
    const uint8_t *data = NULL;
    enum nd_xlate x;
    bool overrun;

    if (e->type != ND_REQUEST_TYPE_RECEIVE || (e->status != 0 && e->status != -EMSGSIZE))
        return ND_XLATE_BAD;
    if (ND_UNLIKELY(e->flags & (ND_CQE_RDMA_IMM | ND_CQE_LOC_PROT)))
        return e->flags & ND_CQE_LOC_PROT ? srq_unwritable(qp, e, r) : srq_write_imm(qp, e, r);
    if (e->flags & ND_CQE_INLINE_DATA) {
        if (e->bytes > entry_data_max(e))
            return ND_XLATE_BAD;
        data = e->data;
    } else if (e->flags & ND_CQE_INLINE) {
        if (e->bytes > qp->slot_size)
            return ND_XLATE_BAD;
        data = slot_data;
    }
    if (ND_UNLIKELY((e->flags & (ND_CQE_IMM | ND_CQE_INV)) == (ND_CQE_IMM | ND_CQE_INV)))
        return ND_XLATE_BAD;
    x = nd_srq_complete(qp->srq, e->wr_index, e, data, r, &overrun);
    if (x != ND_XLATE_OK)
        return x;
    r->qp_context = qp->context;
    r->request_type = ND_REQUEST_TYPE_RECEIVE;
    if (ND_UNLIKELY(e->flags & (ND_CQE_IMM | ND_CQE_INV))) {
        if (!overrun && !invalidate_asked(qp, e)) {
            r->status = -EFAULT;
            r->bytes_transferred = 0;
            overrun = true;
        }
        receive_ext(qp, e, r);
    }
    take_credits(qp, e);
    if (overrun) {
        nd_qp_fail(qp, r->status);
        r->status = nd_status_shown(r->status);
    }
    return ND_XLATE_OK;
}

/* Place a message into receive @k: from the entry itself (at most @entry_max bytes) or
 * from its slot. ND_XLATE_BAD: a length the entry cannot hold; *st: the receive's status. */
static inline __attribute__((always_inline)) enum nd_xlate
place_message(struct nd_qp *qp, uint32_t k, const struct nd_cqe *e, const uint8_t *slot_data, uint32_t entry_max,
              int *st)
{
    if (e->status == -EMSGSIZE || e->bytes > rq_slot(qp, k)->total) {
        *st = -EMSGSIZE;
    } else if (e->flags & ND_CQE_INLINE_DATA) {
        if (e->bytes > entry_max)
            return ND_XLATE_BAD;
        if (!scatter(qp, k, e->data, e->bytes))
            *st = -EFAULT;
    } else if (e->flags & ND_CQE_INLINE) {
        if (e->bytes > qp->slot_size)
            return ND_XLATE_BAD;
        if (!scatter(qp, k, slot_data, e->bytes))
            *st = -EFAULT;
    }
    return ND_XLATE_OK;
}

/* An entry with immediate data or an invalidated STag (verbs), kept off the path of every
 * other receive. */
static __attribute__((noinline)) enum nd_xlate inbound_tagged(struct nd_qp *qp, uint32_t k, const struct nd_cqe *e,
                                                              const uint8_t *slot_data, nd_result *r)
{
    int st = 0;
    bool imm = e->flags & ND_CQE_IMM, inv = e->flags & ND_CQE_INV;

    if (imm == inv || ((e->flags & ND_CQE_RDMA_IMM) && !imm))
        return ND_XLATE_BAD;        /* exactly one of the two; a Write's receive has immediate data */
    if (!invalidate_asked(qp, e)) {
        st = -EFAULT;
    } else if (e->flags & ND_CQE_RDMA_IMM) {
        /* A Write with immediate: its bytes went to the Write's target; the receive only
         * reports it. */
        if (e->flags & (ND_CQE_INLINE | ND_CQE_INLINE_DATA))
            return ND_XLATE_BAD;
        st = e->status;
    } else if (place_message(qp, k, e, slot_data, ND_CQE_IMM_INLINE_MAX, &st) != ND_XLATE_OK) {
        return ND_XLATE_BAD;
    }
    take_credits(qp, e);
    receive_result(qp, k, st, e->bytes, r);
    receive_ext(qp, e, r);
    if (st != 0) {
        nd_qp_fail(qp, st);
        r->status = nd_status_shown(st);
    }
    return ND_XLATE_OK;
}

/* The receive's buffers were found unwritable where the message was placed (iwarp): it
 * fails as a local protection error, and the connection with it. */
static __attribute__((noinline)) enum nd_xlate inbound_unwritable(struct nd_qp *qp, uint32_t k, const struct nd_cqe *e,
                                                                  nd_result *r)
{
    if (e->bytes || (e->flags & (ND_CQE_INLINE | ND_CQE_INLINE_DATA | ND_CQE_RDMA_IMM)))
        return ND_XLATE_BAD;
    take_credits(qp, e);
    receive_result(qp, k, -EFAULT, 0, r);
    nd_qp_fail(qp, -EFAULT);
    r->status = nd_status_shown(-EFAULT);
    return ND_XLATE_OK;
}

/* An entry the peer wrote into our inbound ring. */
static enum nd_xlate inbound_translate(void *ctx, const struct nd_cqe *e, nd_result *r)
{
    struct nd_qp *qp = ctx;
    uint32_t k = e->wr_index, exp = atomic_load(&qp->rq_expected);
    int st = 0;

    const uint8_t *slot_data = qp->region + qp->layout.slots +
                               (size_t)((e->seq - 1) & (qp->rq_entries - 1)) * qp->slot_size;

    if (qp->srq)
        return srq_translate(qp, e, slot_data, r);
    if (k != exp)
        return (int32_t)(k - exp) < 0 && qp->failed ? ND_XLATE_SKIP : ND_XLATE_BAD;
    if ((int32_t)(k - __atomic_load_n(&qp->rq_posted, __ATOMIC_ACQUIRE)) >= 0 ||
        e->type != ND_REQUEST_TYPE_RECEIVE || (e->status != 0 && e->status != -EMSGSIZE))
        return ND_XLATE_BAD;
    if (ND_UNLIKELY(e->flags & (ND_CQE_IMM | ND_CQE_RDMA_IMM | ND_CQE_INV | ND_CQE_INV_ASK | ND_CQE_LOC_PROT)))
        return e->flags & ND_CQE_LOC_PROT ? inbound_unwritable(qp, k, e, r) : inbound_tagged(qp, k, e, slot_data, r);
    if (place_message(qp, k, e, slot_data, ND_CQE_INLINE_MAX, &st) != ND_XLATE_OK)
        return ND_XLATE_BAD;
    take_credits(qp, e);
    receive_result(qp, k, st, e->bytes, r);
    if (st != 0) {
        nd_qp_fail(qp, st);     /* the receiver's buffer: too small, or gone: the connection ends */
        r->status = nd_status_shown(st);
    }
    return ND_XLATE_OK;
}

/* A flush entry we wrote ourselves for a receive. */
static enum nd_xlate flush_translate(void *ctx, const struct nd_cqe *e, nd_result *r)
{
    struct nd_qp *qp = ctx;
    uint32_t k = e->wr_index, exp = atomic_load(&qp->rq_expected);

    if ((int32_t)(k - exp) < 0)
        return ND_XLATE_SKIP;           /* the peer completed it after all */
    if (qp->icq == qp->rcq && !atomic_load_explicit(&qp->initiator_detached, memory_order_acquire) &&
        (int32_t)(atomic_load_explicit(&qp->iprod.hdr->cons, memory_order_acquire) - qp->fail_iq_mark) < 0)
        return ND_XLATE_DEFER;          /* a completion from before the failure goes first */
    if (k != exp) {
        /* Earlier receives belong to the inbound ring; if that ring is gone, flush them here. */
        if (!__atomic_load_n(&qp->inbound_dead, __ATOMIC_ACQUIRE))
            return ND_XLATE_DEFER;
        /* The entry stays in its ring: this receive's slot may go at once. */
        receive_result(qp, exp, -ECANCELED, 0, r);
        r->status = nd_status_shown(-ECANCELED);
        atomic_store_explicit(&qp->rq_expected, exp + 1, memory_order_release);
        return ND_XLATE_KEEP;
    }
    receive_result(qp, k, e->status, 0, r);
    r->status = nd_status_shown(e->status);
    return ND_XLATE_OK;
}

/*
 * A datagram the transport placed into receive k (UD): the QP never fails for one. A
 * datagram longer than the receive completes it with -EMSGSIZE, nothing placed; buffers
 * found unwritable, with -EFAULT (ND_CQE_LOC_PROT). data[0..1] holds the sender's port,
 * data[2] 1 for a datagram that came over IPv6 (ND_DGRAM_V6_BYTE).
 */
static enum nd_xlate dgram_translate(void *ctx, const struct nd_cqe *e, nd_result *r)
{
    struct nd_qp *qp = ctx;
    uint32_t k = e->wr_index, exp = atomic_load(&qp->rq_expected);
    const uint8_t allowed = ND_CQE_SOLICITED | ND_CQE_IMM | ND_CQE_LOC_PROT;
    struct nd_wc *x;
    uint16_t port;
    int st = e->status;

    if (k != exp)
        return (int32_t)(k - exp) < 0 && qp->failed ? ND_XLATE_SKIP : ND_XLATE_BAD;
    if ((int32_t)(k - __atomic_load_n(&qp->rq_posted, __ATOMIC_ACQUIRE)) >= 0 ||
        e->type != ND_REQUEST_TYPE_RECEIVE || (st != 0 && st != -EMSGSIZE) || (e->flags & ~allowed) ||
        (st == 0 && e->bytes > rq_slot(qp, k)->total))
        return ND_XLATE_BAD;
    if (e->flags & ND_CQE_LOC_PROT)
        st = -EFAULT;
    receive_result(qp, k, st, e->bytes, r);
    if (st != 0)
        r->status = nd_status_shown(st);
    if ((x = nd_cq_wc_of(qp->rcq, r))) {
        memcpy(&port, e->data, sizeof(port));
        x->imm = nd_cqe_imm(e);
        x->flags = ND_WC_DGRAM | (e->flags & ND_CQE_IMM ? ND_WC_IMM : 0) |
                   (e->flags & ND_CQE_LOC_PROT ? ND_WC_LOC_PROT : 0) | (e->data[2] ? ND_WC_DGRAM_V6 : 0);
        x->src_port = port;
    }
    return ND_XLATE_OK;
}

static void inbound_broken(void *ctx)
{
    struct nd_qp *qp = ctx;

    __atomic_store_n(&qp->inbound_dead, true, __ATOMIC_RELEASE);
    nd_qp_fail(qp, -EIO);
}

static bool qp_progress(void *ctx)
{
    struct nd_qp *qp = ctx;

    /* No lock here: this runs on every poll. The transport set has_progress after its
     * ops and connection were in place, and closing clears it before the rings detach
     * (which waits for any poll under way), so the connection outlives every call. */
    return __atomic_load_n(&qp->has_progress, __ATOMIC_ACQUIRE) && qp->tops->progress(qp);
}

void nd_qp_idle(struct nd_qp *qp)
{
    if (__atomic_load_n(&qp->has_progress, __ATOMIC_ACQUIRE) && qp->tops->idle)
        qp->tops->idle(qp);
}

static void qp_idle(void *ctx)
{
    nd_qp_idle(ctx);
}

/* The CQ overran (or failed): its queue pairs are unusable (ND). CQ lock held. */
static void qp_cq_failed(void *ctx, int status)
{
    nd_qp_fail(ctx, status);
}

static const struct nd_cq_src_ops initiator_ops = { .translate = initiator_translate, .retire = initiator_retire,
                                                    .progress = qp_progress, .idle = qp_idle,
                                                    .cq_failed = qp_cq_failed };
static const struct nd_cq_src_ops inbound_ops = { .translate = inbound_translate, .retire = receive_retire,
                                                  .broken = inbound_broken, .progress = qp_progress,
                                                  .idle = qp_idle, .cq_failed = qp_cq_failed };
/* When both queues share a CQ, the initiator ring's hook already moves the QP on every poll. */
static const struct nd_cq_src_ops inbound_ops_shared_cq = { .translate = inbound_translate,
                                                            .retire = receive_retire,
                                                            .broken = inbound_broken,
                                                            .cq_failed = qp_cq_failed };
static const struct nd_cq_src_ops flush_ops = { .translate = flush_translate, .retire = receive_retire };
static const struct nd_cq_src_ops dgram_ops = { .translate = dgram_translate, .retire = receive_retire,
                                                .broken = inbound_broken, .progress = qp_progress,
                                                .idle = qp_idle, .cq_failed = qp_cq_failed };
static const struct nd_cq_src_ops dgram_ops_shared_cq = { .translate = dgram_translate,
                                                          .retire = receive_retire,
                                                          .broken = inbound_broken,
                                                          .cq_failed = qp_cq_failed };

/* ---- completion and failure (QP lock held) ---- */

static inline __attribute__((always_inline)) void produce_flagged(struct nd_ring_producer *p, uint32_t k, int st,
                                                                   uint32_t bytes, uint8_t type, uint8_t flags)
{
    struct nd_cqe *slot = nd_ring_next(p);

    /* Our own rings hold as many entries as requests can be outstanding: never full. */
    if (!slot) {
        nd_log(ND_LOG_ERROR, ND_SUB_CORE, "local completion ring full (request %u)", k);
        return;
    }
    nd_cqe_set(slot, k, st, bytes, type, flags, 0, 0);
    nd_ring_commit(p, slot);
}

static void produce(struct nd_ring_producer *p, uint32_t k, int st, uint32_t bytes, uint8_t type)
{
    produce_flagged(p, k, st, bytes, type, 0);
}

static void flush_receives(struct nd_qp *qp);

/* The failure branch of nd_qp_complete_initiator: out of the way of its common path. */
static __attribute__((noinline)) void complete_initiator_failed(struct nd_qp *qp, uint32_t k, int st,
                                                                 uint32_t bytes)
{
    uint8_t flags = 0;

    if (st == ND_LOCAL_PROTECTION) {
        st = -EFAULT;
        flags = ND_CQE_LOC_PROT;
    }
    produce_flagged(&qp->iprod, k, st, bytes, qp->sq[k & (qp->iq_entries - 1)].type, flags);
    if (st != -ECANCELED)
        nd_qp_fail_locked(qp, st);
    if (qp->keep_receives && qp->failed) {
        /* A request failed on a QP whose peer is gone: now it is in error as verbs
         * knows it, and its receives (after this result) flush as a failure's do. */
        qp->keep_receives = false;
        qp->fail_iq_mark = qp->iprod.prod;
        flush_receives(qp);
    }
}

void nd_qp_complete_initiator(struct nd_qp *qp, uint32_t k, int st, uint32_t bytes)
{
    struct nd_sq_slot *slot = &qp->sq[k & (qp->iq_entries - 1)];

    if (ND_UNLIKELY(st != 0)) {
        complete_initiator_failed(qp, k, st, bytes);
    } else if (slot->silent) {
        __atomic_store_n(&slot->done, true, __ATOMIC_RELEASE);
        advance_reaped(qp);
    } else {
        produce(&qp->iprod, k, 0, bytes, slot->type);
    }
}

static void flush_receives(struct nd_qp *qp)
{
    if (qp->srq)
        return;     /* the SRQ's receives outlive any one queue pair */
    const struct nd_cqe *ents = (const struct nd_cqe *)(qp->region + qp->layout.ents);
    uint32_t peer_done = nd_ring_valid_end(ents, qp->rq_entries - 1,
                                           atomic_load_explicit(&qp->inbound_hdr->cons, memory_order_acquire));
    uint32_t from = qp->rq_flushed;

    /* Receives the peer already completed stay with the inbound ring. */
    if ((int32_t)(peer_done - from) > 0 && (int32_t)(peer_done - qp->rq_posted) <= 0)
        from = peer_done;
    for (uint32_t k = from; k != qp->rq_posted; k++)
        produce(&qp->lprod, k, -ECANCELED, 0, ND_REQUEST_TYPE_RECEIVE);
    qp->rq_flushed = qp->rq_posted;
}

/* The connection ended or never came (a flush, silence, a refusal), as against an error of
 * the QP's own requests or memory. */
static bool peer_gone(int status)
{
    switch (nd_wc_status_of(status, ND_REQUEST_TYPE_SEND, false)) {
    case ND_WCS_FLUSHED: case ND_WCS_RNR_RETRY: case ND_WCS_RETRY_EXC: case ND_WCS_GENERAL:
        return true;
    default:
        return false;
    }
}

void nd_qp_fail_locked(struct nd_qp *qp, int status)
{
    if (qp->failed)
        return;
    /* Stored atomically: nd_qp_connectable reads them without the lock. */
    __atomic_store_n(&qp->failed, true, __ATOMIC_RELEASE);
    __atomic_store_n(&qp->state, ND_QPS_ERR, __ATOMIC_RELEASE);
    qp->error = status;
    qp->fail_iq_mark = qp->iprod.prod;
    nd_log(ND_LOG_INFO, ND_SUB_CORE, "QP %p enters the error state: %s", (void *)qp, nd_err_name(status));
    if (qp->tops && qp->tops->shutdown)
        qp->tops->shutdown(qp, status);
    /* Only the peer's going (a disconnect, silence, a refusal) leaves the receives posted;
     * an error the connection itself met is the QP's error, and flushes them. */
    if (qp->keep_receives && !peer_gone(status))
        qp->keep_receives = false;
    if (!qp->keep_receives)
        flush_receives(qp);
}

void nd_qp_fail(struct nd_qp *qp, int status)
{
    nd_lock_acquire(&qp->lock);
    nd_qp_fail_locked(qp, status);
    nd_lock_release(&qp->lock);
}

/* Flush and Release: the error state, and every receive completes (kept ones too). */
static void fail_and_flush(struct nd_qp *qp)
{
    nd_lock_acquire(&qp->lock);
    nd_qp_fail_locked(qp, -ECANCELED);
    flush_receives(qp);
    nd_lock_release(&qp->lock);
}

/* Is there an edge from @from to @to (connected RC)? */
static bool state_edge(enum nd_qp_state from, enum nd_qp_state to)
{
    switch (to) {
    case ND_QPS_RESET:
    case ND_QPS_ERR:
        return true;
    case ND_QPS_INIT:
        return from == ND_QPS_RESET || from == ND_QPS_INIT;
    case ND_QPS_RTR:
        return from == ND_QPS_INIT;
    case ND_QPS_RTS:
        return from == ND_QPS_RTR || from == ND_QPS_RTS;
    default:
        return false;               /* SQD, SQE: nothing connected RC needs */
    }
}

int nd_qp_modify_state(nd_qp *qp, enum nd_qp_state to)
{
    int err = 0;

    nd_lock_acquire(&qp->lock);
    /* A datagram QP has its transport from creation; a connected one reaches INIT only before. */
    if (!state_edge(qp->state, to) || (to == ND_QPS_INIT && (qp->failed || (qp->tops && !qp->datagram)))) {
        err = -EINVAL;
    } else if (to == ND_QPS_ERR || (to == ND_QPS_RESET && qp->tops && !(qp->datagram && qp->state == ND_QPS_RESET))) {
        /* RESET of a live connection ends it as ERR does: its requests still complete.
         * Receives kept since the peer left go now, and any posted later flush at once. */
        nd_qp_fail_locked(qp, -ECANCELED);
        qp->keep_receives = false;
        flush_receives(qp);
    }
    if (!err)
        __atomic_store_n(&qp->state, to, __ATOMIC_RELEASE);     /* nd_qp_connectable reads it unlocked */
    /* A datagram QP takes receives from INIT on, as rxe's. */
    if (!err && qp->datagram)
        __atomic_store_n(&qp->recv_refused, to == ND_QPS_RESET ? -EINVAL : 0, __ATOMIC_RELAXED);
    nd_lock_release(&qp->lock);
    return err;
}

enum nd_qp_state nd_qp_get_state(nd_qp *qp)
{
    enum nd_qp_state s;

    nd_lock_acquire(&qp->lock);
    s = qp->state;
    nd_lock_release(&qp->lock);
    return s;
}

/* Without the QP lock: the CM calls this under its connector's lock, and the CM's own
 * state (one connection per QP) is what serialises connecting. */
bool nd_qp_connectable(struct nd_qp *qp)
{
    return !__atomic_load_n(&qp->failed, __ATOMIC_ACQUIRE) && !__atomic_load_n(&qp->tops, __ATOMIC_ACQUIRE) &&
           __atomic_load_n(&qp->state, __ATOMIC_ACQUIRE) != ND_QPS_RESET;
}

void nd_qp_keep_receives(struct nd_qp *qp)
{
    nd_lock_acquire(&qp->lock);
    qp->keep_receives = true;
    nd_lock_release(&qp->lock);
}

void nd_qp_check_receives_late(struct nd_qp *qp)
{
    nd_lock_acquire(&qp->lock);
    qp->recv_check_late = true;
    nd_lock_release(&qp->lock);
}

bool nd_qp_peer_left_quietly(struct nd_qp *qp)
{
    bool quiet;

    nd_lock_acquire(&qp->lock);
    quiet = qp->failed && qp->keep_receives;
    nd_lock_release(&qp->lock);
    return quiet;
}

/* Entries the peer wrote (shm) or the wire placed (iwarp) in the inbound ring are ours once
 * written; the consumer index the CQ publishes says which it has taken. */
bool nd_qp_inbound_pending(struct nd_qp *qp)
{
    if (!qp->inbound_hdr)
        return false;
    return nd_cqe_valid((const struct nd_cqe *)(qp->region + qp->layout.ents), qp->rq_entries - 1,
                        atomic_load_explicit(&qp->inbound_hdr->cons, memory_order_acquire));
}

void nd_qp_set_pd(nd_qp *qp, uint16_t pd)
{
    nd_lock_acquire(&qp->lock);
    qp->pd = pd;
    qp->reg_memo = (struct nd_mtab_memo){ .pd = pd };
    nd_lock_release(&qp->lock);
    qp->scatter_memo = (struct nd_mtab_memo){ .pd = pd };   /* before any receive completes */
}

uint16_t nd_qp_recv_pd(const struct nd_qp *qp)
{
    return qp->srq ? nd_srq_pd(qp->srq) : qp->pd;
}

void nd_qp_peer_left(struct nd_qp *qp)
{
    if (atomic_exchange(&qp->peer_left, true))
        return;
    if (qp->cm_kick.port)
        nd_port_kick(&qp->cm_kick);
}

void nd_qp_link_cm(struct nd_qp *qp, int sock, const struct nd_port_kick *k)
{
    nd_lock_acquire(&qp->lock);
    qp->cm_sock = sock;
    qp->cm_kick = k ? *k : (struct nd_port_kick){ 0 };
    if (k && atomic_load(&qp->peer_left))
        nd_port_kick(k);            /* it left before anyone was listening */
    nd_lock_release(&qp->lock);
}

void nd_qp_set_rnr_wait(nd_qp *qp, uint64_t ns)
{
    __atomic_store_n(&qp->rnr_wait_ns, ns, __ATOMIC_RELAXED);
}

bool nd_qp_set_connected(struct nd_qp *qp, struct nd_conn *conn)
{
    nd_lock_acquire(&qp->lock);
    if (!nd_qp_valid(qp)) {
        nd_lock_release(&qp->lock);
        return false;
    }
    /* Published: Deregister's barrier reads them without the lock (mem_barrier.c). */
    __atomic_store_n(&qp->conn, conn, __ATOMIC_RELEASE);
    __atomic_store_n(&qp->tops, conn->ops, __ATOMIC_RELEASE);
    /* ND's flow has no steps of its own: the connection takes it to RTS. A verbs QP moves
     * there by modify, before or after its connection is up. */
    if (qp->state == ND_QPS_INIT && !qp->failed)
        __atomic_store_n(&qp->state, ND_QPS_RTS, __ATOMIC_RELEASE);
    nd_lock_release(&qp->lock);
    return true;
}

/* ---- creation ---- */

static int region_create(struct nd_qp *qp)
{
    qp->slot_size = nd_qp_slot_size(qp->rq_entries);
    nd_qp_layout(qp->rq_entries, qp->rq_sge ? qp->rq_sge : 1, qp->slot_size, &qp->layout);
    if (nd_area_get(qp->adapter, qp->layout.size, qp->layout.slots, &qp->area) != 0)
        return -ENOBUFS;
    qp->region = qp->area.map;
    nd_qp_region_populate(qp->region, &qp->layout, qp->slot_size);
    qp->ctl = (struct nd_qp_ctl *)qp->region;
    qp->ctl->magic = ND_QP_REGION_MAGIC;
    qp->ctl->version = ND_QP_REGION_VERSION;
    qp->ctl->rq_entries = qp->rq_entries;
    qp->ctl->max_sge = qp->rq_sge ? qp->rq_sge : 1;
    qp->ctl->slot_size = qp->slot_size;
    qp->inbound_hdr = (struct nd_ring_hdr *)(qp->region + qp->layout.ring);
    return 0;
}

static void *ring_alloc(uint32_t entries)
{
    void *m = aligned_alloc(ND_CACHELINE, (nd_ring_bytes(entries) + ND_CACHELINE - 1) & ~(size_t)(ND_CACHELINE - 1));

    if (m)
        memset(m, 0, nd_ring_bytes(entries));
    return m;
}

static int qp_alloc(struct nd_qp *qp)
{
    qp->sq = calloc(qp->iq_entries, sizeof(*qp->sq));
    qp->rq = calloc(qp->rq_entries, sizeof(*qp->rq));
    qp->rq_sges = calloc((size_t)qp->rq_entries * (qp->rq_sge ? qp->rq_sge : 1), sizeof(nd_sge));
    qp->iring_mem = ring_alloc(qp->iq_entries);
    qp->lring_mem = ring_alloc(qp->rq_entries);
    if (!qp->sq || !qp->rq || !qp->rq_sges || !qp->iring_mem || !qp->lring_mem)
        return -ENOMEM;
    for (uint32_t i = 0; i < qp->rq_entries; i++)
        qp->rq[i].sge = &qp->rq_sges[(size_t)i * (qp->rq_sge ? qp->rq_sge : 1)];
    return region_create(qp);
}

static void qp_free(struct nd_qp *qp)
{
    nd_area_put(qp->adapter, &qp->area, qp->region_shared, qp->region_peer);
    free(qp->sq);
    free(qp->rq);
    free(qp->rq_sges);
    free(qp->iring_mem);
    free(qp->lring_mem);
    free(qp);
}

static int qp_attach(struct nd_qp *qp)
{
    struct nd_ring_hdr *ih = qp->iring_mem, *lh = qp->lring_mem;
    struct nd_cqe *ie = (struct nd_cqe *)(ih + 1), *le = (struct nd_cqe *)(lh + 1);
    struct nd_cqe *re = (struct nd_cqe *)(qp->region + qp->layout.ents);
    const struct nd_cq_src_ops *in = qp->datagram ? &dgram_ops : &inbound_ops;
    const struct nd_cq_src_ops *in_shared = qp->datagram ? &dgram_ops_shared_cq : &inbound_ops_shared_cq;
    int st;

    st = nd_cq_attach(qp->icq, ih, ie, qp->iq_entries, &initiator_ops, qp, &qp->isrc);
    if (st == 0)
        st = nd_cq_attach(qp->rcq, qp->inbound_hdr, re, qp->rq_entries, qp->rcq == qp->icq ? in_shared : in, qp,
                          &qp->rsrc);
    if (st == 0)
        st = nd_cq_attach(qp->rcq, lh, le, qp->rq_entries, &flush_ops, qp, &qp->lsrc);
    if (st != 0) {
        if (qp->isrc)
            nd_cq_detach(qp->icq, qp->isrc);
        if (qp->rsrc)
            nd_cq_detach(qp->rcq, qp->rsrc);
        return st;
    }
    nd_cq_local_producer(qp->icq, ih, ie, qp->iq_entries, &qp->iprod);
    nd_cq_local_producer(qp->rcq, lh, le, qp->rq_entries, &qp->lprod);
    return 0;
}

enum nd_qp_limit nd_qp_limit_exceeded(const struct nd_qp_sizes *s, bool srq)
{
    const struct nd_caps *l = &nd_caps;

    if (!srq && (s->rq_depth == 0 || s->rq_depth > l->max_recv_wr))
        return ND_QPL_RQ_DEPTH;
    if (s->iq_depth == 0 || s->iq_depth > l->max_send_wr)
        return ND_QPL_IQ_DEPTH;
    if (s->iq_sge > l->max_send_sge)
        return ND_QPL_IQ_SGE;
    if (s->inline_size > l->max_inline)
        return ND_QPL_INLINE;
    if (!srq && s->rq_sge > l->max_recv_sge)
        return ND_QPL_RQ_SGE;
    return ND_QPL_OK;
}

int nd_qp_create(struct nd_adapter *a, struct nd_cq *rcq, struct nd_cq *icq, nd_srq *srq, void *context,
                       const struct nd_qp_sizes *sizes, enum nd_qp_state initial, struct nd_qp **out)
{
    return nd_qp_create_kind(a, rcq, icq, srq, context, sizes, initial, false, out);
}

int nd_qp_create_kind(struct nd_adapter *a, struct nd_cq *rcq, struct nd_cq *icq, nd_srq *srq, void *context,
                      const struct nd_qp_sizes *sizes, enum nd_qp_state initial, bool datagram, struct nd_qp **out)
{
    /* With an SRQ the inbound ring holds one entry per receive the SRQ can have out. */
    uint32_t rq_depth = srq ? nd_srq_entries(srq) : sizes->rq_depth, rq_sge = srq ? 1 : sizes->rq_sge;
    uint32_t iq_depth = sizes->iq_depth, iq_sge = sizes->iq_sge, inline_size = sizes->inline_size;
    struct nd_qp *qp = calloc(1, sizeof(*qp));
    int st;

    if (!qp)
        return -ENOMEM;
    qp->adapter = a;
    qp->context = context;
    qp->rcq = rcq;
    qp->icq = icq;
    qp->srq = srq;
    qp->rq_depth = rq_depth;
    qp->iq_depth = iq_depth;
    qp->rq_sge = rq_sge;
    qp->iq_sge = iq_sge;
    qp->inline_size = inline_size;
    qp->rnr_wait_ns = ND_RNR_WAIT_NS;
    qp->rq_entries = pow2_at_least(rq_depth);
    qp->iq_entries = pow2_at_least(iq_depth);
    qp->cm_sock = -1;
    qp->state = initial;
    qp->datagram = datagram;
    qp->recv_refused = srq ? -EBADRQC : datagram && initial == ND_QPS_RESET ? -EINVAL : 0;
    st = qp_alloc(qp);
    if (st == 0)
        st = qp_attach(qp);
    if (st != 0) {
        qp_free(qp);
        return st;
    }
    nd_lock_init(&qp->lock);
    atomic_init(&qp->refs, 1);
    nd_mem_user_add(a, &qp->mem_user, &qp->lock, qp);
    atomic_fetch_add(&rcq->users, 1);
    atomic_fetch_add(&icq->users, 1);
    if (srq)
        nd_srq_attach_qp(srq, 1);
    nd_adapter_ref(a);
    qp->magic = ND_MAGIC_QP;
    *out = qp;
    return 0;
}

void nd_qp_ref(struct nd_qp *qp)
{
    atomic_fetch_add(&qp->refs, 1);
}

void nd_qp_unref(struct nd_qp *qp)
{
    if (atomic_fetch_sub(&qp->refs, 1) != 1)
        return;
    struct nd_adapter *a = qp->adapter;

    nd_lock_destroy(&qp->lock);
    qp_free(qp);                    /* its region goes back to the adapter's arena first */
    nd_adapter_unref(a);
}

/* Release: an implicit flush and disconnect; a connector may still hold the memory. */
ND_DOOR int ndc_qp_close(nd_qp *qp)
{
    if (!nd_qp_valid(qp))
        return -EBADF;
    fail_and_flush(qp);
    nd_lock_acquire(&qp->lock);
    qp->magic = ND_MAGIC_DEAD;
    __atomic_store_n(&qp->has_progress, false, __ATOMIC_RELEASE);
    nd_lock_release(&qp->lock);
    /* Each ring's flushes go to its CQ as the ring detaches (nd_cq_detach): the inbound
     * ring's first, then the flush ring's, which no longer waits for the inbound ring. */
    nd_cq_detach(qp->icq, qp->isrc);
    atomic_store_explicit(&qp->initiator_detached, true, memory_order_release);
    nd_cq_detach(qp->rcq, qp->rsrc);
    __atomic_store_n(&qp->inbound_dead, true, __ATOMIC_RELEASE);
    nd_cq_detach(qp->rcq, qp->lsrc);
    /* Nothing of ours touches registered memory through this queue pair any more (its
     * posts are refused, its rings are gone); once its peer is out too, Deregister need
     * not wait for it. */
    if (qp->tops && qp->tops->peer_quiesce)
        qp->tops->peer_quiesce(qp);
    nd_mem_user_remove(qp->adapter, &qp->mem_user);
    nd_lock_acquire(&qp->lock);
    /* A transport still setting the connection up finishes first: it may be using it. */
    while (qp->attaching) {
        nd_lock_release(&qp->lock);
        sched_yield();
        nd_lock_acquire(&qp->lock);
    }
    if (qp->tops && qp->tops->destroy)
        qp->tops->destroy(qp);
    __atomic_store_n(&qp->tops, NULL, __ATOMIC_RELEASE);
    nd_lock_release(&qp->lock);
    atomic_fetch_sub(&qp->rcq->users, 1);
    atomic_fetch_sub(&qp->icq->users, 1);
    if (qp->srq)
        nd_srq_attach_qp(qp->srq, -1);
    nd_qp_unref(qp);
    return 0;
}

ND_DOOR int ndc_qp_flush(nd_qp *qp)
{
    if (!nd_qp_valid(qp))
        return -EBADF;
    fail_and_flush(qp);
    return 0;
}
