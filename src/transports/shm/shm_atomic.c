// SPDX-License-Identifier: MIT
/*
 * Remote atomics on shm: the initiator runs them on the peer's memory itself, under the
 * peer's atomic lock for the address (core/atomic.c), through a mapping of the memory when
 * it has one and otherwise with a cross-memory read and, when the value changes, a write.
 * The peer's lock page is found through entry 0 of its token table and mapped once per
 * connection; nothing in it is trusted but a lock word (a hostile holder delays or fails
 * atomics on its own memory, nothing else).
 */
#include "shm.h"
#include "core/atomic.h"
#include "core/log.h"
#include "core/mem_int.h"

#include <errno.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

struct nd_atomic_page *shm_atomic_locks(pid_t pid, const struct nd_mtab_entry *entry0)
{
    struct nd_fd_ref ref = { .fd = __atomic_load_n(&entry0->share.fd, __ATOMIC_RELAXED),
                             .dev = __atomic_load_n(&entry0->share.base, __ATOMIC_RELAXED),
                             .ino = __atomic_load_n(&entry0->share.ino, __ATOMIC_ACQUIRE) };
    struct stat st;
    void *p = MAP_FAILED;
    int fd;

    if (!ref.ino || __atomic_load_n(&entry0->share.size, __ATOMIC_RELAXED) != sizeof(struct nd_atomic_page))
        return NULL;
    fd = nd_fd_fetch(pid, &ref);
    if (fd < 0)
        return NULL;
    if (nd_memfd_mappable(fd, sizeof(struct nd_atomic_page), &st))
        p = mmap(NULL, sizeof(struct nd_atomic_page), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        nd_log(ND_LOG_INFO, ND_SUB_SHM, "peer %d's atomic locks cannot be mapped: its atomics fail", (int)pid);
        return NULL;
    }
    return p;
}

void shm_atomic_unmap(struct nd_atomic_page *locks)
{
    if (locks)
        munmap(locks, sizeof(*locks));
}

/* The peer's 8 bytes at @addr to or from @v: 0, or -ECONNABORTED (the peer is gone) or
 * -EFAULT. */
static int cma_word(pid_t pid, uint64_t addr, uint64_t *v, bool to_peer)
{
    struct iovec local = { v, sizeof(*v) }, remote = { (void *)(uintptr_t)addr, sizeof(*v) };
    ssize_t n = to_peer ? process_vm_writev(pid, &local, 1, &remote, 1, 0) : process_vm_readv(pid, &local, 1, &remote, 1, 0);

    if (n == (ssize_t)sizeof(*v))
        return 0;
    return n < 0 && errno == ESRCH ? -ECONNABORTED : -EFAULT;
}

int shm_atomic_run(pid_t pid, struct nd_atomic_page *locks, uint8_t *view, const struct nd_wr *wr, uint64_t *old)
{
    _Atomic uint32_t *held;
    uint64_t now;
    int st = nd_atomic_lock(locks, wr->remote_addr, &held);

    if (st != 0)
        return st;
    if (view) {
        *old = __atomic_load_n((uint64_t *)view, __ATOMIC_RELAXED);
        __atomic_store_n((uint64_t *)view, nd_atomic_result(wr->atomic, *old, wr->add_or_cmp, wr->swap),
                         __ATOMIC_RELAXED);
    } else if ((st = cma_word(pid, wr->remote_addr, old, false)) == 0) {
        now = nd_atomic_result(wr->atomic, *old, wr->add_or_cmp, wr->swap);
        if (now != *old)
            st = cma_word(pid, wr->remote_addr, &now, true);
    }
    nd_atomic_unlock(held);
    return st;
}
