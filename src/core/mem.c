// SPDX-License-Identifier: MIT
/* Memory regions and memory windows. */
#include "mem_int.h"
#include "log.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

struct nd_mr {
    uint32_t magic;
    struct nd_adapter *adapter;
    struct nd_ovobj ov;
    pthread_mutex_t lock;
    bool registered;
    uint32_t index;
    uint32_t token;
    atomic_uint bound_windows;
    struct nd_mtab_share share;     /* ino 0 unless inside an nd_alloc_memory allocation */
    bool huge_queued;               /* blocks handed to the adapter's huge page thread */
    uint64_t addr, len;             /* while registered */
    uint16_t pd;                    /* protection domain (verbs; 0 for ND) */
};

struct nd_mw {
    uint32_t magic;
    struct nd_adapter *adapter;
    uint32_t index;
    uint32_t token;             /* of the current (or last) binding */
    struct nd_mr *bound_to;     /* NULL while invalid */
    uint16_t pd;                /* protection domain (verbs; 0 for ND) */
};

void nd_mr_set_pd(nd_mr *mr, uint16_t pd)
{
    mr->pd = pd;
}

uint16_t nd_mr_pd(const nd_mr *mr)
{
    return mr->pd;
}

void nd_mw_set_pd(nd_mw *mw, uint16_t pd)
{
    mw->pd = pd;
}

uint16_t nd_mw_pd(const nd_mw *mw)
{
    return mw->pd;
}

#define MR_FLAGS_KNOWN (ND_MR_FLAG_ALLOW_LOCAL_WRITE | ND_MR_FLAG_ALLOW_REMOTE_READ | \
                        ND_MR_FLAG_ALLOW_REMOTE_WRITE | ND_MR_FLAG_RDMA_READ_SINK | \
                        ND_MR_FLAG_DO_NOT_SECURE_VM)

static bool mr_valid(const struct nd_mr *mr)
{
    return mr && mr->magic == ND_MAGIC_MR;
}

ND_DOOR int ndc_adapter_create_memory_region(nd_adapter *a, nd_port *port, nd_mr **out)
{
    struct nd_mr *mr;

    if (!nd_adapter_valid(a))
        return -EBADF;
    if (!nd_port_valid(port))
        return ND_EARG(2);
    if (!out)
        return ND_EARG(3);
    mr = calloc(1, sizeof(*mr));
    if (!mr)
        return -ENOMEM;
    mr->adapter = a;
    nd_ovobj_init(&mr->ov, port, NULL);
    pthread_mutex_init(&mr->lock, NULL);
    nd_adapter_ref(a);
    nd_port_ref(port);
    mr->magic = ND_MAGIC_MR;
    *out = mr;
    return 0;
}

/* Is [buf, buf+len) mapped? msync(MS_ASYNC) checks the whole range in one call, no side effects. */
static bool range_mapped(const void *buf, size_t len)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t start = (uintptr_t)buf & ~(page - 1);
    uintptr_t end = (uintptr_t)buf + len;

    if (end < (uintptr_t)buf)
        return false;
    return msync((void *)start, end - start, MS_ASYNC) == 0 || errno != ENOMEM;
}

ND_DOOR int ndc_mr_register(nd_mr *mr, const void *buf, size_t len, uint32_t flags)
{
    return nd_mr_register_atomic(mr, buf, len, flags, false);
}

int nd_mr_register_atomic(nd_mr *mr, const void *buf, size_t len, uint32_t flags, bool atomic)
{
    int st;

    if (!mr_valid(mr))
        return -EBADF;
    if (!buf && len == 0)
        return -EINVAL;
    if (len == 0)
        return -ERANGE;
    if (len > nd_caps.max_mr_size)
        return -EINVAL;
    if (flags & ~MR_FLAGS_KNOWN)
        return ND_EARG(3);
    if (!buf || !range_mapped(buf, len))
        return -EFAULT;
    pthread_mutex_lock(&mr->lock);
    if (mr->registered) {
        st = -EBADFD;
    } else {
        st = nd_mtab_alloc(mr->adapter, ND_MTAB_MR, &mr->index);
        if (st == 0) {
            nd_share_claim((uintptr_t)buf, len, &mr->share);
            mr->token = nd_mtab_publish(mr->adapter, mr->index, (uintptr_t)buf, len,
                                        (flags & ~ND_MR_FLAG_DO_NOT_SECURE_VM) | (atomic ? ND_ACCESS_REMOTE_ATOMIC : 0),
                                        &mr->share, ND_KEY_NEXT, mr->pd);
            mr->registered = true;
            mr->addr = (uintptr_t)buf;
            mr->len = len;
            /* nd_alloc_memory is shared already: peers map it. */
            mr->huge_queued = !mr->share.ino && nd_huge_collapse_later(mr->adapter, mr, buf, len);
        }
    }
    pthread_mutex_unlock(&mr->lock);
    return st;
}

/*
 * Verbs' ibv_rereg_mr: the registration changes in place (range, rights, protection domain)
 * and keeps its token, as an RNIC's rereg keeps its keys. The entry is published anew
 * (peers and our checks see one or the other, never a mix: its seqlock); then, as for a
 * deregistration, nothing touches the old range through it once this returns.
 */
int nd_mr_reregister(nd_mr *mr, const void *buf, size_t len, uint32_t flags, bool atomic, uint16_t pd)
{
    struct nd_mtab_share old_share;
    uint64_t old_addr, old_len;
    int st = 0;

    if (!mr_valid(mr))
        return -EBADF;
    if (len == 0 || len > nd_caps.max_mr_size || (flags & ~MR_FLAGS_KNOWN))
        return -EINVAL;
    if (!buf || !range_mapped(buf, len))
        return -EFAULT;
    pthread_mutex_lock(&mr->lock);
    if (!mr->registered)
        st = -EBADFD;
    else if (atomic_load(&mr->bound_windows) != 0)
        st = -EBUSY;
    if (st != 0) {
        pthread_mutex_unlock(&mr->lock);
        return st;
    }
    if (mr->huge_queued)
        nd_huge_withdraw(mr->adapter, mr);
    old_share = mr->share;
    old_addr = mr->addr;
    old_len = mr->len;
    nd_share_claim((uintptr_t)buf, len, &mr->share);
    mr->pd = pd;
    mr->token = nd_mtab_publish(mr->adapter, mr->index, (uintptr_t)buf, len,
                                (flags & ~ND_MR_FLAG_DO_NOT_SECURE_VM) | (atomic ? ND_ACCESS_REMOTE_ATOMIC : 0),
                                &mr->share, ND_KEY_GIVEN | (mr->token & 0xffu), pd);
    mr->addr = (uintptr_t)buf;
    mr->len = len;
    mr->huge_queued = !mr->share.ino && nd_huge_collapse_later(mr->adapter, mr, buf, len);
    pthread_mutex_unlock(&mr->lock);
    nd_mem_barrier(mr->adapter, old_addr, old_len);
    if (old_share.ino)
        nd_share_release((uintptr_t)old_share.base);
    return 0;
}

/*
 * The token goes first, then the barrier waits out everything that could still be touching
 * the memory through it (ours and same-host peers', mem_barrier.c): when this returns,
 * nothing does, and nothing will. Only then may nd_free_memory have the memory back.
 */
static int mr_deregister(struct nd_mr *mr)
{
    struct nd_mtab_share share = { 0 };
    uint64_t addr = 0, len = 0;
    int st = 0;

    pthread_mutex_lock(&mr->lock);
    if (!mr->registered)
        st = -EBADFD;
    else if (atomic_load(&mr->bound_windows) != 0)
        st = -EBUSY;
    else {
        nd_mtab_free(mr->adapter, mr->index);
        if (mr->huge_queued)
            nd_huge_withdraw(mr->adapter, mr);
        mr->huge_queued = false;
        share = mr->share;
        mr->share.ino = 0;
        mr->registered = false;
        mr->token = 0;
        addr = mr->addr;
        len = mr->len;
    }
    pthread_mutex_unlock(&mr->lock);
    if (st != 0)
        return st;
    /* Not under the region's lock: a queue pair binding a window takes it under its own. */
    nd_mem_barrier(mr->adapter, addr, len);
    if (share.ino)
        nd_share_release((uintptr_t)share.base);
    return 0;
}

ND_DOOR int ndc_mr_deregister(nd_mr *mr)
{
    if (!mr_valid(mr))
        return -EBADF;
    return mr_deregister(mr);
}

ND_DOOR uint32_t ndc_mr_get_local_token(nd_mr *mr)
{
    return mr_valid(mr) ? mr->token : 0;
}

ND_DOOR uint32_t ndc_mr_get_remote_token(nd_mr *mr)
{
    return mr_valid(mr) ? mr->token : 0;
}

ND_DOOR int ndc_mr_cancel_overlapped_requests(nd_mr *mr)
{
    /* Register and Deregister complete synchronously, so nothing is ever pending here. */
    return mr_valid(mr) ? 0 : -EBADF;
}

ND_DOOR int ndc_mr_get_overlapped_result(nd_mr *mr, nd_overlapped *ov, int wait)
{
    if (!mr_valid(mr))
        return -EBADF;
    return ndc_get_overlapped_result(ov, wait);
}

ND_DOOR int ndc_mr_close(nd_mr *mr)
{
    if (!mr_valid(mr))
        return -EBADF;
    if (atomic_load(&mr->bound_windows) != 0)
        return -EBUSY;
    if (mr->registered)
        mr_deregister(mr);
    mr->magic = ND_MAGIC_DEAD;
    pthread_mutex_destroy(&mr->lock);
    nd_port_unref(mr->ov.port);
    nd_adapter_unref(mr->adapter);
    free(mr);
    return 0;
}

ND_DOOR int ndc_adapter_create_memory_window(nd_adapter *a, nd_mw **out)
{
    struct nd_mw *mw;
    int st;

    if (!nd_adapter_valid(a))
        return -EBADF;
    if (!out)
        return ND_EARG(2);
    mw = calloc(1, sizeof(*mw));
    if (!mw)
        return -ENOMEM;
    st = nd_mtab_alloc(a, ND_MTAB_MW, &mw->index);
    if (st != 0) {
        free(mw);
        return st;
    }
    /* Invalid until bound; the token names the slot with a key no binding has used yet. */
    mw->token = mw->index << 8 | (uint8_t)(a->mtab_key[mw->index] + 1);
    mw->adapter = a;
    nd_adapter_ref(a);
    mw->magic = ND_MAGIC_MW;
    *out = mw;
    return 0;
}

ND_DOOR uint32_t ndc_mw_get_remote_token(nd_mw *mw)
{
    return mw && mw->magic == ND_MAGIC_MW ? mw->token : 0;
}

ND_DOOR int ndc_mw_close(nd_mw *mw)
{
    if (!mw || mw->magic != ND_MAGIC_MW)
        return -EBADF;
    /* A window still bound (its QP may be dead: no Invalidate can run any more) is
     * invalidated here, as ibv_dealloc_mw does: remote access through it ends now. */
    struct nd_mr *mr = mw->bound_to;
    if (mr) {
        pthread_mutex_lock(&mr->lock);
        nd_mw_invalidate(mw);
        pthread_mutex_unlock(&mr->lock);
    }
    nd_mtab_free(mw->adapter, mw->index);
    mw->magic = ND_MAGIC_DEAD;
    nd_adapter_unref(mw->adapter);
    free(mw);
    return 0;
}

bool nd_mr_of(const nd_mr *mr, const struct nd_adapter *a)
{
    return mr_valid(mr) && mr->adapter == a;
}

bool nd_mw_of(const nd_mw *mw, const struct nd_adapter *a)
{
    return mw && mw->magic == ND_MAGIC_MW && mw->adapter == a;
}

int nd_mw_bind_check(nd_mr *mr, const void *buf, size_t len, uint32_t access)
{
    int st = -EFAULT;

    pthread_mutex_lock(&mr->lock);
    if (mr->registered &&
        (!(access & ND_ACCESS_REMOTE_WRITE) || (mr->adapter->mtab[mr->index].access & ND_MR_FLAG_ALLOW_LOCAL_WRITE)))
        st = nd_mtab_check(mr->adapter->mtab, ND_MTAB_ENTRIES, mr->token, (uintptr_t)buf, len, 0, mr->pd);
    pthread_mutex_unlock(&mr->lock);
    return st;
}

/* Was the window's binding revoked by a peer's Send with Invalidate? */
static bool remotely_invalidated(const struct nd_mw *mw)
{
    return __atomic_load_n(&mw->adapter->mtab[mw->index].token, __ATOMIC_ACQUIRE) != mw->token;
}

static void forget_binding(struct nd_mw *mw)
{
    atomic_fetch_sub(&mw->bound_to->bound_windows, 1);
    mw->bound_to = NULL;
}

/* Bind @mw to [buf, buf+len) inside @mr with remote @access; the new token is valid at once. */
int nd_mw_bind_to(nd_mw *mw, nd_mr *mr, const void *buf, size_t len, uint32_t access, uint32_t key,
                        bool replace)
{
    int st = 0;
    uint32_t rights;

    if (replace && mw->bound_to) {
        struct nd_mr *old = mw->bound_to;

        /* The window's requests run in order on one QP: nothing else rebinds it meanwhile. */
        pthread_mutex_lock(&old->lock);
        nd_mw_invalidate(mw);
        pthread_mutex_unlock(&old->lock);
    }
    pthread_mutex_lock(&mr->lock);
    rights = mr->registered ? mr->adapter->mtab[mr->index].access : 0;
    if (mw->bound_to && remotely_invalidated(mw))
        forget_binding(mw);
    if (!mr->registered || mw->bound_to)
        st = -EBADRQC;
    else if ((access & ND_ACCESS_REMOTE_WRITE) && !(rights & ND_MR_FLAG_ALLOW_LOCAL_WRITE))
        st = -EFAULT;
    else if (nd_mtab_check(mr->adapter->mtab, ND_MTAB_ENTRIES, mr->token, (uintptr_t)buf, len, 0, mr->pd) !=
             0)
        st = -EFAULT;
    if (st == 0) {
        /* A window inside shareable memory is shareable: the region cannot go while bound. */
        mw->token = nd_mtab_publish(mw->adapter, mw->index, (uintptr_t)buf, len, access, &mr->share, key, mw->pd);
        mw->bound_to = mr;
        atomic_fetch_add(&mr->bound_windows, 1);
    }
    pthread_mutex_unlock(&mr->lock);
    return st;
}

int nd_mw_invalidate(nd_mw *mw)
{
    struct nd_mr *mr = mw->bound_to;

    if (!mr)
        return -EBADRQC;
    if (remotely_invalidated(mw)) {
        forget_binding(mw);
        return -EBADRQC;   /* a peer's Send with Invalidate unbound it */
    }
    nd_mtab_revoke(mw->adapter, mw->index);
    mw->bound_to = NULL;
    atomic_fetch_sub(&mr->bound_windows, 1);
    return 0;
}
