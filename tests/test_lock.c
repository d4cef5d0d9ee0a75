// SPDX-License-Identifier: MIT
/*
 * The queue pair and CQ lock (src/core/lock.h). A lock one thread takes many times in a
 * row becomes biased to it (the fast path); a second thread revokes that for good, and
 * from then on both exclude each other: a read-pause-write counter updated by two threads
 * loses no update, over 200 locks each revoked while its owner hammers it. A trylock
 * never waits for a biased owner, and fails in the thread that holds the lock. ND_LOCK_BIAS=0 never biases. A forked child keeps using
 * the lock its forking thread was biased to.
 */
#include "t_util.h"
#include <netdirect/netdirect.h>
#include "core/lock.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>

#define ROUNDS 200
#define PER_THREAD 5000

struct shared {
    struct nd_lock lock;
    uint64_t counter;               /* only under the lock */
    atomic_int go, phase, result;
};

/* A read-modify-write with a window: two threads inside at once lose updates. */
static void bump(struct shared *s)
{
    uint64_t v = s->counter;

    for (volatile int i = 0; i < 20; i++)
        ;
    s->counter = v + 1;
}

static void take_bias(struct nd_lock *l)
{
    for (uint32_t i = 0; i <= ND_LOCK_BIAS_STREAK + 1; i++) {
        nd_lock_acquire(l);
        nd_lock_release(l);
    }
}

static bool biased_to_me(struct nd_lock *l)
{
    return atomic_load(&l->owner) == nd_lock_self();
}

static void *hammer(void *arg)
{
    struct shared *s = arg;

    while (!atomic_load(&s->go))
        ;
    for (int i = 0; i < PER_THREAD; i++) {
        nd_lock_acquire(&s->lock);
        bump(s);
        nd_lock_release(&s->lock);
    }
    return NULL;
}

static void revoke_under_contention(bool bias)
{
    for (int r = 0; r < ROUNDS; r++) {
        struct shared s = { .counter = 0 };
        pthread_t t;

        nd_lock_init(&s.lock);
        take_bias(&s.lock);
        CHECK(biased_to_me(&s.lock) == bias);
        CHECK(pthread_create(&t, NULL, hammer, &s) == 0);
        atomic_store(&s.go, 1);
        hammer(&s);
        pthread_join(t, NULL);
        CHECK(s.counter == 2ull * PER_THREAD);
        /* Whoever came second revoked the bias for good. */
        CHECK(atomic_load(&s.lock.owner) == NULL);
        nd_lock_destroy(&s.lock);
    }
}

static void *try_while_held(void *arg)
{
    struct shared *s = arg;

    atomic_store(&s->result, nd_lock_try(&s->lock));   /* the owner is inside: must fail */
    atomic_store(&s->phase, 1);
    while (atomic_load(&s->phase) != 2)
        ;
    /* The owner left: the revocation completes, the lock is ours, a mutex for good. */
    CHECK(nd_lock_try(&s->lock) == 0);
    CHECK(atomic_load(&s->lock.owner) == NULL);
    s->counter++;
    nd_lock_release(&s->lock);
    return NULL;
}

static void trylock_never_waits(void)
{
    struct shared s = { .counter = 0 };
    pthread_t t;

    nd_lock_init(&s.lock);
    take_bias(&s.lock);
    CHECK(biased_to_me(&s.lock));
    nd_lock_acquire(&s.lock);
    CHECK(nd_lock_try(&s.lock) != 0);       /* held by us: busy, as a mutex says, not re-entered */
    CHECK(pthread_create(&t, NULL, try_while_held, &s) == 0);
    while (atomic_load(&s.phase) != 1)      /* it returned while we are still inside */
        ;
    CHECK(atomic_load(&s.result) != 0);
    s.counter++;
    nd_lock_release(&s.lock);
    atomic_store(&s.phase, 2);
    pthread_join(t, NULL);
    nd_lock_acquire(&s.lock);               /* by the mutex now */
    CHECK(s.counter == 2);
    nd_lock_release(&s.lock);
    nd_lock_destroy(&s.lock);
}

static void child_keeps_bias(void)
{
    struct nd_lock l;
    int status;

    nd_lock_init(&l);
    take_bias(&l);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        nd_lock_acquire(&l);
        bool ok = biased_to_me(&l);
        nd_lock_release(&l);
        _exit(ok ? 0 : 1);
    }
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    nd_lock_destroy(&l);
}

/* In a child: the knob is read once per process. */
static void knob_off(void)
{
    int status;
    pid_t pid = fork();

    CHECK(pid >= 0);
    if (pid == 0) {
        struct nd_lock l;

        setenv("ND_LOCK_BIAS", "0", 1);
        nd_lock_init(&l);
        take_bias(&l);
        take_bias(&l);
        _exit(atomic_load(&l.owner) == NULL && !nd_lock_bias_available() ? 0 : 1);
    }
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(void)
{
    knob_off();     /* first: the knob is read once per process, and forks inherit it */
    bool bias = nd_lock_bias_available();

    revoke_under_contention(bias);
    if (!bias) {
        fprintf(stderr, "membarrier unavailable: locks are plain mutexes (checked); bias not tested\n");
        return T_SKIP;
    }
    trylock_never_waits();
    child_keeps_bias();
    return 0;
}
