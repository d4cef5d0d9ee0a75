// SPDX-License-Identifier: MIT
/*
 * Shared receive queues over the core's: receives posted to one SRQ are consumed by every
 * QP made with it, in posting order, and complete on the consuming QP's receive CQ with
 * that QP's number. A limit set with ibv_modify_srq is the core's notify threshold with a
 * notify request on the context's port: when fewer receives than the limit are posted, the
 * event thread raises IBV_EVENT_SRQ_LIMIT_REACHED and the limit is disarmed (0), as verbs
 * defines it. ibv_create_srq ignores srq_limit, as rdma-core's man page says.
 */
#include "verbs_int.h"
#include "core/srq_int.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

struct vb_srq {
    struct ibv_srq srq;
    nd_srq *core;
    uint32_t max_wr, max_sge;       /* as granted */
    struct vb_work limit_work;      /* the core's notify for the limit */
    uint32_t limit;                 /* armed limit, 0 for none (srq.mutex) */
    bool notify_pending;            /* limit_work is with the core (srq.mutex) */
    uint32_t events_reported;       /* limit events queued (srq.mutex) */
};

static struct vb_srq *to_vb_srq(struct ibv_srq *srq)
{
    return vb_container_of(srq, struct vb_srq, srq);
}

/* The core's notify completed (the event thread, or at once when armed): @st 0 is
 * the limit reached, -ECANCELED the SRQ's destruction. A limit disarmed meanwhile is not
 * reported. */
static void limit_fired(struct vb_srq *s, int st)
{
    struct ibv_async_event ev = { .element.srq = &s->srq, .event_type = IBV_EVENT_SRQ_LIMIT_REACHED };
    bool deliver;

    pthread_mutex_lock(&s->srq.mutex);
    s->notify_pending = false;
    deliver = st == 0 && s->limit;
    if (deliver) {
        s->limit = 0;
        s->events_reported++;
    }
    pthread_cond_broadcast(&s->srq.cond);
    pthread_mutex_unlock(&s->srq.mutex);
    if (deliver)
        vb_async_push(vb_ctx(s->srq.context), &ev);
}

static void limit_done(struct vb_work *w, int st)
{
    limit_fired(vb_container_of(w, struct vb_srq, limit_work), st);
}

/* Arm @limit (srq.mutex held): the core's threshold, and a notify unless one is pending.
 * Returns whether it fired at once (fewer posted already); 0 or an errno in @err. */
static bool arm_limit(struct vb_srq *s, uint32_t limit, int *err)
{
    int st = ndc_srq_modify(s->core, 0, limit);

    *err = 0;
    if (st != 0) {
        *err = nd_errno_of(st);
        return false;
    }
    s->limit = limit;
    if (s->notify_pending)
        return false;
    *err = vb_event_thread_start(vb_ctx(s->srq.context));
    if (*err)
        return false;
    memset(&s->limit_work, 0, sizeof(s->limit_work));
    s->limit_work.done = limit_done;
    st = ndc_srq_notify(s->core, &s->limit_work.ov);
    s->notify_pending = st == -EINPROGRESS;
    if (st != -EINPROGRESS && st != 0)
        *err = nd_errno_of(st);
    return st == 0;
}

nd_srq *vb_srq_core(struct ibv_srq *srq)
{
    return to_vb_srq(srq)->core;
}

VB_API struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
    struct vb_context *c;
    struct vb_srq *s;
    uint32_t sge;
    int st;

    if (!pd || !attr || !attr->attr.max_wr || attr->attr.max_wr > nd_caps.max_srq_wr ||
        attr->attr.max_sge > nd_caps.max_recv_sge) {
        errno = EINVAL;
        return NULL;
    }
    c = vb_ctx(pd->context);
    s = calloc(1, sizeof(*s));
    if (!s) {
        errno = ENOMEM;
        return NULL;
    }
    sge = attr->attr.max_sge ? attr->attr.max_sge : 1;
    st = ndc_adapter_create_shared_receive_queue(c->adapter, c->port, attr->attr.max_wr, sge, 0, 0, 0, &s->core);
    if (st != 0) {
        free(s);
        errno = nd_errno_of(st);
        return NULL;
    }
    nd_srq_set_pd(s->core, vb_pd_id(pd));
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
    struct vb_srq *s = to_vb_srq(srq);
    int st;

    if (!srq || !attr || (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)))
        return EINVAL;
    if ((mask & IBV_SRQ_LIMIT) && attr->srq_limit > s->max_wr)
        return EINVAL;
    if (mask & IBV_SRQ_MAX_WR) {
        if (!attr->max_wr || attr->max_wr > nd_caps.max_srq_wr)
            return EINVAL;
        st = ndc_srq_modify(s->core, attr->max_wr, 0);
        if (st != 0)
            return nd_errno_of(st);
        s->max_wr = attr->max_wr;
    }
    if (mask & IBV_SRQ_LIMIT) {
        int err = 0;
        bool fired = false;

        pthread_mutex_lock(&srq->mutex);
        if (attr->srq_limit)
            fired = arm_limit(s, attr->srq_limit, &err);
        else
            s->limit = 0;           /* a pending notify is then dropped when it fires */
        pthread_mutex_unlock(&srq->mutex);
        if (fired)
            limit_fired(s, 0);
        return err;
    }
    return 0;
}

VB_API int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
    struct vb_srq *s = to_vb_srq(srq);

    if (!srq || !attr)
        return EINVAL;
    attr->max_wr = s->max_wr;
    attr->max_sge = s->max_sge;
    pthread_mutex_lock(&srq->mutex);
    attr->srq_limit = s->limit;
    pthread_mutex_unlock(&srq->mutex);
    return 0;
}

VB_API int ibv_destroy_srq(struct ibv_srq *srq)
{
    struct vb_srq *s = to_vb_srq(srq);
    int st;

    if (!srq)
        return EINVAL;
    pthread_mutex_lock(&srq->mutex);
    while (srq->events_completed != s->events_reported)
        pthread_cond_wait(&srq->cond, &srq->mutex);
    pthread_mutex_unlock(&srq->mutex);
    st = ndc_srq_close(s->core);
    if (st != 0)
        return nd_errno_of(st);
    /* The close cancelled a pending notify: the event thread still has to take it. */
    pthread_mutex_lock(&srq->mutex);
    while (s->notify_pending)
        pthread_cond_wait(&srq->cond, &srq->mutex);
    pthread_mutex_unlock(&srq->mutex);
    pthread_cond_destroy(&s->srq.cond);
    pthread_mutex_destroy(&s->srq.mutex);
    free(s);
    return 0;
}

int vb_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
    struct vb_srq *s = to_vb_srq(srq);

    for (; wr; wr = wr->next) {
        int st;

        if (wr->num_sge < 0) {
            *bad = wr;
            return EINVAL;
        }
        st = ndc_srq_receive(s->core, (void *)(uintptr_t)wr->wr_id, (const nd_sge *)wr->sg_list,
                            (uint32_t)wr->num_sge);
        if (st != 0) {
            *bad = wr;
            return nd_errno_of(st);
        }
    }
    return 0;
}
