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

struct ibv_mw *vb_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
    struct vb_context *c;
    struct vb_mw *w;
    int st;

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
    st = ndc_adapter_create_memory_window(c->adapter, &w->core);
    if (st != 0) {
        free(w);
        errno = nd_errno_of(st);
        return NULL;
    }
    nd_mw_set_pd(w->core, vb_pd_id(pd));
    w->mw.context = pd->context;
    w->mw.pd = pd;
    w->mw.type = type;
    w->mw.rkey = ndc_mw_get_remote_token(w->core);
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
    int st;

    if (!mw)
        return EINVAL;
    c = vb_ctx(mw->context);
    pthread_mutex_lock(&c->mw_lock);
    st = ndc_mw_close(w->core);          /* a bound window stops admitting peers at once */
    if (st == 0) {
        for (p = &c->windows; *p != w; p = &(*p)->next)
            ;
        *p = w->next;
    }
    pthread_mutex_unlock(&c->mw_lock);
    if (st != 0)
        return nd_errno_of(st);
    free(w);
    return 0;
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

    if (!qp || !mw || !bind || mw->type != IBV_MW_TYPE_1 || mw->pd != qp->pd || q->ud)
        return EINVAL;
    if (bind->send_flags & ~(unsigned)(IBV_SEND_SIGNALED | IBV_SEND_FENCE))
        return EINVAL;
    if (!(bind->send_flags & IBV_SEND_SIGNALED) && !q->sig_all)
        flags |= ND_OP_FLAG_SILENT_SUCCESS;
    if (bind->send_flags & IBV_SEND_FENCE)
        flags |= ND_OP_FLAG_READ_FENCE;
    key = (uint8_t)(mw->rkey + 1);
    if (__atomic_load_n(&q->av.hold, __ATOMIC_ACQUIRE)) {
        err = vb_bind_check(w, &bind->bind_info);
        if (!err)
            err = vb_av_hold_bind1(q, mw, bind, flags, key);
    } else {
        err = vb_post_bind1(qp, mw, &bind->bind_info, bind->wr_id, flags, key);
    }
    if (!err)
        mw->rkey = w->slot << 8 | key;
    return err;
}

