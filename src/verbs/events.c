// SPDX-License-Identifier: MIT
/*
 * The context's events. Its event thread, started by the first ibv_req_notify_cq of a CQ
 * without a channel, SRQ limit or QP moved to RTR with an address vector, waits on the
 * context's port and runs the handler each completed request carries (struct vb_work): a
 * channel-less CQ's notify disarms it (cq.c), an SRQ's limit raises an asynchronous event
 * (srq.c), the AV machinery's connections go on (av.c), which must be served while the
 * program waits elsewhere. (A CQ with a channel lives on the channel's own port, where
 * ibv_get_cq_event takes its events itself.) No application code runs on it. And the
 * asynchronous events themselves (ibv_get_async_event).
 */
#include "verbs_int.h"
#include "core/log.h"

#include <errno.h>
#include <stddef.h>
#include <unistd.h>

static void *event_main(void *arg)
{
    struct vb_context *c = arg;

    for (;;) {
        nd_overlapped *ov = NULL;
        int (*tick)(struct vb_context *) = __atomic_load_n(&c->event_tick, __ATOMIC_ACQUIRE);
        int st = ndc_port_wait(c->port, tick ? tick(c) : -1, &ov);

        if (st == -ETIME)
            continue;
        if (st != 0 || ov == &c->stop_ov)
            break;
        if (ov == &c->kick_ov) {
            __atomic_store_n(&c->kick_queued, false, __ATOMIC_RELEASE);
            continue;
        }
        struct vb_work *w = vb_container_of(ov, struct vb_work, ov);

        w->done(w, ndc_get_overlapped_result(ov, 0));
    }
    return NULL;
}

int vb_event_thread_start(struct vb_context *c)
{
    int err = 0;

    pthread_mutex_lock(&c->event_lock);
    if (!c->event_started) {
        err = nd_thread_start(&c->event_thread, event_main, c, "nd-verbs-ev") ? EAGAIN : 0;
        c->event_started = !err;
    }
    pthread_mutex_unlock(&c->event_lock);
    return err;
}

/* Make the thread look at its deadlines again (one kick queued at a time). */
void vb_event_thread_kick(struct vb_context *c)
{
    if (!__atomic_exchange_n(&c->kick_queued, true, __ATOMIC_ACQ_REL))
        ndc_port_post(c->port, &c->kick_ov, 0, 0);
}

/* At ibv_close_device: every CQ is gone, so nothing else is queued on the port. */
void vb_event_thread_stop(struct vb_context *c)
{
    if (!c->event_started)
        return;
    ndc_port_post(c->port, &c->stop_ov, 0, 0);
    pthread_join(c->event_thread, NULL);
    c->event_started = false;
}

/* Events are whole records in a pipe (writes of at most PIPE_BUF bytes are atomic): the
 * descriptor is readable while one waits, and a read blocks, or says EAGAIN when the
 * application made it non-blocking. The write end never blocks the event thread: were
 * the application to leave thousands unread, the newest would be lost, and logged. */
void vb_async_push(struct vb_context *c, const struct ibv_async_event *ev)
{
    if (write(c->async_pipe[1], ev, sizeof(*ev)) != (ssize_t)sizeof(*ev))
        nd_log(ND_LOG_WARN, ND_SUB_VERBS, "verbs: asynchronous event %d lost (unread events fill the queue)",
               (int)ev->event_type);
}

VB_API int ibv_get_async_event(struct ibv_context *ctx, struct ibv_async_event *event)
{
    if (!ctx || !event)
        return -1;
    if (read(ctx->async_fd, event, sizeof(*event)) != (ssize_t)sizeof(*event))
        return -1;
    return 0;
}

/* An SRQ's destruction waits until its events are acknowledged. */
VB_API void ibv_ack_async_event(struct ibv_async_event *event)
{
    struct ibv_srq *srq;

    if (!event || event->event_type != IBV_EVENT_SRQ_LIMIT_REACHED)
        return;
    srq = event->element.srq;
    pthread_mutex_lock(&srq->mutex);
    srq->events_completed++;
    pthread_cond_broadcast(&srq->cond);
    pthread_mutex_unlock(&srq->mutex);
}
