// SPDX-License-Identifier: MIT
/*
 * Memory windows. The core's window is a slot of the token table; its rkey is the token
 * (slot << 8 | key byte). Type 2 windows are bound by IBV_WR_BIND_MW with the rkey the
 * caller made with ibv_inc_rkey, and must be invalidated (IBV_WR_LOCAL_INV) before the next
 * bind; type 1 windows are bound by ibv_bind_mw, which rebinds a bound window, each bind
 * with the next key. Binds and invalidations run in order with the QP's other requests.
 */
#include "verbs_int.h"
#include "core/qp_int.h"
#include "core/mem_int.h"

#include <errno.h>
#include <stdlib.h>

/* What a bind or an invalidation keeps of a send request's flags. */
#define VB_LOCAL_OP_FLAGS (ND_OP_FLAG_SILENT_SUCCESS | ND_OP_FLAG_READ_FENCE)

struct ibv_mw *vb_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
    struct vb_context *c;
    struct vb_mw *w;
    nd_status st;

    if (!pd || (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2)) {
        errno = EINVAL;
        return NULL;
    }
    c = vb_ctx(pd->context);
    w = calloc(1, sizeof(*w));
    if (!w) {
        errno = ENOMEM;
        return NULL;
    }
    st = nd_adapter_create_memory_window(c->adapter, &w->core);
    if (st != ND_SUCCESS) {
        free(w);
        errno = nd_status_errno(st);
        return NULL;
    }
    nd_mw_set_pd(w->core, vb_pd_id(pd));
    w->mw.context = pd->context;
    w->mw.pd = pd;
    w->mw.type = type;
    w->mw.rkey = nd_mw_get_remote_token(w->core);
    w->slot = w->mw.rkey >> 8;
    pthread_mutex_lock(&c->mw_lock);
    w->next = c->windows;
    c->windows = w;
    pthread_mutex_unlock(&c->mw_lock);
    return &w->mw;
}

int vb_dealloc_mw(struct ibv_mw *mw)
{
    struct vb_mw *w = to_vb_mw(mw), **p;
    struct vb_context *c;
    nd_status st;

    if (!mw)
        return EINVAL;
    c = vb_ctx(mw->context);
    pthread_mutex_lock(&c->mw_lock);
    st = nd_mw_close(w->core);          /* a bound window stops admitting peers at once */
    if (st == ND_SUCCESS) {
        for (p = &c->windows; *p != w; p = &(*p)->next)
            ;
        *p = w->next;
    }
    pthread_mutex_unlock(&c->mw_lock);
    if (st != ND_SUCCESS)
        return nd_status_errno(st);
    free(w);
    return 0;
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
static int bind_check(const struct vb_mw *w, const struct ibv_mw_bind_info *b)
{
    const struct vb_mr *m = (const struct vb_mr *)b->mr;
    int64_t f = bind_flags(b->mw_access_flags, 0);

    if (!m || f < 0 || !m->mw_bind || m->mr.pd != w->mw.pd)
        return EINVAL;
    return nd_mw_bind_check(m->core, (const void *)(uintptr_t)b->addr, (size_t)b->length,
                            (f & ND_OP_FLAG_ALLOW_READ ? ND_ACCESS_REMOTE_READ : 0) |
                                (f & ND_OP_FLAG_ALLOW_WRITE ? ND_ACCESS_REMOTE_WRITE : 0)) == ND_SUCCESS
               ? 0
               : EINVAL;
}

static int post_bind(nd_qp *qp, struct vb_mw *w, const struct ibv_mw_bind_info *b, uint64_t wr_id, uint32_t flags,
                     uint8_t key, bool replace)
{
    struct vb_mr *m = to_vb_mr(b->mr);
    int64_t f = bind_flags(b->mw_access_flags, flags);
    nd_status st;

    if (!m || f < 0 || !m->mw_bind || m->mr.pd != w->mw.pd)
        return EINVAL;
    st = nd_qp_bind_keyed(qp, (void *)(uintptr_t)wr_id, m->core, w->core, (const void *)(uintptr_t)b->addr,
                          (size_t)b->length, (uint32_t)f, ND_KEY_GIVEN | key, replace);
    if (st == ND_ACCESS_VIOLATION)
        return EINVAL;              /* outside the region, or rights the region cannot give */
    return nd_status_errno(st);
}

/* A type 1 bind with its key chosen (vb_bind_mw), now or when a held QP's connection is up. */
int vb_post_bind1(struct ibv_qp *qp, struct ibv_mw *mw, const struct ibv_mw_bind_info *b, uint64_t wr_id,
                  uint32_t flags, uint8_t key)
{
    return post_bind((to_vb_qp(qp))->core, to_vb_mw(mw), b, wr_id, flags, key, true);
}

/* Type 1: a new key each bind, which the window carries from the post on (as a provider
 * sets it when the bind is posted); a zero-length bind leaves it admitting nothing. On a QP
 * whose address-vector connection is not up yet the bind is held, as a Send is. */
int vb_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind)
{
    struct vb_mw *w = to_vb_mw(mw);
    struct vb_qp *q = to_vb_qp(qp);
    uint32_t flags = 0;
    uint8_t key;
    int err;

    if (!qp || !mw || !bind || mw->type != IBV_MW_TYPE_1 || mw->pd != qp->pd)
        return EINVAL;
    if (bind->send_flags & ~(unsigned)(IBV_SEND_SIGNALED | IBV_SEND_FENCE))
        return EINVAL;
    if (!(bind->send_flags & IBV_SEND_SIGNALED) && !q->sig_all)
        flags |= ND_OP_FLAG_SILENT_SUCCESS;
    if (bind->send_flags & IBV_SEND_FENCE)
        flags |= ND_OP_FLAG_READ_FENCE;
    key = (uint8_t)(mw->rkey + 1);
    if (__atomic_load_n(&q->av.hold, __ATOMIC_ACQUIRE)) {
        err = bind_check(w, &bind->bind_info);
        if (!err)
            err = vb_av_hold_bind1(q, mw, bind, flags, key);
    } else {
        err = vb_post_bind1(qp, mw, &bind->bind_info, bind->wr_id, flags, key);
    }
    if (!err)
        mw->rkey = w->slot << 8 | key;
    return err;
}

static bool bind2_ok(const struct ibv_qp *qp, const struct ibv_send_wr *wr)
{
    const struct vb_mw *w = (const struct vb_mw *)wr->bind_mw.mw;

    return w && w->mw.type == IBV_MW_TYPE_2 && wr->bind_mw.rkey >> 8 == w->slot && w->mw.pd == qp->pd;
}

/* Whether a type 2 bind can be posted, as far as the post decides (held binds, av.c). */
int vb_bind_wr_check(struct ibv_qp *qp, const struct ibv_send_wr *wr)
{
    return bind2_ok(qp, wr) ? bind_check((const struct vb_mw *)wr->bind_mw.mw, &wr->bind_mw.bind_info) : EINVAL;
}

/* Type 2, from ibv_post_send: the rkey names this window's slot and the key to bind with. */
int vb_post_bind(struct ibv_qp *qp, const struct ibv_send_wr *wr, uint32_t flags)
{
    struct vb_mw *w = to_vb_mw(wr->bind_mw.mw);
    int err;

    if (!bind2_ok(qp, wr))
        return EINVAL;
    err = post_bind((to_vb_qp(qp))->core, w, &wr->bind_mw.bind_info, wr->wr_id, flags, (uint8_t)wr->bind_mw.rkey, false);
    if (!err)
        w->mw.rkey = wr->bind_mw.rkey;
    return err;
}

int vb_post_local_inv(struct vb_context *c, nd_qp *qp, const struct ibv_send_wr *wr, uint32_t flags)
{
    struct vb_mw *w;
    nd_status st = ND_INVALID_PARAMETER;

    pthread_mutex_lock(&c->mw_lock);
    for (w = c->windows; w && w->slot != wr->invalidate_rkey >> 8; w = w->next)
        ;
    if (w && w->mw.type == IBV_MW_TYPE_2)
        st = nd_qp_invalidate(qp, (void *)(uintptr_t)wr->wr_id, w->core, flags & VB_LOCAL_OP_FLAGS);
    pthread_mutex_unlock(&c->mw_lock);
    if (st == ND_SUCCESS)
        return 0;
    return nd_status_errno(st);
}
