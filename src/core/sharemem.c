// SPDX-License-Identifier: MIT
/*
 * Memory same-host peers can map (ndc_alloc_memory): each allocation is its own sealed
 * memfd, mapped shared. A region registered inside one publishes the memfd's number and
 * inode in its token-table entry; a peer opens it through /proc/<pid>/fd once, maps it,
 * and from then on moves Read and Write data with memcpy instead of a cross-memory system
 * call (shm_data.c). The role MPI_Alloc_mem plays for MPI libraries over RDMA.
 *
 * The table is process-wide (memory is not an adapter's), under one mutex: allocation,
 * free and registration are control-path calls.
 */
#include "mem_int.h"
#include "log.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct share_alloc {
    uintptr_t base;
    size_t size;
    int fd;
    uint64_t ino;
    uint32_t regions;               /* registered regions inside: free waits for none */
};

static pthread_mutex_t shares_lock = PTHREAD_MUTEX_INITIALIZER;
static struct share_alloc *shares;
static uint32_t nshares, cap_shares;

static struct share_alloc *find_locked(uintptr_t addr, size_t len)
{
    for (uint32_t i = 0; i < nshares; i++)
        if (addr >= shares[i].base && addr - shares[i].base <= shares[i].size &&
            len <= shares[i].size - (addr - shares[i].base))
            return &shares[i];
    return NULL;
}

static bool add_locked(const struct share_alloc *s)
{
    struct share_alloc *n = nd_with_room(shares, &cap_shares, nshares, sizeof(*n));

    if (!n)
        return false;
    shares = n;
    shares[nshares++] = *s;
    return true;
}

ND_DOOR int ndc_alloc_memory(size_t size, void **out)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    struct share_alloc s = { 0 };
    struct stat st;
    void *p;

    if (!out)
        return ND_EARG(2);
    *out = NULL;
    if (size == 0 || size > nd_caps.max_mr_size)
        return ND_EARG(1);
    s.size = (size + page - 1) & ~(page - 1);
    s.fd = nd_memfd_sealed("netdirect-shared", s.size);
    if (s.fd < 0)
        return -ENOMEM;
    p = mmap(NULL, s.size, PROT_READ | PROT_WRITE, MAP_SHARED, s.fd, 0);
    if (p == MAP_FAILED || fstat(s.fd, &st) < 0) {
        if (p != MAP_FAILED)
            munmap(p, s.size);
        close(s.fd);
        return -ENOMEM;
    }
    s.base = (uintptr_t)p;
    s.ino = (uint64_t)st.st_ino;
    pthread_mutex_lock(&shares_lock);
    bool added = add_locked(&s);
    pthread_mutex_unlock(&shares_lock);
    if (!added) {
        munmap(p, s.size);
        close(s.fd);
        return -ENOMEM;
    }
    *out = p;
    return 0;
}

ND_DOOR int ndc_free_memory(void *p)
{
    int st = -EINVAL;

    pthread_mutex_lock(&shares_lock);
    for (uint32_t i = 0; i < nshares; i++) {
        if (shares[i].base != (uintptr_t)p)
            continue;
        if (shares[i].regions) {
            st = -EBUSY;
            break;
        }
        munmap(p, shares[i].size);
        close(shares[i].fd);
        shares[i] = shares[--nshares];
        st = 0;
        break;
    }
    pthread_mutex_unlock(&shares_lock);
    return st;
}

void nd_share_claim(uintptr_t addr, size_t len, struct nd_mtab_share *out)
{
    struct share_alloc *s;

    *out = (struct nd_mtab_share){ .fd = -1 };
    pthread_mutex_lock(&shares_lock);
    s = find_locked(addr, len);
    if (s) {
        s->regions++;
        *out = (struct nd_mtab_share){ .ino = s->ino, .base = s->base, .size = s->size, .fd = s->fd };
    }
    pthread_mutex_unlock(&shares_lock);
}

void nd_share_release(uintptr_t base)
{
    pthread_mutex_lock(&shares_lock);
    for (uint32_t i = 0; i < nshares; i++)
        if (shares[i].base == base && shares[i].regions) {
            shares[i].regions--;
            break;
        }
    pthread_mutex_unlock(&shares_lock);
}
