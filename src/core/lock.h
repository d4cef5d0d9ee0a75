/* SPDX-License-Identifier: MIT */
/*
 * nd_lock: the queue pair and CQ locks. A mutex that, once one thread has taken it many
 * times in a row, becomes *biased* to that thread: the owner then enters and leaves with
 * plain loads and stores, no atomic read-modify-write. On this machine's CPUs each locked
 * instruction of a data-path lock costs a few ns and, worse, waits for the store buffer
 * (stores to the peer's lines): three lock pairs sit between a message's arrival and the
 * reply (CQ poll, receive post, Send).
 *
 * The owner's fast path is one half of Dekker's algorithm (store busy, load revoked) with
 * no fence in between; a second thread that wants the lock takes the mutex, stores
 * revoked and runs membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), which executes a full
 * barrier on every CPU running one of our threads: so either it sees the owner's busy and
 * waits for it to drop, or the owner sees revoked and takes the mutex. A revoked lock is a
 * plain mutex for good (a revocation costs a membarrier: tens of us when the other CPU is
 * busy). See lock.c.
 */
#ifndef ND_LOCK_H
#define ND_LOCK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Acquisitions in a row by one thread before a lock is biased to it: past connection set-up
 * (tens), so a queue pair set up by one thread and used by another is biased to the user,
 * and soon enough that short runs get the fast path too. */
#define ND_LOCK_BIAS_STREAK 128u

struct nd_lock {
    _Atomic(const void *) owner;    /* the thread it is biased to; NULL: none */
    _Atomic uint32_t busy;          /* the owner is inside by the fast path (owner writes) */
    _Atomic uint32_t revoked;       /* another thread wants in: the fast path is closed */
    /* Under the mutex: */
    uint8_t state;                  /* enum nd_lock_state, lock.c */
    uint32_t streak;                /* acquisitions in a row by @last */
    const void *last;
    pthread_mutex_t mutex;
};

/* A per-thread address: the identity a lock is biased to (initial-exec: two instructions). */
extern __thread char nd_lock_thread_mark __attribute__((tls_model("initial-exec")));

static inline const void *nd_lock_self(void)
{
    return &nd_lock_thread_mark;
}

void nd_lock_init(struct nd_lock *l);
void nd_lock_destroy(struct nd_lock *l);
void nd_lock_acquire_slow(struct nd_lock *l);
bool nd_lock_try_slow(struct nd_lock *l);
/* Is biasing on in this process (ND_LOCK_BIAS and membarrier)? For nd_info and tests. */
bool nd_lock_bias_available(void);

/*
 * Waiting out a lock's holder without taking it (a biased lock stays biased): a thread that
 * changed what holders read (a revoked registration) and then waits out every lock knows
 * that each holder since has seen the change. Before the waits, once for any number of
 * locks: a full fence after the change (a holder that enters from then on, by either path,
 * sees it), then, if any of the locks has an owner, nd_lock_fence_biased: biased owners
 * enter with no fence of their own, so their busy store may not be visible yet.
 */
static inline bool nd_lock_has_owner(const struct nd_lock *l)
{
    return atomic_load_explicit(&l->owner, memory_order_relaxed) != NULL;
}
void nd_lock_fence_biased(void);
void nd_lock_wait_out(struct nd_lock *l);

/* Is @l biased to another thread? Taking it from this one would revoke that for good. */
static inline bool nd_lock_biased_elsewhere(const struct nd_lock *l)
{
    const void *o = atomic_load_explicit(&l->owner, memory_order_relaxed);

    return o != NULL && o != nd_lock_self() && !atomic_load_explicit(&l->revoked, memory_order_relaxed);
}

/* Is the calling thread inside by the fast path? Only the owner writes busy, and it is 0
 * whenever the owner went by the mutex. */
static inline bool nd_lock_held_biased(struct nd_lock *l)
{
    return atomic_load_explicit(&l->owner, memory_order_relaxed) == nd_lock_self() &&
           atomic_load_explicit(&l->busy, memory_order_relaxed);
}

static inline bool nd_lock_enter_biased(struct nd_lock *l)
{
    if (atomic_load_explicit(&l->owner, memory_order_relaxed) != nd_lock_self())
        return false;
    atomic_store_explicit(&l->busy, 1, memory_order_relaxed);
    /* No CPU fence: the revoker's membarrier stands in for it. The compiler must still
     * keep the store above the load. */
    atomic_signal_fence(memory_order_seq_cst);
    if (!atomic_load_explicit(&l->revoked, memory_order_acquire))
        return true;
    atomic_store_explicit(&l->busy, 0, memory_order_release);
    return false;
}

static inline void nd_lock_acquire(struct nd_lock *l)
{
    if (!nd_lock_enter_biased(l))
        nd_lock_acquire_slow(l);
}

/* 0 on success, as pthread_mutex_trylock: also busy (not re-entered) when this thread
 * holds it already. Never waits, not even for a revocation. */
static inline int nd_lock_try(struct nd_lock *l)
{
    if (nd_lock_held_biased(l))
        return 1;
    return nd_lock_enter_biased(l) || nd_lock_try_slow(l) ? 0 : 1;
}

static inline void nd_lock_release(struct nd_lock *l)
{
    if (nd_lock_held_biased(l))
        atomic_store_explicit(&l->busy, 0, memory_order_release);
    else
        pthread_mutex_unlock(&l->mutex);
}

#endif
