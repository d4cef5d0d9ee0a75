// SPDX-License-Identifier: MIT
/*
 * Adapters. Each open adapter owns one shared region (a memfd) that peers may map
 * read-only: the arm words of its CQs, then its token table (memory regions and
 * windows). Everything a peer may write lives elsewhere, per connection.
 */
#include "core.h"
#include "lock.h"
#include "transport.h"
#include "log.h"
#include "mem_int.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * Limits, chosen so that every maximum can be used at once (ndqpmaxall): a QP with the
 * largest queues and SGE counts is a few MiB of rings. Receive and initiator depths are
 * equal (ND samples assume so). Private data fits MPA's 256 bytes with the 4-byte IRD/ORD
 * block. The inline threshold is the payload of one shared-memory slot.
 */
const struct nd_caps nd_caps = {
    .vendor_id = 0x4e44,
    .device_id = 0x0002,
    .max_mr_size = (uint64_t)1 << 40,
    .max_mw_size = (uint64_t)1 << 40,
    .max_send_sge = 32,
    .max_recv_sge = 32,
    .max_read_sge = 32,
    .max_msg_size = 1u << 30,
    .max_inline = 256,
    .max_ird = 64,
    .max_ord = 64,
    .max_recv_wr = 16384,
    .max_send_wr = 16384,
    .max_srq_wr = 16384,
    /* A CQ holds no per-entry storage (completions wait in the queue pairs' rings), so its
     * depth is only the overflow bound; libfabric's rxm sizes one CQ for 256 peers. */
    .max_cqe = 4194303,
    .max_qp = 16384,
    .max_srq = 16384,
    .max_pd = 1024,
    .max_cq = ND_MAX_CQS_PER_ADAPTER,
    .max_mr = ND_MTAB_ENTRIES,
    .max_connect_pdata = 252,
    .max_accept_pdata = 252,
    .inline_threshold = 256,
    .large_threshold = 16384,
};

#define ARM_AREA_BYTES ND_ADAPTER_ARM_BYTES
#define MTAB_BYTES ((size_t)ND_MTAB_ENTRIES * sizeof(struct nd_mtab_entry))
_Static_assert(ARM_AREA_BYTES + MTAB_BYTES == ND_ADAPTER_REGION_BYTES, "adapter region layout");

bool nd_adapter_valid(const struct nd_adapter *a)
{
    return a && a->magic == ND_MAGIC_ADAPTER;
}

void nd_adapter_ref(struct nd_adapter *a)
{
    atomic_fetch_add(&a->refs, 1);
}

static void adapter_destroy(struct nd_adapter *a)
{
    for (const struct nd_transport_ops *const *t = nd_transports; *t; t++)
        if ((*t)->adapter_close)
            (*t)->adapter_close(a);
    a->magic = ND_MAGIC_DEAD;
    nd_huge_stop(a);
    nd_arena_destroy(a);
    for (uint32_t i = 0; i < a->nspare_ports; i++)
        close(a->spare_ports[i].fd);
    if (a->ro_fd >= 0)
        close(a->ro_fd);
    munmap(a->shm, a->shm_size);
    close(a->shm_fd);
    free(a->arm_used);
    nd_mtab_destroy(a);
    pthread_mutex_destroy(&a->lock);
    pthread_mutex_destroy(&a->users_lock);
    free(a);
}

void nd_adapter_unref(struct nd_adapter *a)
{
    if (atomic_fetch_sub(&a->refs, 1) == 1)
        adapter_destroy(a);
}

static int shared_region_create(struct nd_adapter *a)
{
    a->shm_size = ARM_AREA_BYTES + MTAB_BYTES;
    a->shm_fd = nd_memfd_sealed("netdirect-adapter", a->shm_size);
    if (a->shm_fd < 0)
        return -ENOBUFS;
    a->shm = mmap(NULL, a->shm_size, PROT_READ | PROT_WRITE, MAP_SHARED, a->shm_fd, 0);
    if (a->shm == MAP_FAILED)
        goto err;
    a->arm_area = (_Atomic uint32_t *)a->shm;
    a->mtab = (struct nd_mtab_entry *)(a->shm + ARM_AREA_BYTES);
    return 0;
err:
    nd_log(ND_LOG_ERROR, ND_SUB_CORE, "adapter shared region: %m");
    close(a->shm_fd);
    return -ENOBUFS;
}

ND_DOOR int ndc_open_adapter(uint64_t adapter_id, nd_adapter **out)
{
    unsigned ifindex = (unsigned)(adapter_id & 0xffffffffu);

    if (!out)
        return ND_EARG(2);
    if (nd_adapter_id_for_ifindex(ifindex) != adapter_id || !nd_ifindex_exists(ifindex))
        return -EINVAL;
    return nd_adapter_create(ifindex, out);
}

int nd_adapter_create(unsigned ifindex, struct nd_adapter **out)
{
    struct nd_adapter *a;
    uint64_t adapter_id = nd_adapter_id_for_ifindex(ifindex);
    int st;

    /* The lock bias's one-time membarrier registration, here rather than in the middle of
     * a data path's first few hundred messages. */
    (void)nd_lock_bias_available();
    a = calloc(1, sizeof(*a));
    if (!a)
        return -ENOMEM;
    a->arm_used = calloc(ND_MAX_CQS_PER_ADAPTER, 1);
    if (!a->arm_used) {
        free(a);
        return -ENOMEM;
    }
    st = shared_region_create(a);
    if (st == 0)
        st = nd_mtab_init(a);
    if (st != 0) {
        if (a->shm && a->shm != MAP_FAILED) {
            munmap(a->shm, a->shm_size);
            close(a->shm_fd);
        }
        free(a->arm_used);
        free(a);
        return st;
    }
    pthread_mutex_init(&a->lock, NULL);
    pthread_mutex_init(&a->users_lock, NULL);
    a->users.prev = a->users.next = &a->users;
    a->ro_fd = -1;
    atomic_init(&a->refs, 1);
    a->id = adapter_id;
    a->ifindex = ifindex;
    a->magic = ND_MAGIC_ADAPTER;
    *out = a;
    return 0;
}

ND_DOOR int ndc_open_adapter_by_address(const struct sockaddr *addr, uint32_t addr_len,
                                        nd_adapter **adapter)
{
    uint64_t id;
    int st = ndc_resolve_address(addr, addr_len, &id);

    return st == 0 ? ndc_open_adapter(id, adapter) : st;
}

ND_DOOR int ndc_adapter_close(nd_adapter *a)
{
    if (!nd_adapter_valid(a) || a->closed)
        return -EBADF;
    a->closed = true;
    nd_adapter_unref(a);
    return 0;
}

int nd_adapter_arm_alloc(struct nd_adapter *a, uint32_t *slot)
{
    int st = -ENOBUFS;

    pthread_mutex_lock(&a->lock);
    for (uint32_t n = 0; n < ND_MAX_CQS_PER_ADAPTER; n++) {
        uint32_t i = (a->arm_hint + n) % ND_MAX_CQS_PER_ADAPTER;

        if (!a->arm_used[i]) {
            a->arm_used[i] = 1;
            a->arm_hint = i + 1;
            *slot = i;
            st = 0;
            break;
        }
    }
    pthread_mutex_unlock(&a->lock);
    return st;
}

void nd_adapter_arm_free(struct nd_adapter *a, uint32_t slot)
{
    pthread_mutex_lock(&a->lock);
    a->arm_used[slot] = 0;
    pthread_mutex_unlock(&a->lock);
}

int nd_adapter_export_ro_fd(struct nd_adapter *a)
{
    char path[64];

    /* Re-opening the memfd read-only gives a description a peer can only map PROT_READ. */
    snprintf(path, sizeof(path), "/proc/self/fd/%d", a->shm_fd);
    return open(path, O_RDONLY | O_CLOEXEC);
}

int nd_adapter_ro_fd(struct nd_adapter *a)
{
    int fd;

    pthread_mutex_lock(&a->lock);
    if (a->ro_fd < 0 && (a->ro_fd = nd_adapter_export_ro_fd(a)) >= 0 && !nd_fd_ref_of(a->ro_fd, &a->ro_ref)) {
        close(a->ro_fd);
        a->ro_fd = -1;
    }
    fd = a->ro_fd;
    pthread_mutex_unlock(&a->lock);
    return fd;
}

bool nd_adapter_ro_ref(struct nd_adapter *a, struct nd_fd_ref *ref)
{
    if (nd_adapter_ro_fd(a) < 0)
        return false;
    *ref = a->ro_ref;   /* set once, before ro_fd was published under the lock */
    return true;
}

