// SPDX-License-Identifier: MIT
/*
 * Completion queues and completion channels.
 *
 * A channel is an event queue behind its descriptor (core/evq.h): ibv_get_cq_event takes
 * the oldest event; a CQ destroyed with events still queued takes them out.
 *
 * ibv_req_notify_cq arms the core's CQ once (nd_cq_notify): the next completion added, or
 * the next solicited or failed one, completes that request on the context's port. The
 * context's event thread waits on the port and queues the CQ's event on its channel: the
 * application may be blocked in ibv_get_cq_event, with nobody else to notice.
 */
#include "verbs_int.h"

#include "core/evq.h"
#include "core/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* An event of a CQ whose notify request completed; the node's owner is the CQ. */
struct vb_event {
    struct nd_evq_node node;
};

struct vb_channel {
    struct ibv_comp_channel ch;
    struct nd_evq q;                /* q.lock also guards ch.refcnt */
};

static struct vb_channel *to_vb_channel(struct ibv_comp_channel *ch)
{
    return vb_container_of(ch, struct vb_channel, ch);
}

static void event_free(struct nd_evq_node *n)
{
    free(n);
}

VB_API struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *ctx)
{
    struct vb_channel *c;

    if (!ctx) {
        errno = EINVAL;
        return NULL;
    }
    c = calloc(1, sizeof(*c));
    if (!c) {
        errno = ENOMEM;
        return NULL;
    }
    if (nd_evq_init(&c->q) < 0) {
        free(c);
        return NULL;
    }
    c->ch.fd = c->q.fd;
    c->ch.context = ctx;
    return &c->ch;
}

VB_API int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
    struct vb_channel *c = to_vb_channel(channel);

    if (!channel)
        return EINVAL;
    pthread_mutex_lock(&c->q.lock);
    if (channel->refcnt) {
        pthread_mutex_unlock(&c->q.lock);
        return EBUSY;
    }
    pthread_mutex_unlock(&c->q.lock);
    nd_evq_fini(&c->q, event_free);
    free(c);
    return 0;
}

/* From the event thread: one event for @cq (its notify request completed). */
static void channel_push(struct vb_channel *c, struct vb_cq *cq)
{
    struct vb_event *e = malloc(sizeof(*e));

    if (!e)
        return;                     /* lost for want of memory: the CQ stays disarmed */
    e->node.owner = cq;
    if (nd_evq_push(&c->q, &e->node) < 0)
        nd_log(ND_LOG_WARN, ND_SUB_VERBS, "completion channel: %m");
}

/* Under the channel's lock: the CQ's destroy waits until this one is acknowledged. */
static void event_taken(struct nd_evq_node *n)
{
    struct vb_cq *cq = (struct vb_cq *)n->owner;

    pthread_mutex_lock(&cq->cq.mutex);
    cq->events_delivered++;
    pthread_mutex_unlock(&cq->cq.mutex);
}

VB_API int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
    struct nd_evq_node *n;
    struct vb_cq *got;

    if (!channel || !cq || !cq_context) {
        errno = EINVAL;
        return -1;
    }
    n = nd_evq_wait(&to_vb_channel(channel)->q, event_taken);
    if (!n)
        return -1;                  /* EAGAIN on a non-blocking channel, EINTR, ... */
    got = (struct vb_cq *)n->owner;
    free(n);
    *cq = &got->cq;
    *cq_context = got->cq.cq_context;
    return 0;
}

VB_API void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
    pthread_mutex_lock(&cq->mutex);
    cq->comp_events_completed += nevents;
    pthread_cond_broadcast(&cq->cond);
    pthread_mutex_unlock(&cq->mutex);
}

/* The event thread's view of a notify request that completed (or was cancelled). */
static void cq_notified(struct vb_cq *cq, nd_status st)
{
    bool deliver;

    pthread_mutex_lock(&cq->cq.mutex);
    cq->armed = false;
    deliver = st != ND_CANCELED && !cq->dying && cq->cq.channel;
    pthread_cond_broadcast(&cq->cq.cond);
    pthread_mutex_unlock(&cq->cq.mutex);
    if (deliver)
        channel_push(to_vb_channel(cq->cq.channel), cq);
}

static void notify_done(struct vb_work *w, nd_status st)
{
    cq_notified(vb_container_of(w, struct vb_cq, notify), st);
}

VB_API struct ibv_cq *ibv_create_cq(struct ibv_context *ctx, int cqe, void *cq_context,
                                    struct ibv_comp_channel *channel, int comp_vector)
{
    struct vb_context *c;
    struct vb_cq *q;
    nd_status st;

    if (!ctx || cqe < 1 || (uint32_t)cqe > nd_caps.max_cqe || comp_vector < 0 ||
        comp_vector >= ctx->num_comp_vectors || (channel && channel->context != ctx)) {
        errno = EINVAL;
        return NULL;
    }
    c = vb_ctx(ctx);
    q = calloc(1, sizeof(*q));
    if (!q) {
        errno = ENOMEM;
        return NULL;
    }
    st = nd_adapter_create_completion_queue(c->adapter, c->port, (uint32_t)cqe, 0, 0, &q->core);
    if (st != ND_SUCCESS) {
        free(q);
        errno = nd_status_errno(st);
        return NULL;
    }
    q->cq.context = ctx;
    q->cq.channel = channel;
    q->cq.cq_context = cq_context;
    q->cq.cqe = cqe;
    pthread_mutex_init(&q->cq.mutex, NULL);
    pthread_cond_init(&q->cq.cond, NULL);
    if (channel) {
        struct vb_channel *ch = to_vb_channel(channel);

        pthread_mutex_lock(&ch->q.lock);
        channel->refcnt++;
        pthread_mutex_unlock(&ch->q.lock);
    }
    return &q->cq;
}

VB_API int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
    struct vb_cq *q = to_vb_cq(cq);
    nd_status st;

    if (!cq || cqe < 1 || (uint32_t)cqe > nd_caps.max_cqe)
        return EINVAL;
    st = nd_cq_resize(q->core, (uint32_t)cqe);
    if (st != ND_SUCCESS)
        return nd_status_errno(st);
    cq->cqe = cqe;
    return 0;
}

/* A CQ a QP still uses is refused first (EBUSY), as the kernel refuses it before anything
 * else. Otherwise destroy waits until every event delivered for the CQ is acknowledged, as
 * rdma-core's does, and until its notify request is back from the event thread. */
VB_API int ibv_destroy_cq(struct ibv_cq *cq)
{
    struct vb_cq *q = to_vb_cq(cq);
    nd_status st;

    if (!cq)
        return EINVAL;
    /* A QP still on it: refused at once, nothing changed (its events, its notification). */
    if (nd_cq_in_use(q->core))
        return EBUSY;
    pthread_mutex_lock(&cq->mutex);
    q->dying = true;
    while (cq->comp_events_completed != q->events_delivered)
        pthread_cond_wait(&cq->cond, &cq->mutex);
    pthread_mutex_unlock(&cq->mutex);
    if (cq->channel)
        nd_evq_forget(&to_vb_channel(cq->channel)->q, q, event_free);
    nd_cq_cancel_overlapped_requests(q->core);
    pthread_mutex_lock(&cq->mutex);
    while (q->armed)
        pthread_cond_wait(&cq->cond, &cq->mutex);
    pthread_mutex_unlock(&cq->mutex);
    st = nd_cq_close(q->core);
    if (st != ND_SUCCESS) {
        q->dying = false;
        return nd_status_errno(st);        /* a QP still uses it (EBUSY) */
    }
    if (cq->channel) {
        struct vb_channel *ch = to_vb_channel(cq->channel);

        pthread_mutex_lock(&ch->q.lock);
        cq->channel->refcnt--;
        pthread_mutex_unlock(&ch->q.lock);
    }
    /* No poll of this CQ runs now: the QPs it could still name go (with their other CQ's
     * reference gone too). */
    for (struct vb_qp *g = q->graves, *next; g; g = next) {
        int slot = g->qp.send_cq == cq ? 0 : 1;

        next = g->grave_next[slot];
        if (__atomic_sub_fetch(&g->grave_refs, 1, __ATOMIC_ACQ_REL) == 0)
            vb_qp_free(g);
    }
    pthread_cond_destroy(&cq->cond);
    pthread_mutex_destroy(&cq->mutex);
    free(q);
    return 0;
}

/* @q (destroyed) joins @cq's list through its link @slot (0: as its send CQ, 1: receive). */
void vb_cq_bury(struct ibv_cq *cq, struct vb_qp *q, int slot)
{
    struct vb_cq *c = to_vb_cq(cq);

    pthread_mutex_lock(&cq->mutex);
    q->grave_next[slot] = c->graves;
    c->graves = q;
    pthread_mutex_unlock(&cq->mutex);
}

/* ibv_req_notify_cq (through ops): arm once, for any completion or a solicited one. */
int vb_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
    struct vb_cq *q = to_vb_cq(cq);
    nd_status st;
    int err;

    pthread_mutex_lock(&cq->mutex);
    if (q->armed || q->dying) {
        pthread_mutex_unlock(&cq->mutex);
        return 0;                   /* armed already: the next completion gives one event */
    }
    err = vb_event_thread_start(vb_ctx(cq->context));
    if (err) {
        pthread_mutex_unlock(&cq->mutex);
        return err;
    }
    memset(&q->notify, 0, sizeof(q->notify));
    q->notify.done = notify_done;
    q->armed = true;
    st = nd_cq_notify(q->core, solicited_only ? ND_CQ_NOTIFY_SOLICITED : ND_CQ_NOTIFY_ANY, &q->notify.ov);
    if (st != ND_PENDING)
        q->armed = false;
    pthread_mutex_unlock(&cq->mutex);
    /* The core answers at once when completions no notify has covered are queued (a flush
     * that landed between the application's last poll and this arm, say): nothing is
     * queued on the port then, so the event is raised here. An event for completions the
     * application is about to poll anyway costs it one empty poll; a lost one would leave
     * it asleep. */
    if (st == ND_SUCCESS)
        cq_notified(q, ND_SUCCESS);
    return nd_status_errno(st);
}
