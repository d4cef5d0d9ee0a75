// SPDX-License-Identifier: MIT
/*
 * Contexts, and what they report: device, port, GIDs, P_Keys. The context is rdma-core's
 * verbs_context (the ops applications reach through verbs_get_ctx_op sit in front of the
 * ibv_context they hold; sz and the abi_compat sentinel tell the inline functions so).
 */
#include "verbs_int.h"
#include "core/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#undef ibv_query_port

/* The sysfs GID types of rdma-core's driver.h (not installed with libibverbs-dev). */
enum vb_gid_type_sysfs { VB_GID_TYPE_SYSFS_IB_ROCE_V1, VB_GID_TYPE_SYSFS_ROCE_V2 };
VB_API int ibv_query_gid_type(struct ibv_context *ctx, uint8_t port, unsigned int index, enum vb_gid_type_sysfs *type);

static int query_port_ex(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr, size_t len);
static int query_device_ex(struct ibv_context *ctx, const struct ibv_query_device_ex_input *in,
                           struct ibv_device_attr_ex *attr, size_t len);

VB_API struct ibv_context *ibv_open_device(struct ibv_device *device)
{
    struct vb_context *c;
    int st;

    if (device != &vb_device_get()->dev) {
        errno = ENODEV;
        return NULL;
    }
    c = calloc(1, sizeof(*c));
    if (!c) {
        errno = ENOMEM;
        return NULL;
    }
    c->dev = to_vb_device(device);
    c->async_pipe[0] = c->async_pipe[1] = -1;
    pthread_mutex_init(&c->event_lock, NULL);
    pthread_mutex_init(&c->mw_lock, NULL);
    pthread_mutex_init(&c->pd_lock, NULL);
    pthread_mutex_init(&c->av_lock, NULL);
    st = nd_adapter_create(0, &c->adapter);
    if (st == 0)
        st = ndc_port_create(&c->port);
    if (st != 0 || pipe2(c->async_pipe, O_CLOEXEC) < 0 ||
        fcntl(c->async_pipe[1], F_SETFL, O_NONBLOCK) < 0) {
        int e = st != 0 ? nd_errno_of(st) : errno;

        if (c->async_pipe[0] >= 0) {
            close(c->async_pipe[0]);
            close(c->async_pipe[1]);
        }
        if (c->port)
            ndc_port_close(c->port);
        if (c->adapter)
            ndc_adapter_close(c->adapter);
        pthread_mutex_destroy(&c->event_lock);
        pthread_mutex_destroy(&c->mw_lock);
        pthread_mutex_destroy(&c->pd_lock);
        pthread_mutex_destroy(&c->av_lock);
        free(c);
        errno = e;
        return NULL;
    }
    struct ibv_context *ctx = &c->vctx.context;

    ctx->device = device;
    /* No kernel takes commands here; the descriptor is one a program may dup and hand to
     * ibv_import_device (rdma-core's shared-PD tests do), which then refuses the import. */
    ctx->cmd_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    ctx->async_fd = c->async_pipe[0];
    ctx->num_comp_vectors = 1;
    pthread_mutex_init(&ctx->mutex, NULL);
    ctx->abi_compat = __VERBS_ABI_IS_EXTENDED;
    c->vctx.sz = sizeof(c->vctx);
    c->vctx.query_port = query_port_ex;
    c->vctx.query_device_ex = query_device_ex;
    c->vctx.create_qp_ex = vb_create_qp_ex;
    c->vctx.create_cq_ex = vb_create_cq_ex;
    vb_ops_fill(&ctx->ops);
    return ctx;
}

VB_API int ibv_close_device(struct ibv_context *ctx)
{
    struct vb_context *c = vb_ctx(ctx);

    vb_event_thread_stop(c);
    vb_av_close(c);             /* its listeners and connectors are on the port */
    pthread_mutex_destroy(&c->av_lock);
    pthread_mutex_destroy(&c->event_lock);
    pthread_mutex_destroy(&c->mw_lock);
    pthread_mutex_destroy(&c->pd_lock);
    ndc_port_close(c->port);
    ndc_adapter_close(c->adapter);
    close(c->async_pipe[0]);
    close(c->async_pipe[1]);
    if (ctx->cmd_fd >= 0)
        close(ctx->cmd_fd);
    pthread_mutex_destroy(&ctx->mutex);
    free(c);
    return 0;
}

VB_API int ibv_query_device(struct ibv_context *ctx, struct ibv_device_attr *attr)
{
    if (!ctx || !attr)
        return EINVAL;
    vb_device_attr(vb_ctx(ctx)->dev, attr);
    return 0;
}

static int query_device_ex(struct ibv_context *ctx, const struct ibv_query_device_ex_input *in,
                           struct ibv_device_attr_ex *attr, size_t len)
{
    struct ibv_device_attr_ex full = { 0 };

    (void)in;
    if (!ctx || !attr || len < sizeof(attr->orig_attr))
        return EINVAL;
    vb_device_attr(vb_ctx(ctx)->dev, &full.orig_attr);
    full.phys_port_cnt_ex = full.orig_attr.phys_port_cnt;
    memcpy(attr, &full, len < sizeof(full) ? len : sizeof(full));
    return 0;
}

static void port_attr(struct ibv_port_attr *a)
{
    struct vb_gid gids[VB_GID_MAX];
    uint32_t n = vb_gids(gids, VB_GID_MAX);

    memset(a, 0, sizeof(*a));
    a->state = IBV_PORT_ACTIVE;
    a->max_mtu = IBV_MTU_4096;
    a->active_mtu = (enum ibv_mtu)vb_port_mtu();
    a->gid_tbl_len = n ? (int)n : 1;
    a->port_cap_flags = IBV_PORT_CM_SUP;
    a->max_msg_sz = nd_caps.max_msg_size;
    a->pkey_tbl_len = 1;
    a->max_vl_num = 1;
    a->active_width = VB_PORT_WIDTH;
    a->active_speed = VB_PORT_SPEED;
    a->phys_state = 5;              /* LinkUp */
    a->link_layer = IBV_LINK_LAYER_ETHERNET;
}

/* The exported call (an old binary's, or the inline's fallback) fills the struct at the size
 * its header had: v44's. */
VB_API int ibv_query_port(struct ibv_context *ctx, uint8_t port, struct _compat_ibv_port_attr *attr)
{
    return query_port_ex(ctx, port, (struct ibv_port_attr *)attr, sizeof(struct ibv_port_attr));
}

static int query_port_ex(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr, size_t len)
{
    struct ibv_port_attr a;

    if (!ctx || !attr)
        return EINVAL;
    if (port != VB_PORT)
        return EINVAL;
    port_attr(&a);
    memcpy(attr, &a, len < sizeof(a) ? len : sizeof(a));
    return 0;
}

VB_API int ibv_query_gid(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid)
{
    struct vb_gid gids[VB_GID_MAX];
    uint32_t n;

    if (!ctx || !gid || port != VB_PORT || index < 0 || index >= VB_GID_MAX)
        return -1;
    n = vb_gids(gids, VB_GID_MAX);
    if ((uint32_t)index < n)
        *gid = gids[index].gid;
    else
        memset(gid, 0, sizeof(*gid));   /* an empty entry, as rdma-core reports one */
    return 0;
}

VB_API int ibv_query_gid_type(struct ibv_context *ctx, uint8_t port, unsigned int index,
                              enum vb_gid_type_sysfs *type)
{
    if (!ctx || !type || port != VB_PORT || index >= VB_GID_MAX)
        return -1;
    *type = VB_GID_TYPE_SYSFS_ROCE_V2;
    return 0;
}

static void fill_entry(struct ibv_gid_entry *e, const struct vb_gid *g, uint32_t index)
{
    e->gid = g->gid;
    e->gid_index = index;
    e->port_num = VB_PORT;
    e->gid_type = IBV_GID_TYPE_ROCE_V2;
    e->ndev_ifindex = g->ifindex;
}

VB_API int _ibv_query_gid_ex(struct ibv_context *ctx, uint32_t port, uint32_t index, struct ibv_gid_entry *entry,
                             uint32_t flags, size_t entry_size)
{
    struct vb_gid gids[VB_GID_MAX];
    uint32_t n;

    if (!ctx || !entry || flags || entry_size < sizeof(*entry))
        return EINVAL;
    if (port != VB_PORT)
        return EINVAL;
    n = vb_gids(gids, VB_GID_MAX);
    if (index >= n)
        return ENODATA;
    fill_entry(entry, &gids[index], index);
    return 0;
}

VB_API ssize_t _ibv_query_gid_table(struct ibv_context *ctx, struct ibv_gid_entry *entries, size_t max_entries,
                                    uint32_t flags, size_t entry_size)
{
    struct vb_gid gids[VB_GID_MAX];
    uint32_t n;

    if (!ctx || (!entries && max_entries) || flags || entry_size < sizeof(*entries))
        return -EINVAL;
    n = vb_gids(gids, VB_GID_MAX);
    if (max_entries < n)
        return -EINVAL;
    for (uint32_t i = 0; i < n; i++)
        fill_entry((struct ibv_gid_entry *)((char *)entries + i * entry_size), &gids[i], i);
    return n;
}

VB_API int ibv_query_pkey(struct ibv_context *ctx, uint8_t port, int index, __be16 *pkey)
{
    if (!ctx || !pkey || port != VB_PORT || index != 0)
        return -1;
    *pkey = 0xffff;                 /* the default full-member P_Key, same in either order */
    return 0;
}

VB_API int ibv_get_pkey_index(struct ibv_context *ctx, uint8_t port, __be16 pkey)
{
    return ctx && port == VB_PORT && (pkey & 0x7fff) == 0x7fff ? 0 : -1;
}

