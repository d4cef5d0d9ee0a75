// SPDX-License-Identifier: MIT
/*
 * Entry points the target programs import (every one must resolve at load: their binaries
 * are linked BIND_NOW) that this device does not serve yet, or at all: each fails with the
 * errno rdma-core gives for an operation the device lacks: multicast (UD here is unicast
 * only), dma-buf memory.
 */
#include "verbs_int.h"

#include <errno.h>

VB_API int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
    (void)qp;
    (void)gid;
    (void)lid;
    return EOPNOTSUPP;
}

VB_API int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
    (void)qp;
    (void)gid;
    (void)lid;
    return EOPNOTSUPP;
}

VB_API struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length, uint64_t iova, int fd,
                                        int access)
{
    (void)pd;
    (void)offset;
    (void)length;
    (void)iova;
    (void)fd;
    (void)access;
    errno = EOPNOTSUPP;
    return NULL;
}
