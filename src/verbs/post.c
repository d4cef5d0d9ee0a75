// SPDX-License-Identifier: MIT
/*
 * Posting on a QP, what qp.c, av.c (QPs connected by address vector, whose held requests
 * go out here once the connection is up) and mw.c (ibv_bind_mw) build on: send and receive
 * requests checked and handed to the core now, memory-window binds and local invalidates,
 * and the QP state helpers they share. Nothing here holds a request: that is av.c's, above.
 */
#include "post.h"
#include "ndv.h"
#include "core/log.h"
#include "core/mem_int.h"
#include "core/qp_int.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define VB_LOCAL_OP_FLAGS (ND_OP_FLAG_SILENT_SUCCESS | ND_OP_FLAG_READ_FENCE)

void vb_qp_enter_err(struct vb_qp *q)
{
    nd_qp_modify_state(q->core, ND_QPS_ERR);
    __atomic_store_n(&q->qp.state, IBV_QPS_ERR, __ATOMIC_RELEASE);
}

/* What vb_post_send_now would refuse at the post itself, without posting: a held request
 * (av.c) is checked so when it is posted, not when its connection comes up. */
int vb_send_wr_check(struct vb_qp *q, const struct ibv_send_wr *wr)
{
    if (vb_send_flags_of(q, wr->send_flags) < 0 || wr->num_sge < 0 || (uint32_t)wr->num_sge > q->cap.max_send_sge)
        return EINVAL;
    switch (wr->opcode) {
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM:
    case IBV_WR_SEND_WITH_INV:
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
    case IBV_WR_RDMA_READ:
    case IBV_WR_LOCAL_INV:
        return 0;
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
    case IBV_WR_ATOMIC_CMP_AND_SWP:
        /* 8 aligned bytes into a buffer of 8 (the core checks it again at its post). */
        return (wr->wr.atomic.remote_addr & 7) || wr->num_sge != 1 || wr->sg_list[0].length != 8 ? EINVAL : 0;
    case IBV_WR_BIND_MW:
        return vb_bind_wr_check(&q->qp, wr);
    default:
        return EINVAL;
    }
}

/* The core's request type of a verbs opcode vb_send_wr_check passed. */
nd_request_type vb_request_type(enum ibv_wr_opcode op)
{
    switch (op) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
        return ND_REQUEST_TYPE_WRITE;
    case IBV_WR_RDMA_READ:
        return ND_REQUEST_TYPE_READ;
    case IBV_WR_BIND_MW:
        return ND_REQUEST_TYPE_BIND;
    case IBV_WR_LOCAL_INV:
        return ND_REQUEST_TYPE_INVALIDATE;
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
        return ND_REQUEST_TYPE_FETCH_ADD;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
        return ND_REQUEST_TYPE_CMP_SWAP;
    default:
        return ND_REQUEST_TYPE_SEND;
    }
}

int vb_post_send_now(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
    struct vb_qp *q = to_vb_qp(qp);

    for (; wr; wr = wr->next) {
        int64_t flags = vb_send_flags_of(q, wr->send_flags);
        const nd_sge *sge = (const nd_sge *)wr->sg_list;
        uint32_t n = wr->num_sge < 0 ? UINT32_MAX : (uint32_t)wr->num_sge;
        void *ctx = (void *)(uintptr_t)wr->wr_id;
        int st;

        if (flags < 0 || wr->num_sge < 0) {
            *bad = wr;
            return EINVAL;
        }
        switch (wr->opcode) {
        case IBV_WR_SEND:
            st = ndc_qp_send(q->core, ctx, sge, n, (uint32_t)flags);
            break;
        case IBV_WR_SEND_WITH_IMM:
            st = nd_qp_send_imm(q->core, ctx, sge, n, (uint32_t)flags, wr->imm_data);
            break;
        case IBV_WR_SEND_WITH_INV:
            st = nd_qp_send_inv(q->core, ctx, sge, n, (uint32_t)flags, wr->invalidate_rkey);
            break;
        case IBV_WR_RDMA_WRITE:
            /* Solicited means something only where a receive completes. */
            st = ndc_qp_write(q->core, ctx, sge, n, wr->wr.rdma.remote_addr, wr->wr.rdma.rkey,
                             (uint32_t)flags & ~ND_OP_FLAG_SEND_AND_SOLICIT_EVENT);
            break;
        case IBV_WR_RDMA_WRITE_WITH_IMM:
            st = nd_qp_write_imm(q->core, ctx, sge, n, wr->wr.rdma.remote_addr, wr->wr.rdma.rkey, (uint32_t)flags,
                                 wr->imm_data);
            break;
        case IBV_WR_RDMA_READ:
            st = ndc_qp_read(q->core, ctx, sge, n, wr->wr.rdma.remote_addr, wr->wr.rdma.rkey,
                            (uint32_t)flags & ~ND_OP_FLAG_SEND_AND_SOLICIT_EVENT);
            break;
        case IBV_WR_ATOMIC_FETCH_AND_ADD:
        case IBV_WR_ATOMIC_CMP_AND_SWP:
            st = nd_qp_atomic(q->core, ctx, sge, n, wr->wr.atomic.remote_addr, wr->wr.atomic.rkey,
                              (uint32_t)flags & ~ND_OP_FLAG_SEND_AND_SOLICIT_EVENT, (uint8_t)vb_request_type(wr->opcode),
                              wr->wr.atomic.compare_add, wr->wr.atomic.swap);
            break;
        case IBV_WR_BIND_MW:
        case IBV_WR_LOCAL_INV: {
            int err = wr->opcode == IBV_WR_BIND_MW ? vb_post_bind(qp, wr, (uint32_t)flags)
                      : vb_post_local_inv(vb_ctx(qp->context), q->core, wr, (uint32_t)flags);

            if (err) {
                *bad = wr;
                return err;
            }
            continue;
        }
        default:
            *bad = wr;
            return EINVAL;          /* UD's, TSO, atomic writes: not carried */
        }
        if (st != 0) {
            *bad = wr;
            return vb_post_errno(st);
        }
    }
    return 0;
}

int vb_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
    struct vb_qp *q = to_vb_qp(qp);

    for (; wr; wr = wr->next) {
        int st;

        if (wr->num_sge < 0) {
            *bad = wr;
            return EINVAL;
        }
        st = ndc_qp_receive(q->core, (void *)(uintptr_t)wr->wr_id, (const nd_sge *)wr->sg_list, (uint32_t)wr->num_sge);
        if (st != 0) {
            *bad = wr;
            return vb_post_errno(st);
        }
    }
    return 0;
}

void vb_wait_cm_attach(struct vb_qp *q)
{
    pthread_mutex_lock(&q->qp.mutex);
    while (__atomic_load_n(&q->cm_attaching, __ATOMIC_ACQUIRE))
        pthread_cond_wait(&q->qp.cond, &q->qp.mutex);
    pthread_mutex_unlock(&q->qp.mutex);
}

/* rnr_retry 7 retries for ever on InfiniBand: a Send then waits for the peer's receive as
 * long as it takes. 0 to 6 keep the core's bound. */
VB_API void ndv_qp_rnr_retry(struct ibv_qp *qp, uint8_t rnr_retry)
{
    struct vb_qp *q = to_vb_qp(qp);

    q->av.rnr_retry = rnr_retry;
    nd_qp_set_rnr_wait(q->core, rnr_retry >= 7 ? UINT64_MAX : ND_RNR_WAIT_NS);
}

/* The core's bind flags for a window's access and a request's flags; -1 for what a window
 * cannot grant (atomics are not carried; zero-based windows are not offered). Local write
 * means nothing for a window, which only admits peers; rxe and mlx5 accept it and so do we. */
static int64_t bind_flags(unsigned access, uint32_t flags)
{
    if (access & ~(unsigned)(IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE))
        return -1;
    flags &= VB_LOCAL_OP_FLAGS;
    if (access & IBV_ACCESS_REMOTE_READ)
        flags |= ND_OP_FLAG_ALLOW_READ;
    if (access & IBV_ACCESS_REMOTE_WRITE)
        flags |= ND_OP_FLAG_ALLOW_WRITE;
    return flags;
}

/* What the verbs rules and the region decide about a bind, known when it is posted. */
int vb_bind_check(const struct vb_mw *w, const struct ibv_mw_bind_info *b)
{
    const struct vb_mr *m = (const struct vb_mr *)b->mr;
    int64_t f = bind_flags(b->mw_access_flags, 0);

    if (!m || f < 0 || !m->mw_bind || m->mr.pd != w->mw.pd)
        return EINVAL;
    return nd_mw_bind_check(m->core, (const void *)(uintptr_t)b->addr, (size_t)b->length,
                            (f & ND_OP_FLAG_ALLOW_READ ? ND_ACCESS_REMOTE_READ : 0) |
                                (f & ND_OP_FLAG_ALLOW_WRITE ? ND_ACCESS_REMOTE_WRITE : 0)) == 0
               ? 0
               : EINVAL;
}

static int post_bind(nd_qp *qp, struct vb_mw *w, const struct ibv_mw_bind_info *b, uint64_t wr_id, uint32_t flags,
                     uint8_t key, bool replace)
{
    struct vb_mr *m = to_vb_mr(b->mr);
    int64_t f = bind_flags(b->mw_access_flags, flags);
    int st;

    if (!m || f < 0 || !m->mw_bind || m->mr.pd != w->mw.pd)
        return EINVAL;
    st = nd_qp_bind_keyed(qp, (void *)(uintptr_t)wr_id, m->core, w->core, (const void *)(uintptr_t)b->addr,
                          (size_t)b->length, (uint32_t)f, ND_KEY_GIVEN | key, replace);
    if (st == -EFAULT)
        return EINVAL;              /* outside the region, or rights the region cannot give */
    return nd_errno_of(st);
}

/* A type 1 bind with its key chosen (vb_bind_mw), now or when a held QP's connection is up. */
int vb_post_bind1(struct ibv_qp *qp, struct ibv_mw *mw, const struct ibv_mw_bind_info *b, uint64_t wr_id,
                  uint32_t flags, uint8_t key)
{
    return post_bind(to_vb_qp(qp)->core, to_vb_mw(mw), b, wr_id, flags, key, true);
}

static bool bind2_ok(const struct ibv_qp *qp, const struct ibv_send_wr *wr)
{
    const struct vb_mw *w = (const struct vb_mw *)wr->bind_mw.mw;

    return w && w->mw.type == IBV_MW_TYPE_2 && wr->bind_mw.rkey >> 8 == w->slot && w->mw.pd == qp->pd;
}

/* Whether a type 2 bind can be posted, as far as the post decides (held binds, av.c). */
int vb_bind_wr_check(struct ibv_qp *qp, const struct ibv_send_wr *wr)
{
    return bind2_ok(qp, wr) ? vb_bind_check((const struct vb_mw *)wr->bind_mw.mw, &wr->bind_mw.bind_info) : EINVAL;
}

/* Type 2, from ibv_post_send: the rkey names this window's slot and the key to bind with. */
int vb_post_bind(struct ibv_qp *qp, const struct ibv_send_wr *wr, uint32_t flags)
{
    struct vb_mw *w = to_vb_mw(wr->bind_mw.mw);
    int err;

    if (!bind2_ok(qp, wr))
        return EINVAL;
    err = post_bind(to_vb_qp(qp)->core, w, &wr->bind_mw.bind_info, wr->wr_id, flags, (uint8_t)wr->bind_mw.rkey, false);
    if (!err)
        w->mw.rkey = wr->bind_mw.rkey;
    return err;
}

int vb_post_local_inv(struct vb_context *c, nd_qp *qp, const struct ibv_send_wr *wr, uint32_t flags)
{
    struct vb_mw *w;
    int st = -EINVAL;

    pthread_mutex_lock(&c->mw_lock);
    for (w = c->windows; w && w->slot != wr->invalidate_rkey >> 8; w = w->next)
        ;
    if (w && w->mw.type == IBV_MW_TYPE_2)
        st = ndc_qp_invalidate(qp, (void *)(uintptr_t)wr->wr_id, w->core, flags & VB_LOCAL_OP_FLAGS);
    pthread_mutex_unlock(&c->mw_lock);
    if (st == 0)
        return 0;
    return nd_errno_of(st);
}
