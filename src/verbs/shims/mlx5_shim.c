// SPDX-License-Identifier: MIT
/*
 * libmlx5.so.1 in netdirect's private directory: perftest is linked against it (BIND_NOW)
 * and the system's copy needs rdma-core's provider interface, which netdirect's
 * libibverbs does not have. perftest calls these only for an mlx5 device, which nd0 is
 * not: each reports that the device does not support the operation.
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
