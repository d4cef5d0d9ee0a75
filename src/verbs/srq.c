// SPDX-License-Identifier: MIT
/*
 * Shared receive queues over the core's: receives posted to one SRQ are consumed by every
 * QP made with it, in posting order, and complete on the consuming QP's receive CQ with
 * that QP's number. The SRQ limit event (IBV_EVENT_SRQ_LIMIT_REACHED) is not raised: a
 * limit is refused with EOPNOTSUPP rather than armed and never reported.
 */
#include "verbs_int.h"

#include <errno.h>
#include <stdlib.h>

struct vb_srq {
    struct ibv_srq srq;
    nd_srq *core;
    uint32_t max_wr, max_sge;       /* as granted */
};

nd_srq *vb_srq_core(struct ibv_srq *srq)
{
    return ((struct vb_srq *)srq)->core;
}

VB_API struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
    struct vb_context *c;
    struct vb_srq *s;
    uint32_t sge;
    nd_status st;

    if (!pd || !attr || !attr->attr.max_wr || attr->attr.max_wr > nd_limits.max_shared_receive_queue_depth ||
        attr->attr.max_sge > nd_limits.max_receive_sge) {
        errno = EINVAL;
        return NULL;
    }
    if (attr->attr.srq_limit) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    c = vb_ctx(pd->context);
    s = calloc(1, sizeof(*s));
    if (!s) {
        errno = ENOMEM;
        return NULL;
    }
    sge = attr->attr.max_sge ? attr->attr.max_sge : 1;
    st = nd_adapter_create_shared_receive_queue(c->adapter, c->port, attr->attr.max_wr, sge, 0, 0, 0, &s->core);
    if (st != ND_SUCCESS) {
        free(s);
        errno = vb_errno(st);
        return NULL;
    }
    s->srq.context = pd->context;
    s->srq.srq_context = attr->srq_context;
    s->srq.pd = pd;
    pthread_mutex_init(&s->srq.mutex, NULL);
    pthread_cond_init(&s->srq.cond, NULL);
    s->max_wr = attr->attr.max_wr;
    s->max_sge = sge;
    attr->attr.max_sge = sge;
    return &s->srq;
}

VB_API int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
    struct vb_srq *s = (struct vb_srq *)srq;
    nd_status st;

    if (!srq || !attr || (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)))
        return EINVAL;
    if ((mask & IBV_SRQ_LIMIT) && attr->srq_limit)
        return EOPNOTSUPP;
    if (!(mask & IBV_SRQ_MAX_WR))
        return 0;
    if (!attr->max_wr || attr->max_wr > nd_limits.max_shared_receive_queue_depth)
        return EINVAL;
    st = nd_srq_modify(s->core, attr->max_wr, 0);
    if (st != ND_SUCCESS)
        return vb_errno(st);
    s->max_wr = attr->max_wr;
    return 0;
}

VB_API int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
    struct vb_srq *s = (struct vb_srq *)srq;

    if (!srq || !attr)
        return EINVAL;
    attr->max_wr = s->max_wr;
    attr->max_sge = s->max_sge;
    attr->srq_limit = 0;
    return 0;
}

VB_API int ibv_destroy_srq(struct ibv_srq *srq)
{
    struct vb_srq *s = (struct vb_srq *)srq;
    nd_status st;

    if (!srq)
        return EINVAL;
    st = nd_srq_close(s->core);
    if (st != ND_SUCCESS)
        return st == ND_DEVICE_BUSY ? EBUSY : vb_errno(st);
    pthread_cond_destroy(&s->srq.cond);
    pthread_mutex_destroy(&s->srq.mutex);
    free(s);
    return 0;
}

int vb_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
    struct vb_srq *s = (struct vb_srq *)srq;

    for (; wr; wr = wr->next) {
        nd_status st;

        if (wr->num_sge < 0) {
            *bad = wr;
            return EINVAL;
        }
        st = nd_srq_receive(s->core, (void *)(uintptr_t)wr->wr_id, (const nd_sge *)wr->sg_list,
                            (uint32_t)wr->num_sge);
        if (st != ND_SUCCESS) {
            *bad = wr;
            return st == ND_NO_MORE_ENTRIES ? ENOMEM : vb_errno(st);
        }
    }
    return 0;
}
