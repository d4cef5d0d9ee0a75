// SPDX-License-Identifier: MIT
/* Queue-pair data-path posts: argument checks, queue accounting, then the transport. */
#include "qp_int.h"
#include "transport.h"

#include <string.h>

#define SEND_FLAGS (ND_OP_FLAG_SILENT_SUCCESS | ND_OP_FLAG_READ_FENCE | \
                    ND_OP_FLAG_SEND_AND_SOLICIT_EVENT | ND_OP_FLAG_INLINE)
#define WRITE_FLAGS (ND_OP_FLAG_SILENT_SUCCESS | ND_OP_FLAG_READ_FENCE | ND_OP_FLAG_INLINE)
#define READ_FLAGS (ND_OP_FLAG_SILENT_SUCCESS | ND_OP_FLAG_READ_FENCE)
#define BIND_FLAGS (ND_OP_FLAG_SILENT_SUCCESS | ND_OP_FLAG_READ_FENCE | ND_OP_FLAG_ALLOW_READ | \
                    ND_OP_FLAG_ALLOW_WRITE)

/*
 * The fields every initiator request reads. The rest are set by the posts that use them
 * (Read and Write: remote_addr, remote_token; check_transfer: total; sq_reserve: index;
 * tagged Sends: imm) and read only by those; Bind and Invalidate build their own. A
 * zero-initialised struct nd_wr (96 bytes) would compile to `rep stos` with GCC's generic
 * tuning, whose start-up costs more than the whole post.
 */
static inline void wr_init(struct nd_wr *wr, uint8_t type, uint32_t flags, const nd_sge *sge, uint32_t nsge)
{
    wr->type = type;
    wr->flags = flags;
    wr->sge = sge;
    wr->nsge = nsge;
}

static uint64_t sge_total(const nd_sge *sge, uint32_t nsge)
{
    uint64_t t = 0;

    for (uint32_t i = 0; i < nsge; i++)
        t += sge[i].buffer_length;
    return t;
}

/* Do the SGEs lie in registered memory of this adapter with @need rights? QP lock held. */
static bool sges_registered(struct nd_qp *qp, const nd_sge *sge, uint32_t nsge, uint32_t need)
{
    return nd_sges_registered(qp->adapter, &qp->reg_memo, sge, nsge, need);
}

/* Reserve the next initiator slot (QP lock held). */
static int sq_reserve(struct nd_qp *qp, void *ctx, uint8_t type, uint32_t flags, uint32_t *index)
{
    uint32_t k = qp->sq_posted;
    struct nd_sq_slot *slot;

    if (k - atomic_load_explicit(&qp->sq_reaped, memory_order_acquire) >= qp->iq_depth)
        return -ENOSPC;
    slot = &qp->sq[k & (qp->iq_entries - 1)];
    slot->ctx = ctx;
    slot->type = type;
    slot->silent = flags & ND_OP_FLAG_SILENT_SUCCESS;
    __atomic_store_n(&slot->done, false, __ATOMIC_RELAXED);
    __atomic_store_n(&qp->sq_posted, k + 1, __ATOMIC_RELEASE);
    *index = k;
    return 0;
}

/* Not in RTS with a connection: a failed QP completes each request with a flush, as verbs
 * wants (ND: -ECANCELED); before its connection nothing can carry one. */
static __attribute__((noinline)) int post_not_ready(struct nd_qp *qp, struct nd_wr *wr, void *ctx, uint8_t type)
{
    int st;

    if (!qp->failed)
        return -ENOTCONN;
    st = sq_reserve(qp, ctx, type, wr->flags, &wr->index);
    if (st == 0)
        nd_qp_complete_initiator(qp, wr->index, -ECANCELED, 0);
    return st;
}

int nd_qp_post_refused(nd_qp *qp, void *ctx, nd_request_type type, uint32_t flags, int why)
{
    uint32_t index;
    int st;

    if (!nd_qp_valid(qp))
        return -EBADF;
    nd_lock_acquire(&qp->lock);
    /* The QP fails first: what was posted before completes (flushed) ahead of this one,
     * in the send queue's order. */
    if (!qp->failed)
        nd_qp_fail_locked(qp, why);
    st = sq_reserve(qp, ctx, (uint8_t)type, flags, &index);
    if (st == 0)
        nd_qp_complete_initiator(qp, index, why, 0);
    nd_lock_release(&qp->lock);
    return st;
}

/* The type @wr's completion reports: @as, or for 0 its own (an atomic goes to the
 * transport as a Read: wr->atomic). Read where it is used, after the lock, so that a
 * constant 0 leaves the post as it was. */
static inline uint8_t reported_type(const struct nd_wr *wr, uint8_t as)
{
    return as ? as : wr->type;
}

/* Post @wr, its completion reported as reported_type says. */
static inline __attribute__((always_inline)) int post_initiator_as(struct nd_qp *qp, struct nd_wr *wr, void *ctx,
                                                                   uint8_t as)
{
    int st;

    nd_lock_acquire(&qp->lock);
    /* RTS is never entered once failed: the state alone says the QP is sound. */
    if (ND_UNLIKELY(qp->state != ND_QPS_RTS || !qp->tops)) {
        st = post_not_ready(qp, wr, ctx, reported_type(wr, as));
    } else {
        st = sq_reserve(qp, ctx, reported_type(wr, as), wr->flags, &wr->index);
        if (st == -ENOSPC && qp->tops->queue_full) {
            qp->tops->queue_full(qp);
            st = qp->failed ? post_not_ready(qp, wr, ctx, reported_type(wr, as))
                            : sq_reserve(qp, ctx, reported_type(wr, as), wr->flags, &wr->index);
            if (st == 0 && !qp->failed)
                qp->tops->post(qp, wr);
        } else if (st == 0) {
            qp->tops->post(qp, wr);
        }
    }
    nd_lock_release(&qp->lock);
    return st;
}

static int post_initiator(struct nd_qp *qp, struct nd_wr *wr, void *ctx)
{
    return post_initiator_as(qp, wr, ctx, 0);
}

static int check_transfer(struct nd_qp *qp, const nd_sge *sge, uint32_t nsge, uint32_t flags,
                                uint32_t max_sge, uint64_t *total)
{
    /* The SGE is ND's second parameter (after the request context). */
    if (nsge && !sge)
        return ND_EARG(2);
    /* The count first: nothing past the limit is ever read of the caller's array. Inline
     * data is copied at the post, so its SGEs count against the adapter's limit only. */
    if (nsge > ((flags & ND_OP_FLAG_INLINE) ? nd_caps.max_send_sge : max_sge))
        return -EMSGSIZE;
    *total = sge_total(sge, nsge);
    if (*total > nd_caps.max_msg_size)
        return -EOVERFLOW;
    if (flags & ND_OP_FLAG_INLINE)
        return *total > qp->inline_size ? -EOVERFLOW : 0;
    return 0;
}


static int post_rdma(nd_qp *qp, uint8_t type, void *ctx, const nd_sge *sge, uint32_t nsge,
                           uint64_t raddr, uint32_t rtoken, uint32_t flags, uint32_t allowed, uint32_t imm)
{
    struct nd_wr wr;
    int st;

    wr_init(&wr, type, flags, sge, nsge);
    wr.imm = imm;
    wr.remote_addr = raddr;
    wr.remote_token = rtoken;
    wr.atomic = 0;                  /* a plain Read (nd_qp_atomic's are Reads too) */
    if (!nd_qp_valid(qp))
        return -EBADF;
    uint32_t max_sge = type == ND_REQUEST_TYPE_READ ? nd_caps.max_read_sge : qp->iq_sge;
    if (flags & ~allowed)
        return ND_EARG(6);
    if (max_sge > qp->iq_sge)
        max_sge = qp->iq_sge;
    st = check_transfer(qp, sge, nsge, flags & ~ND_WR_IMM, max_sge, &wr.total);
    return st == 0 ? post_initiator(qp, &wr, ctx) : st;
}

ND_DOOR int ndc_qp_read(nd_qp *qp, void *ctx, const nd_sge *sge, uint32_t nsge, uint64_t raddr,
                        uint32_t rtoken, uint32_t flags)
{
    return post_rdma(qp, ND_REQUEST_TYPE_READ, ctx, sge, nsge, raddr, rtoken, flags, READ_FLAGS, 0);
}

ND_DOOR int ndc_qp_write(nd_qp *qp, void *ctx, const nd_sge *sge, uint32_t nsge, uint64_t raddr,
                         uint32_t rtoken, uint32_t flags)
{
    return post_rdma(qp, ND_REQUEST_TYPE_WRITE, ctx, sge, nsge, raddr, rtoken, flags, WRITE_FLAGS, 0);
}

/* Can the connection carry immediate data? Checked before the post, off ND's path: a QP
 * not connected yet fails in post_initiator as any post does. */
static bool imm_refused(struct nd_qp *qp)
{
    const struct nd_transport_ops *t = __atomic_load_n(&qp->tops, __ATOMIC_ACQUIRE);

    return t && !(t->carries_imm && t->carries_imm(qp));
}

void nd_qp_set_remote_atomic(nd_qp *qp, bool on)
{
    atomic_store_explicit(&qp->ctl->no_remote_atomic, !on, memory_order_relaxed);
}

static bool atomic_refused(struct nd_qp *qp)
{
    const struct nd_transport_ops *t = __atomic_load_n(&qp->tops, __ATOMIC_ACQUIRE);

    return t && !(t->carries_atomic && t->carries_atomic(qp));
}

int nd_qp_atomic(nd_qp *qp, void *ctx, const nd_sge *sge, uint32_t nsge, uint64_t raddr, uint32_t rtoken,
                 uint32_t flags, uint8_t type, uint64_t add_or_cmp, uint64_t swap)
{
    struct nd_wr wr;
    int st;

    wr_init(&wr, ND_REQUEST_TYPE_READ, flags, sge, nsge);
    wr.remote_addr = raddr;
    wr.remote_token = rtoken;
    wr.atomic = type;
    wr.add_or_cmp = add_or_cmp;
    wr.swap = swap;
    if (!nd_qp_valid(qp))
        return -EBADF;
    /* One buffer of 8 bytes, as verbs providers take it: the old value is one sink. */
    if (!nd_type_is_atomic(type) || (flags & ~READ_FLAGS) || (raddr & 7) || nsge != 1)
        return -EINVAL;
    if (atomic_refused(qp))
        return -EOPNOTSUPP;
    st = check_transfer(qp, sge, nsge, flags, qp->iq_sge, &wr.total);
    if (st == 0 && wr.total != sizeof(uint64_t))
        st = -EINVAL;
    return st == 0 ? post_initiator_as(qp, &wr, ctx, type) : st;
}

/* A Send, or with @kind a verbs Send carrying @value (ND_WR_IMM, ND_WR_INV). Inlined: for
 * ND's Send @kind is a constant 0 and the verbs parts fold away. */
static inline __attribute__((always_inline)) int
post_send_tagged(nd_qp *qp, void *ctx, const nd_sge *sge, uint32_t nsge, uint32_t flags, uint32_t kind, uint32_t value)
{
    struct nd_wr wr;
    int st;

    wr_init(&wr, ND_REQUEST_TYPE_SEND, flags | kind, sge, nsge);
    if (kind)
        wr.imm = value;
    if (!nd_qp_valid(qp))
        return -EBADF;
    if (flags & ~SEND_FLAGS)
        return ND_EARG(4);
    if (kind == ND_WR_IMM && imm_refused(qp))
        return -EOPNOTSUPP;
    st = check_transfer(qp, sge, nsge, flags, qp->iq_sge, &wr.total);
    return st == 0 ? post_initiator(qp, &wr, ctx) : st;
}

ND_DOOR int ndc_qp_send(nd_qp *qp, void *ctx, const nd_sge *sge, uint32_t nsge, uint32_t flags)
{
    return post_send_tagged(qp, ctx, sge, nsge, flags, 0, 0);
}

int nd_qp_write_imm(nd_qp *qp, void *ctx, const nd_sge *sge, uint32_t nsge, uint64_t raddr,
                          uint32_t rtoken, uint32_t flags, uint32_t imm)
{
    if (nd_qp_valid(qp) && imm_refused(qp))
        return -EOPNOTSUPP;
    return post_rdma(qp, ND_REQUEST_TYPE_WRITE, ctx, sge, nsge, raddr, rtoken, flags | ND_WR_IMM,
                     WRITE_FLAGS | ND_OP_FLAG_SEND_AND_SOLICIT_EVENT | ND_WR_IMM, imm);
}

int nd_qp_send_imm(nd_qp *qp, void *ctx, const nd_sge *sge, uint32_t nsge, uint32_t flags, uint32_t imm)
{
    return post_send_tagged(qp, ctx, sge, nsge, flags, ND_WR_IMM, imm);
}

int nd_qp_send_datagram(nd_qp *qp, void *ctx, const nd_sge *sge, uint32_t nsge, uint32_t flags, uint32_t kind,
                        uint32_t imm, const struct nd_dgram_dest *dest)
{
    struct nd_wr wr;
    int st;

    wr_init(&wr, ND_REQUEST_TYPE_SEND, flags | kind, sge, nsge);
    wr.imm = imm;
    wr.dgram = dest;
    if (!nd_qp_valid(qp))
        return -EBADF;
    if (!qp->datagram || !dest || !dest->addr || (kind & ~ND_WR_IMM))
        return -EINVAL;
    if (flags & ~SEND_FLAGS)
        return ND_EARG(4);
    st = check_transfer(qp, sge, nsge, flags, qp->iq_sge, &wr.total);
    if (st == 0 && wr.total > qp->dgram_max)
        st = -EMSGSIZE;
    return st == 0 ? post_initiator(qp, &wr, ctx) : st;
}

/* RFC 5040's own operation: every peer takes it, siw too. */
int nd_qp_send_inv(nd_qp *qp, void *ctx, const nd_sge *sge, uint32_t nsge, uint32_t flags, uint32_t stag)
{
    return post_send_tagged(qp, ctx, sge, nsge, flags, ND_WR_INV, stag);
}

/* The core checks local SGEs for the transport: a bad one fails the request, not the post. */
bool nd_qp_local_sges_ok(struct nd_qp *qp, const struct nd_wr *wr)
{
    uint32_t need = wr->type == ND_REQUEST_TYPE_READ ? ND_ACCESS_LOCAL_WRITE : 0;

    return (wr->flags & ND_OP_FLAG_INLINE) || sges_registered(qp, wr->sge, wr->nsge, need);
}

/* Out of line, so that the receive path tests the word without keeping it. */
static __attribute__((noinline, cold)) int recv_refusal(const struct nd_qp *qp)
{
    return __atomic_load_n(&qp->recv_refused, __ATOMIC_RELAXED);
}

ND_DOOR int ndc_qp_receive(nd_qp *qp, void *ctx, const nd_sge *sge, uint32_t nsge)
{
    struct nd_rq_slot *slot;
    struct nd_rwqe *w;
    uint64_t total;
    uint32_t k;
    int st;

    if (!nd_qp_valid(qp))
        return -EBADF;
    if (ND_UNLIKELY(__atomic_load_n(&qp->recv_refused, __ATOMIC_RELAXED) != 0))
        return recv_refusal(qp);        /* the SRQ's receives; a datagram QP in RESET */
    if (nsge && !sge)
        return ND_EARG(2);
    if (nsge > qp->rq_sge)
        return -EMSGSIZE;
    total = sge_total(sge, nsge);
    if (total > nd_caps.max_msg_size)
        return -EOVERFLOW;
    nd_lock_acquire(&qp->lock);
    if (!sges_registered(qp, sge, nsge, ND_ACCESS_LOCAL_WRITE))
        goto keys_failed;
keys_judged_later:
    k = qp->rq_posted;
    if (k - atomic_load_explicit(&qp->rq_expected, memory_order_acquire) >= qp->rq_depth) {
        st = -ENOSPC;
        goto refused;
    }
    slot = &qp->rq[k & (qp->rq_entries - 1)];
    slot->ctx = ctx;
    slot->nsge = nsge;
    slot->total = (uint32_t)total;
    if (nsge)
        memcpy(slot->sge, sge, nsge * sizeof(*sge));
    w = (struct nd_rwqe *)(qp->region + qp->layout.rwqe + (size_t)(k & (qp->rq_entries - 1)) * qp->layout.rwqe_stride);
    w->nsge = nsge;
    w->total = (uint32_t)total;
    for (uint32_t i = 0; i < nsge; i++)
        w->sge[i] = (struct nd_rwqe_sge){ (uintptr_t)sge[i].buffer, sge[i].buffer_length,
                                          sge[i].memory_region_token };
    __atomic_store_n(&qp->rq_posted, k + 1, __ATOMIC_RELEASE);
    atomic_store_explicit(&qp->ctl->rq_prod, k + 1, memory_order_release);
    if (qp->failed) {
        struct nd_cqe e = { .wr_index = k, .status = -ECANCELED, .type = ND_REQUEST_TYPE_RECEIVE };

        if (!qp->keep_receives) {
            nd_ring_produce(&qp->lprod, &e);
            qp->rq_flushed = k + 1;
        }
    } else if (qp->tops && qp->tops->recv_posted) {
        qp->tops->recv_posted(qp);
    }
    nd_lock_release(&qp->lock);
    return 0;           /* a constant: a front end's mapping of the status folds away */
keys_failed:
    /* Refused, unless the QP checks them when a message comes (recv_check_late): then its
     * control block says a same-host sender must look at each receive first. */
    st = -EFAULT;
    if (qp->recv_check_late) {
        atomic_fetch_or(&qp->ctl->state, ND_WIRE_CHECK_RECV);
        goto keys_judged_later;
    }
refused:
    nd_lock_release(&qp->lock);
    return st;
}

int nd_qp_local_op(struct nd_qp *qp, const struct nd_wr *wr)
{
    if (wr->type == ND_REQUEST_TYPE_BIND)
        return nd_mw_bind_to(wr->mw, wr->mr, wr->bind_buf, wr->bind_len, wr->access, wr->bind_key, wr->bind_replace);
    return nd_mw_invalidate(wr->mw);
}

int nd_qp_bind_keyed(nd_qp *qp, void *ctx, nd_mr *mr, nd_mw *mw, const void *buf, size_t len,
                           uint32_t flags, uint16_t key, bool replace)
{
    struct nd_wr wr = { .type = ND_REQUEST_TYPE_BIND, .flags = flags, .mr = mr, .mw = mw,
                        .bind_buf = buf, .bind_len = len, .bind_key = key, .bind_replace = replace };

    if (!nd_qp_valid(qp))
        return -EBADF;
    if (!nd_mr_of(mr, qp->adapter))
        return ND_EARG(2);
    if (!nd_mw_of(mw, qp->adapter))
        return ND_EARG(3);
    wr.access = (flags & ND_OP_FLAG_ALLOW_READ ? ND_ACCESS_REMOTE_READ : 0) |
                (flags & ND_OP_FLAG_ALLOW_WRITE ? ND_ACCESS_REMOTE_WRITE : 0);
    /* No rights at all is allowed (the ND SDK's ndmrderregister binds so): the window
     * then admits no remote access. */
    if (flags & ~BIND_FLAGS)
        return ND_EARG(6);
    /* Rights and range are known now: refuse the post rather than break the connection. */
    if (nd_mw_bind_check(mr, buf, len, wr.access) != 0)
        return -EFAULT;
    return post_initiator(qp, &wr, ctx);
}

ND_DOOR int ndc_qp_bind(nd_qp *qp, void *ctx, nd_mr *mr, nd_mw *mw, const void *buf, size_t len,
                        uint32_t flags)
{
    return nd_qp_bind_keyed(qp, ctx, mr, mw, buf, len, flags, ND_KEY_NEXT, false);
}

ND_DOOR int ndc_qp_invalidate(nd_qp *qp, void *ctx, nd_mw *mw, uint32_t flags)
{
    struct nd_wr wr = { .type = ND_REQUEST_TYPE_INVALIDATE, .flags = flags, .mw = mw };

    if (!nd_qp_valid(qp))
        return -EBADF;
    if (!nd_mw_of(mw, qp->adapter))
        return ND_EARG(2);
    if (flags & ~(ND_OP_FLAG_SILENT_SUCCESS | ND_OP_FLAG_READ_FENCE))
        return ND_EARG(3);
    return post_initiator(qp, &wr, ctx);
}
