// SPDX-License-Identifier: MIT
#include "core.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int nd_futex_wait(uint32_t *word, uint32_t expect, int timeout_ms)
{
    struct timespec ts, *tsp = NULL;

    if (timeout_ms >= 0) {
        ts.tv_sec = timeout_ms / 1000;
        ts.tv_nsec = (long)(timeout_ms % 1000) * 1000000;
        tsp = &ts;
    }
    return (int)syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expect, tsp, NULL, 0);
}

int nd_futex_wake(uint32_t *word, int n)
{
    return (int)syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

int nd_thread_start(pthread_t *thread, void *(*fn)(void *), void *arg, const char *name)
{
    sigset_t all, old;

    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int err = pthread_create(thread, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!err)
        pthread_setname_np(*thread, name);
    return err;
}

/*
 * A memfd of @size bytes that peers map: sealed against shrinking and growing, so that a
 * peer's mapping can never run past the end of the file (a shrink would turn our next store
 * into the peer's region into SIGBUS). Returns the fd or -1.
 */
int nd_memfd_sealed(const char *name, size_t size)
{
    int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);

    if (fd < 0)
        return -1;
    if (ftruncate(fd, (off_t)size) < 0 ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* A peer's memfd we may map: sealed against shrinking and at least @size bytes long. Its
 * stat goes to @st for callers that identify the file too. */
bool nd_memfd_mappable(int fd, size_t size, struct stat *st)
{
    int seals = fcntl(fd, F_GET_SEALS);

    return seals >= 0 && (seals & F_SEAL_SHRINK) && fstat(fd, st) == 0 && (size_t)st->st_size >= size;
}

static inline uint64_t clock_ns(clockid_t clock)
{
    struct timespec ts;

    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t nd_now_ns(void)
{
    return clock_ns(CLOCK_MONOTONIC);
}

uint64_t nd_coarse_ns(void)
{
    return clock_ns(CLOCK_MONOTONIC_COARSE);
}

void *nd_with_room(void *arr, uint32_t *cap, uint32_t n, size_t size)
{
    void *grown;

    if (n < *cap)
        return arr;
    if ((grown = realloc(arr, (*cap * 2 + 8) * size)))
        *cap = *cap * 2 + 8;
    return grown;
}

static _Atomic uint32_t spinners;
static _Atomic uint32_t spinner_limit;

bool nd_spin_enter(void)
{
    uint32_t limit = atomic_load_explicit(&spinner_limit, memory_order_relaxed);

    if (!limit) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);

        limit = n >= 4 ? (uint32_t)n / 2 : 1;
        atomic_store_explicit(&spinner_limit, limit, memory_order_relaxed);
    }
    if (atomic_fetch_add(&spinners, 1) < limit)
        return true;
    atomic_fetch_sub(&spinners, 1);
    return false;
}

void nd_spin_leave(void)
{
    atomic_fetch_sub(&spinners, 1);
}

/* The nonce: drawn on first use; a fork child draws its own (the atfork hook forgets it). */
static pthread_mutex_t nonce_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t nonce;
static _Atomic bool nonce_drawn;

static void forget_nonce(void)
{
    atomic_store(&nonce_drawn, false);
}

uint64_t nd_process_nonce(void)
{
    static bool atfork_registered;  /* under nonce_lock */
    uint64_t v;

    if (atomic_load(&nonce_drawn))
        return atomic_load(&nonce);
    pthread_mutex_lock(&nonce_lock);
    if (!atomic_load(&nonce_drawn)) {
        if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v))
            v = (uint64_t)nd_now_ns() * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
        atomic_store(&nonce, v);
        if (!atfork_registered)
            atfork_registered = pthread_atfork(NULL, NULL, forget_nonce) == 0;
        atomic_store(&nonce_drawn, true);   /* after the nonce: readers check this first */
    }
    pthread_mutex_unlock(&nonce_lock);
    return atomic_load(&nonce);
}
