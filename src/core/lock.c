// SPDX-License-Identifier: MIT
/*
 * nd_lock's slow path: the mutex, the streak that biases a lock, and revocation (lock.h
 * has the protocol). States change only under the mutex.
 */
#include "lock.h"
#include "core.h"
#include "env.h"
#include "log.h"

#include <linux/membarrier.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

enum nd_lock_state {
    ND_LOCK_COUNTING,   /* a mutex, counting streaks */
    ND_LOCK_BIASED,     /* owner set, fast path open */
    ND_LOCK_REVOKING,   /* revoked stored and membarrier run; the owner may still be inside */
    ND_LOCK_MUTEX,      /* a mutex for good */
};

__thread char nd_lock_thread_mark __attribute__((tls_model("initial-exec")));

/* -1 until the first call; then 1 (ND_LOCK_BIAS and membarrier allow it) or 0. Asked on
 * every lock's first bias, so no system call once decided (getpid() is one). A forked
 * child inherits the registration with the answer. */
static _Atomic int bias_state = -1;

static long membarrier(int cmd)
{
    return syscall(SYS_membarrier, cmd, 0, 0);
}

bool nd_lock_bias_available(void)
{
    int st = atomic_load_explicit(&bias_state, memory_order_acquire);

    if (st >= 0)
        return st;
    st = strcmp(nd_env(ND_KNOB_LOCK_BIAS), "0") != 0;
    if (st && membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0) {
        nd_log(ND_LOG_INFO, ND_SUB_CORE, "membarrier unavailable (%m): locks are never biased");
        st = 0;
    }
    atomic_store_explicit(&bias_state, st, memory_order_release);
    return st;
}

void nd_lock_init(struct nd_lock *l)
{
    memset(l, 0, sizeof(*l));
    pthread_mutex_init(&l->mutex, NULL);
    l->state = ND_LOCK_COUNTING;
}

void nd_lock_destroy(struct nd_lock *l)
{
    pthread_mutex_destroy(&l->mutex);
}

/*
 * Mutex held. Close the fast path: after the membarrier, the owner either has stored busy
 * where we see it or will see revoked. Returns false if the owner is still inside and
 * @may_wait is false (a trylock: the owner may be waiting for something its caller holds).
 */
static bool revoke_bias(struct nd_lock *l, bool may_wait)
{
    if (l->state == ND_LOCK_BIASED) {
        atomic_store_explicit(&l->revoked, 1, memory_order_relaxed);
        /* Registered before the lock was biased (forks inherit it), so this cannot fail;
         * if it did anyway, register and retry, and failing that wait a millisecond, far
         * longer than any store buffer takes to drain. */
        if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0 &&
            (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0 ||
             membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0))
            usleep(1000);
        l->state = ND_LOCK_REVOKING;
    }
    while (atomic_load_explicit(&l->busy, memory_order_acquire)) {
        if (!may_wait)
            return false;
        sched_yield();
    }
    atomic_store_explicit(&l->owner, NULL, memory_order_relaxed);
    l->state = ND_LOCK_MUTEX;
    nd_log(ND_LOG_DEBUG, ND_SUB_CORE, "lock %p: bias revoked", (void *)l);
    return true;
}

/* Mutex held: count the streak, bias at its end. */
static void count_streak(struct nd_lock *l)
{
    const void *self = nd_lock_self();

    if (l->last != self) {
        l->last = self;
        l->streak = 0;
        return;
    }
    if (++l->streak < ND_LOCK_BIAS_STREAK)
        return;
    if (!nd_lock_bias_available()) {
        l->state = ND_LOCK_MUTEX;
        return;
    }
    /* Our own release of this acquisition goes by the mutex: busy is 0. */
    l->state = ND_LOCK_BIASED;
    atomic_store_explicit(&l->owner, self, memory_order_relaxed);
}

static bool after_mutex(struct nd_lock *l, bool may_wait)
{
    switch (l->state) {
    case ND_LOCK_COUNTING:
        count_streak(l);
        return true;
    case ND_LOCK_BIASED:
    case ND_LOCK_REVOKING:
        return revoke_bias(l, may_wait);
    default:
        return true;
    }
}

void nd_lock_acquire_slow(struct nd_lock *l)
{
    pthread_mutex_lock(&l->mutex);
    after_mutex(l, true);
}

bool nd_lock_try_slow(struct nd_lock *l)
{
    if (pthread_mutex_trylock(&l->mutex))
        return false;
    if (after_mutex(l, false))
        return true;
    pthread_mutex_unlock(&l->mutex);
    return false;
}

void nd_lock_fence_biased(void)
{
    if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0)
        usleep(1000);               /* as in revoke_bias: far longer than a store buffer takes */
}

void nd_lock_wait_out(struct nd_lock *l)
{
    /* A biased owner inside: it leaves with a plain store of 0. It may come back at once,
     * and waiting for that later visit too is harmless, only longer. */
    for (uint32_t spins = 0; atomic_load_explicit(&l->owner, memory_order_relaxed) &&
                             atomic_load_explicit(&l->busy, memory_order_acquire); spins++) {
        if (spins < 1000)
            nd_cpu_relax();
        else
            sched_yield();
    }
    /* Anyone inside by the mutex. */
    pthread_mutex_lock(&l->mutex);
    pthread_mutex_unlock(&l->mutex);
}
