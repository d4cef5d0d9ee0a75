// SPDX-License-Identifier: MIT
/*
 * The context's event thread: started by the first ibv_req_notify_cq or SRQ limit, it
 * waits on the context's port, where the core completes each armed CQ's notify request,
 * and queues the CQ's event on its channel; an SRQ's limit notify becomes an asynchronous
 * event. A program asleep in ibv_get_cq_event has nobody else to turn a completion into
 * the event it waits for. It also makes the connections of QPs moved to RTR with an address
 * vector (av.c), which must be served while the program waits elsewhere. No application
 * code runs on it.
 */
#include "verbs_int.h"

#include <errno.h>
#include <stddef.h>

static void *event_main(void *arg)
{
    struct vb_context *c = arg;

    for (;;) {
        nd_overlapped *ov = NULL;
        nd_status st = nd_port_wait(c->port, vb_av_tick(c), &ov);

        if (st == ND_TIMEOUT)
            continue;
        if (st != ND_SUCCESS || ov == &c->stop_ov)
            break;
        if (ov == &c->kick_ov) {
            __atomic_store_n(&c->kick_queued, false, __ATOMIC_RELEASE);
            continue;
        }
        if (ov->user_context == &vb_av_tag) {
            vb_av_completed(c, ov);
            continue;
        }
        st = nd_get_overlapped_result(ov, 0);
        if (ov->user_context == &vb_srq_limit_tag) {
            vb_srq_limit_fired(vb_srq_of_limit(ov), st);
            continue;
        }
        vb_cq_notified((struct vb_cq *)((char *)ov - offsetof(struct vb_cq, notify_ov)), st);
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
        nd_port_post(c->port, &c->kick_ov, ND_SUCCESS, 0);
}

/* At ibv_close_device: every CQ is gone, so nothing else is queued on the port. */
void vb_event_thread_stop(struct vb_context *c)
{
    if (!c->event_started)
        return;
    nd_port_post(c->port, &c->stop_ov, ND_SUCCESS, 0);
    pthread_join(c->event_thread, NULL);
    c->event_started = false;
}
