// SPDX-License-Identifier: MIT
/*
 * Completion queues and completion channels.
 *
 * A channel is a completion port of its own, and its descriptor is the port's: the CQs
 * made with the channel live on that port, so their notify requests complete there, and
 * ibv_get_cq_event waits on the port itself, after looking at the channel's CQs for a
 * moment (spin_for_event). The thread asleep in it is the one the peer's completion wakes
 * (a same-host peer writes the CQ's doorbell, which the port's epoll set watches); nobody
 * relays the event. A CQ without a channel lives on the context's port, and its notify
 * request only disarms it there (the event thread).
 *
 * A notify request's memory is not the CQ's (struct vb_channel_notify): once completed it
 * may sit in the port's queue, or in a waiter's hands between the queue and the channel's
 * lock, when the CQ is destroyed; whoever holds it last frees it.
 */
#include "verbs_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct vb_channel {
    struct ibv_comp_channel ch;
    nd_port *port;
    pthread_mutex_t lock;           /* ch.refcnt, cqs, and vb_channel_notify.cq */
    struct vb_cq *cqs;              /* its CQs (vb_cq.channel_next) */
};

/* How long ibv_get_cq_event looks at the channel's CQs before it sleeps: a wake-up across
 * CPUs costs tens of microseconds, and the answer to a message just sent is often one or
 * two away (the core's own CQ waits spin as long). */
#define VB_EVENT_SPIN_NS (20ull * 1000)

/* A channel CQ's notify request; cq NULL once the CQ is gone (the holder frees it). */
struct vb_channel_notify {
    nd_overlapped ov;
    struct vb_cq *cq;
};

static struct vb_channel *to_vb_channel(struct ibv_comp_channel *ch)
{
    return vb_container_of(ch, struct vb_channel, ch);
}

static void channel_release(struct vb_channel *ch, struct vb_cq *q);
static void channel_unlist(struct vb_channel *ch, struct vb_cq *q);

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
    if (nd_errno_of(ndc_port_create(&c->port))) {
        free(c);
        errno = ENOMEM;
        return NULL;
    }
    pthread_mutex_init(&c->lock, NULL);
    c->ch.fd = ndc_port_fd(c->port);
    c->ch.context = ctx;
    return &c->ch;
}

VB_API int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
    struct vb_channel *c = to_vb_channel(channel);
    nd_overlapped *ov;

    if (!channel)
        return EINVAL;
    pthread_mutex_lock(&c->lock);
    if (channel->refcnt) {
        pthread_mutex_unlock(&c->lock);
        return EBUSY;
    }
    pthread_mutex_unlock(&c->lock);
    /* Its CQs are gone: what is still queued is the requests they handed over. */
    while (nd_port_take(c->port, 0, &ov) == 0)
        free(vb_container_of(ov, struct vb_channel_notify, ov));
    ndc_port_close(c->port);
    pthread_mutex_destroy(&c->lock);
    free(c);
    return 0;
}

/* The waiter took a completed notify request: the CQ's event, or nothing (NULL) when the
 * request was cancelled or its CQ is going. */
static struct vb_cq *event_of(struct vb_channel *ch, nd_overlapped *ov)
{
    struct vb_channel_notify *n = vb_container_of(ov, struct vb_channel_notify, ov);
    struct vb_cq *cq, *owner;

    pthread_mutex_lock(&ch->lock);
    owner = n->cq;
    if (!owner) {
        pthread_mutex_unlock(&ch->lock);
        free(n);                    /* handed over by ibv_destroy_cq */
        return NULL;
    }
    pthread_mutex_lock(&owner->cq.mutex);
    owner->armed = false;
    /* A request that did not succeed (cancelled by the destroy) is no event. */
    cq = nd_errno_of(nd_ov_result(ov)) || owner->dying ? NULL : owner;
    if (cq)
        cq->events_delivered++;     /* ibv_destroy_cq waits for its acknowledgement */
    pthread_mutex_unlock(&owner->cq.mutex);
    pthread_mutex_unlock(&ch->lock);
    return cq;
}

/* Look at the channel's CQs for a while, as a poll of each would, until an event is
 * queued: NULL when none came. Not when another thread of the process spins already. */
static nd_overlapped *spin_for_event(struct vb_channel *ch)
{
    uint64_t end = nd_now_ns() + VB_EVENT_SPIN_NS;
    nd_overlapped *ov = NULL;

    if (!nd_spin_enter())
        return NULL;
    while (!nd_port_take_queued(ch->port, &ov) && nd_now_ns() < end) {
        pthread_mutex_lock(&ch->lock);
        for (struct vb_cq *q = ch->cqs; q; q = q->channel_next)
            nd_cq_look(q->core);
        pthread_mutex_unlock(&ch->lock);
        nd_cpu_relax();
    }
    nd_spin_leave();
    return ov;
}

VB_API int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
    struct vb_channel *ch = to_vb_channel(channel);
    struct vb_cq *got = NULL;

    if (!channel || !cq || !cq_context) {
        errno = EINVAL;
        return -1;
    }
    while (!got) {
        /* The application may have made the descriptor non-blocking, as with rdma-core's. */
        int fl = fcntl(channel->fd, F_GETFL);
        bool block = fl < 0 || !(fl & O_NONBLOCK);
        nd_overlapped *ov = block ? spin_for_event(ch) : NULL;
        int err = ov ? 0 : nd_port_take(ch->port, block ? -1 : 0, &ov);

        if (err) {
            errno = -err;
            return -1;
        }
        got = event_of(ch, ov);
    }
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

/* The event thread's view of a channel-less CQ's notify request: there is no one to tell. */
static void notify_done(struct vb_work *w, int st)
{
    struct vb_cq *cq = vb_container_of(w, struct vb_cq, notify);

    (void)st;
    pthread_mutex_lock(&cq->cq.mutex);
    cq->armed = false;
    pthread_cond_broadcast(&cq->cq.cond);
    pthread_mutex_unlock(&cq->cq.mutex);
}

VB_API struct ibv_cq *ibv_create_cq(struct ibv_context *ctx, int cqe, void *cq_context,
                                    struct ibv_comp_channel *channel, int comp_vector)
{
    struct vb_context *c;
    struct vb_cq *q;
    int st;

    if (!ctx || cqe < 1 || (uint32_t)cqe > nd_caps.max_cqe || comp_vector < 0 ||
        comp_vector >= ctx->num_comp_vectors || (channel && channel->context != ctx)) {
        errno = EINVAL;
        return NULL;
    }
    c = vb_ctx(ctx);
    q = calloc(1, sizeof(*q));
    if (q && channel && !(q->cnotify = calloc(1, sizeof(*q->cnotify)))) {
        free(q);
        q = NULL;
    }
    if (!q) {
        errno = ENOMEM;
        return NULL;
    }
    st = ndc_adapter_create_completion_queue(c->adapter, channel ? to_vb_channel(channel)->port : c->port,
                                            (uint32_t)cqe, 0, 0, &q->core);
    if (st != 0) {
        free(q->cnotify);
        free(q);
        errno = nd_errno_of(st);
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

        q->cnotify->cq = q;
        pthread_mutex_lock(&ch->lock);
        channel->refcnt++;
        q->channel_next = ch->cqs;
        ch->cqs = q;
        pthread_mutex_unlock(&ch->lock);
    }
    return &q->cq;
}

VB_API int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
    struct vb_cq *q = to_vb_cq(cq);
    int st;

    if (!cq || cqe < 1 || (uint32_t)cqe > nd_caps.max_cqe)
        return EINVAL;
    st = ndc_cq_resize(q->core, (uint32_t)cqe);
    if (st != 0)
        return nd_errno_of(st);
    cq->cqe = cqe;
    return 0;
}

/* A CQ a QP still uses is refused first (EBUSY), as the kernel refuses it before anything
 * else. Otherwise destroy waits until every event delivered for the CQ is acknowledged, as
 * rdma-core's does; an event not yet taken goes with the CQ, as the kernel's does. */
VB_API int ibv_destroy_cq(struct ibv_cq *cq)
{
    struct vb_cq *q = to_vb_cq(cq);
    int st;

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
        channel_unlist(to_vb_channel(cq->channel), q);    /* no waiter looks at it now */
    ndc_cq_cancel_overlapped_requests(q->core);
    if (!cq->channel) {
        pthread_mutex_lock(&cq->mutex);
        while (q->armed)
            pthread_cond_wait(&cq->cond, &cq->mutex);
        pthread_mutex_unlock(&cq->mutex);
    }
    st = ndc_cq_close(q->core);
    if (st != 0) {
        q->dying = false;
        return nd_errno_of(st);        /* a QP still uses it (EBUSY) */
    }
    if (cq->channel)
        channel_release(to_vb_channel(cq->channel), q);
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

static void channel_unlist(struct vb_channel *ch, struct vb_cq *q)
{
    pthread_mutex_lock(&ch->lock);
    for (struct vb_cq **p = &ch->cqs; *p; p = &(*p)->channel_next)
        if (*p == q) {
            *p = q->channel_next;
            break;
        }
    pthread_mutex_unlock(&ch->lock);
}

/*
 * The CQ leaves its channel. Its notify request, cancelled, is in the port's queue (taken
 * back out and freed), in a waiter's hands on its way to event_of (handed over: the waiter
 * frees it), or idle (freed). A waiter changes armed only under the channel's lock.
 */
static void channel_release(struct vb_channel *ch, struct vb_cq *q)
{
    struct vb_channel_notify *n = q->cnotify;

    pthread_mutex_lock(&ch->lock);
    if (nd_port_unqueue(ch->port, &n->ov) || !q->armed)
        free(n);
    else
        n->cq = NULL;
    q->cq.channel->refcnt--;
    pthread_mutex_unlock(&ch->lock);
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

/* A channel CQ's arm: the request completes on the channel's port (the CQ's). */
static int arm_channel_cq(struct vb_cq *q, uint32_t type)
{
    struct vb_channel_notify *n = q->cnotify;
    int err;

    memset(&n->ov, 0, sizeof(n->ov));
    err = nd_cq_arm_to_port(q->core, type, &n->ov);
    q->armed = err == 0;
    return -err;
}

/* ibv_req_notify_cq (through ops): arm once, for any completion or a solicited one. */
int vb_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
    struct vb_cq *q = to_vb_cq(cq);
    uint32_t type = solicited_only ? ND_CQ_NOTIFY_SOLICITED : ND_CQ_NOTIFY_ANY;
    int st;
    int err;

    pthread_mutex_lock(&cq->mutex);
    if (q->armed || q->dying) {
        pthread_mutex_unlock(&cq->mutex);
        return 0;                   /* armed already: the next completion gives one event */
    }
    if (cq->channel) {
        /* An event queued and not yet taken leaves it armed: that event covers it. */
        err = arm_channel_cq(q, type);
        pthread_mutex_unlock(&cq->mutex);
        return err;
    }
    /* Without a channel nobody hears of it: the event thread only disarms it. */
    err = vb_event_thread_start(vb_ctx(cq->context));
    if (err) {
        pthread_mutex_unlock(&cq->mutex);
        return err;
    }
    memset(&q->notify, 0, sizeof(q->notify));
    q->notify.done = notify_done;
    q->armed = true;
    st = ndc_cq_notify(q->core, type, &q->notify.ov);
    if (st != -EINPROGRESS)
        q->armed = false;
    pthread_mutex_unlock(&cq->mutex);
    return st == -EINPROGRESS ? 0 : nd_errno_of(st);
}
