// SPDX-License-Identifier: MIT
/*
 * Remote atomics (verbs' fetch-and-add and compare-and-swap on 8 aligned bytes). Every
 * atomic aimed at a process's memory runs under one of that process's atomic locks, chosen
 * by the target address: a same-host peer's initiator takes it (shm executes the atomic
 * itself, with cross-memory calls or through a mapping of the memory), and the target's
 * own iwarp responder takes it for atomics that come over the wire. So atomics are atomic
 * with respect to one another whichever way they come (IBV_ATOMIC_HCA), though not with
 * respect to the target's own CPU stores, as on a NIC that reports that level.
 *
 * The locks live in one page per process: a sealed memfd kept open for the process's life,
 * named in entry 0 of each adapter's token table (never a token) so that a peer that maps
 * the adapter region finds it and maps it too. A lock word holds its holder's pid; a
 * holder that died with it held (a peer killed between its two cross-memory calls) is
 * found out and the lock taken over; one held past ND_ATOMIC_LOCK_WAIT_MS by a live
 * process fails the atomic rather than hang it.
 */
#include "atomic.h"
#include "log.h"
#include "mem_int.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define ND_ATOMIC_LOCK_WAIT_MS 2000u
#define SPINS_BEFORE_YIELD 256u
#define LIVENESS_EVERY_NS (10ull * 1000000)

static pthread_once_t page_once = PTHREAD_ONCE_INIT;
static struct nd_atomic_page *own_page;
static struct nd_mtab_share own_share;

static void page_create(void)
{
    struct stat st;
    int fd = nd_memfd_sealed("nd-atomic-locks", sizeof(struct nd_atomic_page));
    void *p;

    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0)
            close(fd);
        nd_log(ND_LOG_WARN, ND_SUB_CORE, "no atomic lock page: remote atomics refused");
        return;
    }
    p = mmap(NULL, sizeof(struct nd_atomic_page), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        close(fd);
        return;
    }
    own_page = p;
    nd_fd_publish(&(struct nd_fd_ref){ .fd = fd, .dev = (uint64_t)st.st_dev, .ino = (uint64_t)st.st_ino });
    /* The descriptor stays open: peers open it through /proc/<pid>/fd. */
    own_share = (struct nd_mtab_share){ .ino = (uint64_t)st.st_ino, .base = (uint64_t)st.st_dev,
                                        .size = sizeof(struct nd_atomic_page), .fd = fd };
}

struct nd_atomic_page *nd_atomic_own_page(void)
{
    pthread_once(&page_once, page_create);
    return own_page;
}

void nd_atomic_publish(struct nd_mtab_entry *entry0)
{
    if (!nd_atomic_own_page())
        return;
    /* Entry 0 is never a token (its token stays 0): its share names the page, base its
     * device. */
    __atomic_store_n(&entry0->share.fd, own_share.fd, __ATOMIC_RELAXED);
    __atomic_store_n(&entry0->share.base, own_share.base, __ATOMIC_RELAXED);
    __atomic_store_n(&entry0->share.size, own_share.size, __ATOMIC_RELAXED);
    __atomic_store_n(&entry0->share.ino, own_share.ino, __ATOMIC_RELEASE);
}

static _Atomic uint32_t *lock_word(struct nd_atomic_page *page, uint64_t addr)
{
    /* Neighbouring words of one cache line share a lock; lines spread over all of them. */
    return &page->lock[(addr >> 6) % ND_ATOMIC_LOCKS].word;
}

static bool holder_gone(uint32_t pid)
{
    return pid && kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

int nd_atomic_lock(struct nd_atomic_page *page, uint64_t addr, _Atomic uint32_t **held)
{
    _Atomic uint32_t *w = lock_word(page, addr);
    uint32_t me = (uint32_t)getpid(), spins = 0;
    uint64_t start = 0, checked = 0;

    for (;;) {
        uint32_t cur = 0;

        if (atomic_compare_exchange_weak_explicit(w, &cur, me, memory_order_acquire, memory_order_relaxed)) {
            *held = w;
            return 0;
        }
        if (++spins < SPINS_BEFORE_YIELD)
            continue;
        sched_yield();
        uint64_t now = nd_now_ns();

        if (!start)
            start = checked = now;
        if (now - checked >= LIVENESS_EVERY_NS) {
            checked = now;
            /* Its holder died holding it: take it over (the value it held is whatever its
             * last call left; an atomic that died half done is a peer's failure). */
            if (holder_gone(cur) &&
                atomic_compare_exchange_strong_explicit(w, &cur, me, memory_order_acquire, memory_order_relaxed)) {
                *held = w;
                return 0;
            }
        }
        if (now - start >= ND_ATOMIC_LOCK_WAIT_MS * 1000000ull)
            return -EDEADLK;        /* a general error: no RNIC status says "lock held" */
    }
}

void nd_atomic_unlock(_Atomic uint32_t *held)
{
    atomic_store_explicit(held, 0, memory_order_release);
}

uint64_t nd_atomic_result(uint8_t type, uint64_t old, uint64_t add_or_cmp, uint64_t swap)
{
    if (type == ND_REQUEST_TYPE_FETCH_ADD)
        return old + add_or_cmp;
    return old == add_or_cmp ? swap : old;
}

int nd_atomic_local(uint8_t type, uint64_t *target, uint64_t add_or_cmp, uint64_t swap, uint64_t *old)
{
    struct nd_atomic_page *page = nd_atomic_own_page();
    _Atomic uint32_t *held;
    int st;

    if (!page)
        return -EOPNOTSUPP;
    st = nd_atomic_lock(page, (uintptr_t)target, &held);
    if (st != 0)
        return st;
    *old = __atomic_load_n(target, __ATOMIC_RELAXED);
    __atomic_store_n(target, nd_atomic_result(type, *old, add_or_cmp, swap), __ATOMIC_RELAXED);
    nd_atomic_unlock(held);
    return 0;
}
