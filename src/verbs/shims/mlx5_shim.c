// SPDX-License-Identifier: MIT
/*
 * libmlx5.so.1 in netdirect's private directory: perftest and UCX's IB transports
 * (libuct_ib) are linked against it and the system's copy needs rdma-core's provider
 * interface, which netdirect's libibverbs does not have. They call these only for an mlx5
 * device, which nd0 is not (mlx5dv_is_supported says so): each reports that the device does
 * not support the operation.
 */
#include <errno.h>
#include <infiniband/mlx5dv.h>

#define SHIM_API __attribute__((visibility("default")))

SHIM_API struct mlx5dv_mkey *mlx5dv_create_mkey(struct mlx5dv_mkey_init_attr *attr)
{
    (void)attr;
    errno = EOPNOTSUPP;
    return NULL;
}

SHIM_API int mlx5dv_destroy_mkey(struct mlx5dv_mkey *mkey)
{
    (void)mkey;
    return EOPNOTSUPP;
}

SHIM_API struct mlx5dv_qp_ex *mlx5dv_qp_ex_from_ibv_qp_ex(struct ibv_qp_ex *qp)
{
    (void)qp;
    return NULL;
}

SHIM_API int mlx5dv_crypto_login(struct ibv_context *context, struct mlx5dv_crypto_login_attr *attr)
{
    (void)context;
    (void)attr;
    return EOPNOTSUPP;
}

SHIM_API struct mlx5dv_dek *mlx5dv_dek_create(struct ibv_context *context, struct mlx5dv_dek_init_attr *attr)
{
    (void)context;
    (void)attr;
    errno = EOPNOTSUPP;
    return NULL;
}

SHIM_API int mlx5dv_dek_destroy(struct mlx5dv_dek *dek)
{
    (void)dek;
    return EOPNOTSUPP;
}

SHIM_API struct ibv_qp *mlx5dv_create_qp(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr,
                                         struct mlx5dv_qp_init_attr *mlx5_attr)
{
    (void)context;
    (void)attr;
    (void)mlx5_attr;
    errno = EOPNOTSUPP;
    return NULL;
}

SHIM_API int mlx5dv_devx_general_cmd(struct ibv_context *context, const void *in, size_t inlen, void *out,
                                     size_t outlen)
{
    (void)context;
    (void)in;
    (void)inlen;
    (void)out;
    (void)outlen;
    return EOPNOTSUPP;
}

SHIM_API struct ibv_context *mlx5dv_open_device(struct ibv_device *device, struct mlx5dv_context_attr *attr)
{
    (void)device;
    (void)attr;
    errno = EOPNOTSUPP;
    return NULL;
}

SHIM_API bool mlx5dv_is_supported(struct ibv_device *device)
{
    (void)device;
    return false;
}

SHIM_API struct ibv_cq_ex *mlx5dv_create_cq(struct ibv_context *context, struct ibv_cq_init_attr_ex *cq_attr,
                                            struct mlx5dv_cq_init_attr *mlx5_cq_attr)
{
    (void)context;
    (void)cq_attr;
    (void)mlx5_cq_attr;
    errno = EOPNOTSUPP;
    return NULL;
}

SHIM_API int mlx5dv_init_obj(struct mlx5dv_obj *obj, uint64_t obj_type)
{
    (void)obj;
    (void)obj_type;
    return EOPNOTSUPP;
}

SHIM_API struct mlx5dv_devx_obj *mlx5dv_devx_obj_create(struct ibv_context *context, const void *in, size_t inlen,
                                                        void *out, size_t outlen)
{
    (void)context;
    (void)in;
    (void)inlen;
    (void)out;
    (void)outlen;
    errno = EOPNOTSUPP;
    return NULL;
}

/* Query, modify and destroy: no object was ever created. */
SHIM_API int mlx5dv_devx_obj_query(struct mlx5dv_devx_obj *obj, const void *in, size_t inlen, void *out, size_t outlen)
{
    (void)obj;
    (void)in;
    (void)inlen;
    (void)out;
    (void)outlen;
    return EOPNOTSUPP;
}

SHIM_API int mlx5dv_devx_obj_modify(struct mlx5dv_devx_obj *obj, const void *in, size_t inlen, void *out,
                                    size_t outlen)
{
    return mlx5dv_devx_obj_query(obj, in, inlen, out, outlen);
}

SHIM_API int mlx5dv_devx_obj_destroy(struct mlx5dv_devx_obj *obj)
{
    (void)obj;
    return EOPNOTSUPP;
}

SHIM_API struct mlx5dv_devx_umem *mlx5dv_devx_umem_reg(struct ibv_context *ctx, void *addr, size_t size,
                                                       uint32_t access)
{
    (void)ctx;
    (void)addr;
    (void)size;
    (void)access;
    errno = EOPNOTSUPP;
    return NULL;
}

SHIM_API int mlx5dv_devx_umem_dereg(struct mlx5dv_devx_umem *umem)
{
    (void)umem;
    return EOPNOTSUPP;
}

SHIM_API struct mlx5dv_devx_uar *mlx5dv_devx_alloc_uar(struct ibv_context *context, uint32_t flags)
{
    (void)context;
    (void)flags;
    errno = EOPNOTSUPP;
    return NULL;
}

SHIM_API void mlx5dv_devx_free_uar(struct mlx5dv_devx_uar *devx_uar)
{
    (void)devx_uar;
}

SHIM_API int mlx5dv_devx_qp_query(struct ibv_qp *qp, const void *in, size_t inlen, void *out, size_t outlen)
{
    (void)qp;
    (void)in;
    (void)inlen;
    (void)out;
    (void)outlen;
    return EOPNOTSUPP;
}

SHIM_API int mlx5dv_devx_qp_modify(struct ibv_qp *qp, const void *in, size_t inlen, void *out, size_t outlen)
{
    return mlx5dv_devx_qp_query(qp, in, inlen, out, outlen);
}

SHIM_API struct mlx5dv_devx_event_channel *
mlx5dv_devx_create_event_channel(struct ibv_context *context, enum mlx5dv_devx_create_event_channel_flags flags)
{
    (void)context;
    (void)flags;
    errno = EOPNOTSUPP;
    return NULL;
}

SHIM_API void mlx5dv_devx_destroy_event_channel(struct mlx5dv_devx_event_channel *event_channel)
{
    (void)event_channel;
}

SHIM_API int mlx5dv_devx_subscribe_devx_event(struct mlx5dv_devx_event_channel *event_channel,
                                              struct mlx5dv_devx_obj *obj, uint16_t events_sz,
                                              uint16_t events_num[], uint64_t cookie)
{
    (void)event_channel;
    (void)obj;
    (void)events_sz;
    (void)events_num;
    (void)cookie;
    return EOPNOTSUPP;
}

SHIM_API ssize_t mlx5dv_devx_get_event(struct mlx5dv_devx_event_channel *event_channel,
                                       struct mlx5dv_devx_async_event_hdr *event_data, size_t event_resp_len)
{
    (void)event_channel;
    (void)event_data;
    (void)event_resp_len;
    errno = EOPNOTSUPP;
    return -1;
}
