/* SPDX-License-Identifier: MIT */
/*
 * An event queue behind a descriptor, as verbs completion channels and rdma_cm event
 * channels are: a list of events and an eventfd in semaphore mode holding one count per
 * queued event, so that applications poll the descriptor or make it non-blocking. A
 * reader takes one count, then the oldest event. Events of an owner that goes away are
 * taken out (forget); their counts stay, and a reader that finds a count without an event
 * reads again (or says EAGAIN on a non-blocking descriptor). Header-only: each front-end
 * library has its own copy.
 */
#ifndef ND_EVQ_H
#define ND_EVQ_H

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct nd_evq_node {
    struct nd_evq_node *next;
    const void *owner;
};

struct nd_evq {
    pthread_mutex_t lock;
    struct nd_evq_node *head, *tail;
    int fd;
};

typedef void (*nd_evq_fn)(struct nd_evq_node *n);

/* 0, or -1 with errno (no descriptor). */
static inline int nd_evq_init(struct nd_evq *q)
{
    q->head = q->tail = NULL;
    q->fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
    if (q->fd < 0)
        return -1;
    pthread_mutex_init(&q->lock, NULL);
    return 0;
}

/* @drop frees each event still queued. */
static inline void nd_evq_fini(struct nd_evq *q, nd_evq_fn drop)
{
    while (q->head) {
        struct nd_evq_node *n = q->head;

        q->head = n->next;
        drop(n);
    }
    close(q->fd);
    pthread_mutex_destroy(&q->lock);
}

/* Queue @n (its owner set); -1 when the count could not be written. */
static inline int nd_evq_push(struct nd_evq *q, struct nd_evq_node *n)
{
    uint64_t one = 1;

    n->next = NULL;
    pthread_mutex_lock(&q->lock);
    if (q->tail)
        q->tail->next = n;
    else
        q->head = n;
    q->tail = n;
    pthread_mutex_unlock(&q->lock);
    return write(q->fd, &one, sizeof(one)) == sizeof(one) ? 0 : -1;
}

/*
 * The oldest event, waiting for one unless the descriptor is non-blocking; NULL with errno
 * (EAGAIN, EINTR). @taken runs under the queue lock with the event: an owner's count of
 * delivered events goes up there, so that forget and delivery are ordered.
 */
static inline struct nd_evq_node *nd_evq_wait(struct nd_evq *q, nd_evq_fn taken)
{
    for (;;) {
        uint64_t v;
        struct nd_evq_node *n;

        if (read(q->fd, &v, sizeof(v)) != sizeof(v))
            return NULL;
        pthread_mutex_lock(&q->lock);
        n = q->head;
        if (n) {
            q->head = n->next;
            if (!q->head)
                q->tail = NULL;
            taken(n);
        }
        pthread_mutex_unlock(&q->lock);
        if (n)
            return n;
        if (fcntl(q->fd, F_GETFL) & O_NONBLOCK) {
            errno = EAGAIN;
            return NULL;
        }
    }
}

/* Take @owner's queued events out, each given to @drop. */
static inline void nd_evq_forget(struct nd_evq *q, const void *owner, nd_evq_fn drop)
{
    pthread_mutex_lock(&q->lock);
    q->tail = NULL;
    for (struct nd_evq_node **p = &q->head; *p;) {
        struct nd_evq_node *n = *p;

        if (n->owner == owner) {
            *p = n->next;
            drop(n);
        } else {
            q->tail = n;
            p = &n->next;
        }
    }
    pthread_mutex_unlock(&q->lock);
}

#endif
