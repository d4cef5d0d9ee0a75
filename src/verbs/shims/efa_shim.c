// SPDX-License-Identifier: MIT
/* libefa.so.1 in netdirect's private directory, for perftest and libfabric (see mlx5_shim.c):
 * nd0 is not an EFA device. */
#include <errno.h>
#include <infiniband/efadv.h>

#define SHIM_API __attribute__((visibility("default")))

SHIM_API struct ibv_qp *efadv_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr,
                                           struct efadv_qp_init_attr *efa_attr, uint32_t inlen)
{
    (void)ctx;
    (void)attr;
    (void)efa_attr;
    (void)inlen;
    errno = EOPNOTSUPP;
    return NULL;
}

SHIM_API int efadv_query_device(struct ibv_context *ctx, struct efadv_device_attr *attr, uint32_t inlen)
{
    (void)ctx;
    (void)attr;
    (void)inlen;
    return EOPNOTSUPP;
}

SHIM_API int efadv_query_ah(struct ibv_ah *ah, struct efadv_ah_attr *attr, uint32_t inlen)
{
    (void)ah;
    (void)attr;
    (void)inlen;
    return EOPNOTSUPP;
}

SHIM_API struct ibv_cq_ex *efadv_create_cq(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *attr,
                                           struct efadv_cq_init_attr *efa_attr, uint32_t inlen)
{
    (void)ctx;
    (void)attr;
    (void)efa_attr;
    (void)inlen;
    errno = EOPNOTSUPP;
    return NULL;
}

SHIM_API struct efadv_cq *efadv_cq_from_ibv_cq_ex(struct ibv_cq_ex *cq)
{
    (void)cq;
    return NULL;
}

SHIM_API struct ibv_qp *efadv_create_driver_qp(struct ibv_pd *ibvpd, struct ibv_qp_init_attr *attr,
                                               uint32_t driver_qp_type)
{
    (void)ibvpd;
    (void)attr;
    (void)driver_qp_type;
    errno = EOPNOTSUPP;
    return NULL;
}
