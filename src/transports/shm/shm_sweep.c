// SPDX-License-Identifier: MIT
/*
 * The held-send sweeper: one thread per adapter, started by the first Send that had to
 * wait for a peer's receive, asleep while no queue pair holds one. It retries the held
 * Sends (and times them out) every SWEEP_MS, so they go out, or fail, without the
 * application polling or blocking in our calls: the peer's receive may come while the
 * application does something else entirely.
 *
 * It leaves alone a queue pair whose CQs were polled since its last look (the poller
 * retries the held Sends itself, with no system call and no contention for its lock).
 *
 * Locks: the sweeper holds its own lock while it walks the list and takes each queue
 * pair's lock only by trylock (busy: next round). A queue pair leaves the list with its
 * own lock held (shm_sweep_forget, from destroy), which waits for the sweeper's lock; the
 * sweeper never waits for a queue pair's lock while it holds its own.
 */
#include "shm.h"
#include "core/log.h"

#include <errno.h>
#include <string.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define SWEEP_MS 1

struct shm_sweeper {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    struct nd_qp **qps;             /* queue pairs holding sends; under lock */
    uint32_t n, cap;
    bool stop;
    pid_t pid;                      /* the thread exists only in this process (not in a fork child) */
    const struct shm_sweep_client *client;  /* set before the first queue pair is listed */
};

static void *sweep_main(void *arg)
{
    struct shm_sweeper *s = arg;

    pthread_mutex_lock(&s->lock);
    while (!s->stop) {
        if (!s->n) {
            pthread_cond_wait(&s->wake, &s->lock);
            continue;
        }
        for (uint32_t i = 0; i < s->n;) {
            struct nd_qp *qp = s->qps[i];
            bool keep = true;

            if (s->client->left_alone(qp) && nd_lock_try(&qp->lock) == 0) {
                keep = s->client->once(qp);
                nd_lock_release(&qp->lock);
            }
            if (keep)
                i++;
            else
                s->qps[i] = s->qps[--s->n];
        }
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += SWEEP_MS * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&s->wake, &s->lock, &ts);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* The adapter's sweeper, started on first use; NULL when it cannot be (the queue pair
 * then moves only when its application calls in, as before). Adapter lock taken. */
static struct shm_sweeper *sweeper_of(struct nd_adapter *a)
{
    struct shm_sweeper *s;

    pthread_mutex_lock(&a->lock);
    s = __atomic_load_n(&a->transport_state[ND_SLOT_SHM], __ATOMIC_RELAXED);
    if (s && s->pid != getpid())
        s = NULL;                   /* a fork child: no sweeper (its lock's state unknown) */
    else if (!s && (s = calloc(1, sizeof(*s)))) {
        s->pid = getpid();
        pthread_mutex_init(&s->lock, NULL);
        pthread_cond_init(&s->wake, NULL);
        if (nd_thread_start(&s->thread, sweep_main, s, "nd-shm-sweep")) {
            nd_log(ND_LOG_WARN, ND_SUB_SHM, "no held-send sweeper: %s", strerror(errno));
            pthread_cond_destroy(&s->wake);
            pthread_mutex_destroy(&s->lock);
            free(s);
            s = NULL;
        }
        __atomic_store_n(&a->transport_state[ND_SLOT_SHM], s, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&a->lock);
    return s;
}

void shm_sweep_watch(struct nd_qp *qp, const struct shm_sweep_client *client)
{
    struct shm_sweeper *s = sweeper_of(qp->adapter);

    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    s->client = client;
    for (uint32_t i = 0; i < s->n; i++)
        if (s->qps[i] == qp) {
            pthread_mutex_unlock(&s->lock);
            return;
        }
    struct nd_qp **grown = nd_with_room(s->qps, &s->cap, s->n, sizeof(*grown));

    if (grown) {
        s->qps = grown;
        s->qps[s->n++] = qp;
        pthread_cond_signal(&s->wake);
    }
    pthread_mutex_unlock(&s->lock);
}

void shm_sweep_forget(struct nd_qp *qp)
{
    struct shm_sweeper *s = __atomic_load_n(&qp->adapter->transport_state[ND_SLOT_SHM], __ATOMIC_ACQUIRE);

    if (!s || s->pid != getpid())
        return;
    pthread_mutex_lock(&s->lock);
    for (uint32_t i = 0; i < s->n; i++)
        if (s->qps[i] == qp) {
            s->qps[i] = s->qps[--s->n];
            break;
        }
    pthread_mutex_unlock(&s->lock);
}

void shm_adapter_close(struct nd_adapter *a)
{
    struct shm_sweeper *s = a->transport_state[ND_SLOT_SHM];

    if (!s)
        return;
    a->transport_state[ND_SLOT_SHM] = NULL;
    if (s->pid != getpid()) {
        free(s->qps);               /* a fork child: no thread to stop, the lock's state unknown */
        free(s);
        return;
    }
    pthread_mutex_lock(&s->lock);
    s->stop = true;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->lock);
    free(s->qps);
    free(s);
}
