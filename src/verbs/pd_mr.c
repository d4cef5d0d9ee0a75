// SPDX-License-Identifier: MIT
/*
 * Protection domains and memory regions. An MR is a registration in the core's token
 * table: lkey and rkey are its local and remote tokens, and remote access is checked there
 * (token, range, rights) on every transport.
 */
#include "verbs_int.h"
#include "core/mem_int.h"

#include <errno.h>
#include <stdlib.h>

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

/* Access bits the core does not need to know of: atomics (no atomic op is accepted, so
 * the right is never used) and the optional range, which a device may ignore. */
#define VB_ACCESS_IGNORED (IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | IBV_ACCESS_OPTIONAL_RANGE)
#define VB_ACCESS_KNOWN (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | VB_ACCESS_IGNORED)

/* A free PD id of @c (1..65535), marked used; 0 when all are taken. */
static uint16_t pd_id_take(struct vb_context *c)
{
    uint16_t id = 0;

    pthread_mutex_lock(&c->pd_lock);
    for (uint32_t w = 0; w < ND_ARRAY_SIZE(c->pd_ids) && !id; w++) {
        uint64_t free_bits = ~c->pd_ids[w] & (w == 0 ? ~1ull : ~0ull);

        if (free_bits) {
            uint32_t b = (uint32_t)__builtin_ctzll(free_bits);

            c->pd_ids[w] |= 1ull << b;
            id = (uint16_t)(w * 64 + b);
        }
    }
    pthread_mutex_unlock(&c->pd_lock);
    return id;
}

static void pd_id_give(struct vb_context *c, uint16_t id)
{
    pthread_mutex_lock(&c->pd_lock);
    c->pd_ids[id / 64] &= ~(1ull << (id % 64));
    pthread_mutex_unlock(&c->pd_lock);
}

VB_API struct ibv_pd *ibv_alloc_pd(struct ibv_context *ctx)
{
    struct vb_pd *p;
    uint16_t id;

    if (!ctx) {
        errno = EINVAL;
        return NULL;
    }
    p = calloc(1, sizeof(*p));
    if (!p || !(id = pd_id_take(vb_ctx(ctx)))) {
        free(p);
        errno = ENOMEM;
        return NULL;
    }
    p->pd.context = ctx;
    p->pd.handle = id;
    return &p->pd;
}

VB_API int ibv_dealloc_pd(struct ibv_pd *pd)
{
    if (!pd)
        return EINVAL;
    pd_id_give(vb_ctx(pd->context), vb_pd_id(pd));
    free(pd);
    return 0;
}

/* The core's rights for verbs access flags; -1 for a combination verbs forbids or a flag
 * this device cannot honour (zero-based addressing, on-demand paging). */
static int64_t nd_rights(unsigned access)
{
    uint32_t f = 0;

    if (access & ~(unsigned)VB_ACCESS_KNOWN)
        return -1;
    /* Remote write (and atomics) need local write, as in every verbs provider. */
    if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) && !(access & IBV_ACCESS_LOCAL_WRITE))
        return -1;
    if (access & IBV_ACCESS_LOCAL_WRITE)
        f |= ND_MR_FLAG_ALLOW_LOCAL_WRITE | ND_MR_FLAG_RDMA_READ_SINK;
    if (access & IBV_ACCESS_REMOTE_WRITE)
        f |= ND_MR_FLAG_ALLOW_REMOTE_WRITE;
    if (access & IBV_ACCESS_REMOTE_READ)
        f |= ND_MR_FLAG_ALLOW_REMOTE_READ;
    return f;
}

/* A core region of @pd over [addr, addr+length) with @access (checked): 0 or a core status. */
static int region_new(struct ibv_pd *pd, void *addr, size_t length, unsigned access, nd_mr **out)
{
    struct vb_context *c = vb_ctx(pd->context);
    int st = ndc_adapter_create_memory_region(c->adapter, c->port, out);

    if (st == 0) {
        nd_mr_set_pd(*out, vb_pd_id(pd));
        st = nd_mr_register_atomic(*out, addr, length, (uint32_t)nd_rights(access), access & IBV_ACCESS_REMOTE_ATOMIC);
        if (st != 0)
            ndc_mr_close(*out);
    }
    return st;
}

/* The application's view of @m's region. */
static void mr_fill(struct vb_mr *m, struct ibv_pd *pd, void *addr, size_t length, unsigned access)
{
    m->mr.context = pd->context;
    m->mr.pd = pd;
    m->mr.addr = addr;
    m->mr.length = length;
    m->mr.lkey = ndc_mr_get_local_token(m->core);
    m->mr.rkey = ndc_mr_get_remote_token(m->core);
    m->mw_bind = access & IBV_ACCESS_MW_BIND;
    m->access = access;
}

VB_API struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova, unsigned int access)
{
    struct vb_mr *m;
    int64_t rights = nd_rights(access);
    int st;

    if (!pd || rights < 0) {
        errno = EINVAL;
        return NULL;
    }
    /* Remote addresses are the registering process's virtual addresses. */
    if (iova != (uint64_t)(uintptr_t)addr) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    m = calloc(1, sizeof(*m));
    if (!m) {
        errno = ENOMEM;
        return NULL;
    }
    st = region_new(pd, addr, length, access, &m->core);
    if (st != 0) {
        free(m);
        errno = nd_errno_of(st);
        return NULL;
    }
    mr_fill(m, pd, addr, length, access);
    return &m->mr;
}

VB_API struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
    return ibv_reg_mr_iova2(pd, addr, length, (uint64_t)(uintptr_t)addr, (unsigned)access);
}

VB_API struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova, int access)
{
    return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned)access);
}

/* Deregistration returns once nothing touches the memory through the region again, a
 * peer's transfer under way included (the core's Deregister). */
VB_API int ibv_dereg_mr(struct ibv_mr *mr)
{
    struct vb_mr *m = to_vb_mr(mr);
    int st;

    if (!mr)
        return EINVAL;
    st = ndc_mr_close(m->core);
    if (st != 0)
        return nd_errno_of(st);
    free(m);
    return 0;
}

/*
 * Re-registration changes the region in place and keeps its keys, as rxe's and mlx5's do
 * (rdma-core's tests use the old rkey after it); nothing touches the old range through it
 * once this returns. What rdma-core refuses for any device is refused as it refuses it
 * (IBV_REREG_MR_ERR_INPUT, EINVAL); a failure after that (IBV_REREG_MR_ERR_CMD, windows
 * still bound, say) leaves the region as it was.
 */
VB_API int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr, size_t length, int access)
{
    struct vb_mr *m = to_vb_mr(mr);
    int st;

    if (!mr || (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED) ||
        ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (!addr || !length)) ||
        (access && !(flags & IBV_REREG_MR_CHANGE_ACCESS)) ||
        ((flags & IBV_REREG_MR_CHANGE_PD) && (!pd || pd->context != mr->context)) ||
        ((flags & IBV_REREG_MR_CHANGE_ACCESS) && nd_rights((unsigned)access) < 0)) {
        errno = EINVAL;
        return IBV_REREG_MR_ERR_INPUT;
    }
    if (!(flags & IBV_REREG_MR_CHANGE_PD))
        pd = mr->pd;
    if (!(flags & IBV_REREG_MR_CHANGE_TRANSLATION)) {
        addr = mr->addr;
        length = mr->length;
    }
    if (!(flags & IBV_REREG_MR_CHANGE_ACCESS))
        access = (int)m->access;
    st = nd_mr_reregister(m->core, addr, length, (uint32_t)nd_rights((unsigned)access),
                          access & IBV_ACCESS_REMOTE_ATOMIC, vb_pd_id(pd));
    if (st != 0) {
        errno = nd_errno_of(st);
        return IBV_REREG_MR_ERR_CMD;
    }
    mr_fill(m, pd, addr, length, (unsigned)access);
    return 0;
}
