// SPDX-License-Identifier: MIT
/*
 * libibverbs' and librdmacm's calls that need no connection, as rdma-core answers them: the
 * rate conversions; an address handle's attributes from a received UD completion's GRH
 * space (RoCE v2 over IPv4: the IPv4 header in its last 20 bytes); and the calls for
 * features the device does not have, which fail with rdma-core's status and errno (ECE,
 * importing objects, vendor direct verbs, rsockets) and never crash.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#include <netinet/ip.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <rdma/rsocket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* rdma-core's driver.h, not shipped by Debian, declares these. */
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);

#define CHECK(c)                                                                                                   \
    do {                                                                                                           \
        if (!(c)) {                                                                                                \
            fprintf(stderr, "%s:%d: check failed: %s (errno %d)\n", __FILE__, __LINE__, #c, errno);              \
            exit(1);                                                                                               \
        }                                                                                                          \
    } while (0)

static void check_rates(void)
{
    CHECK(ibv_rate_to_mult(IBV_RATE_10_GBPS) == 4 && mult_to_ibv_rate(4) == IBV_RATE_10_GBPS);
    CHECK(ibv_rate_to_mult(IBV_RATE_25_GBPS) == -1 && mult_to_ibv_rate(3) == IBV_RATE_MAX);
    CHECK(ibv_rate_to_mbps(IBV_RATE_100_GBPS) == 103125 && mbps_to_ibv_rate(103125) == IBV_RATE_100_GBPS);
    CHECK(ibv_rate_to_mbps(IBV_RATE_MAX) == -1 && mbps_to_ibv_rate(1) == IBV_RATE_MAX);
}

static uint16_t ip_checksum(const void *hdr)
{
    const uint16_t *w = hdr;
    uint32_t sum = 0;

    for (int i = 0; i < 10; i++)
        sum += w[i];
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum;
}

/* A completion from 127.0.0.1 to the device's own 127.0.0.1 GID. */
static void check_ah_from_wc(struct ibv_context *ctx)
{
    struct ibv_grh grh;
    struct iphdr ip = { .version = 4, .ihl = 5, .ttl = 64, .tos = 3, .protocol = 17 };
    struct ibv_wc wc = { .wc_flags = IBV_WC_GRH, .slid = 7, .sl = 2 };
    struct ibv_ah_attr ah;
    union ibv_gid gid;
    int index = -1;

    ip.saddr = ip.daddr = htonl(INADDR_LOOPBACK);
    ip.check = ip_checksum(&ip);
    memset(&grh, 0, sizeof(grh));
    memcpy((char *)&grh + 20, &ip, sizeof(ip));
    for (int i = 0; index < 0 && ibv_query_gid(ctx, 1, i, &gid) == 0; i++)
        if (!memcmp(gid.raw + 10, "\xff\xff\x7f\x00\x00\x01", 6))
            index = i;
    CHECK(index >= 0);
    CHECK(ibv_init_ah_from_wc(ctx, 1, &wc, &grh, &ah) == 0);
    CHECK(ah.is_global && ah.grh.sgid_index == index && !memcmp(&ah.grh.dgid, &gid, sizeof(gid)));
    CHECK(ah.grh.hop_limit == 64 && ah.grh.traffic_class == 3 && ah.dlid == 7 && ah.sl == 2 && ah.port_num == 1);
    /* Neither an IPv6 nor an IPv4 header: refused. */
    memset(&grh, 0, sizeof(grh));
    CHECK(ibv_init_ah_from_wc(ctx, 1, &wc, &grh, &ah) == -1 && errno == EPROTONOSUPPORT);
}

static void check_not_offered(struct ibv_context *ctx)
{
    struct ibv_pd *pd = ibv_alloc_pd(ctx);
    struct ibv_ece ece = { .vendor_id = 0x15b3 };
    struct mlx5dv_context mctx = { 0 };
    struct rdma_cm_id *id;

    CHECK(pd);
    errno = 0;
    CHECK(ibv_import_pd(ctx, 1) == NULL && errno == EOPNOTSUPP);
    errno = 0;
    CHECK(ibv_import_mr(pd, 1) == NULL && errno == EOPNOTSUPP);
    errno = 0;
    CHECK(ibv_import_device(0) == NULL && errno == EOPNOTSUPP);
    CHECK(ibv_query_ece(NULL, &ece) == EOPNOTSUPP);
    CHECK(ibv_dontfork_range(&ece, sizeof(ece)) == 0 && ibv_dofork_range(&ece, sizeof(ece)) == 0);
    /* Re-registration: bad input is EINVAL and changes nothing; a change of rights is made. */
    struct ibv_mr *mr = ibv_reg_mr(pd, &mctx, sizeof(mctx), IBV_ACCESS_LOCAL_WRITE);
    CHECK(mr);
    errno = 0;
    CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, NULL, 0, 0) == IBV_REREG_MR_ERR_INPUT && errno == EINVAL);
    errno = 0;
    CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, IBV_ACCESS_LOCAL_WRITE) == 0);
    CHECK(ibv_dereg_mr(mr) == 0);
    /* Vendor direct verbs: not an mlx5 device. */
    CHECK(!mlx5dv_is_supported(ctx->device));
    CHECK(mlx5dv_query_device(ctx, &mctx) == EOPNOTSUPP);
    errno = 0;
    CHECK(mlx5dv_dr_domain_create(ctx, MLX5DV_DR_DOMAIN_TYPE_NIC_RX) == NULL && errno == EOPNOTSUPP);
    /* rsockets. */
    errno = 0;
    CHECK(rsocket(AF_INET, SOCK_STREAM, 0) == -1 && errno == ENOSYS);
    errno = 0;
    CHECK(riomap(3, NULL, 0, 0, 0, 0) == -1 && errno == ENOSYS);
    /* ECE through the CM: a local choice is taken before the QP exists, none comes back. */
    CHECK(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP) == 0);
    CHECK(rdma_set_local_ece(id, &ece) == 0);
    ece.vendor_id = 0;
    CHECK(rdma_set_local_ece(id, &ece) == -1 && errno == EINVAL);
    ece.vendor_id = 1;
    CHECK(rdma_get_remote_ece(id, &ece) == 0 && ece.vendor_id == 0);
    CHECK(rdma_join_multicast_ex(id, NULL, NULL) == -1 && errno == ENOSYS);
    rdma_destroy_id(id);
    ibv_dealloc_pd(pd);
}

/* An SRQ made through the CM, in the id's default PD, which the id's QP then receives from. */
static void check_cm_srq(void)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(9), .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct ibv_srq_init_attr sa = { .attr = { .max_wr = 8, .max_sge = 1 } };
    struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC, .cap = { .max_send_wr = 2, .max_send_sge = 1 } };
    struct rdma_cm_id *id;

    CHECK(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP) == 0);
    CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&a, 1000) == 0 && id->verbs);
    CHECK(rdma_create_srq(id, NULL, &sa) == 0 && id->srq && id->pd && id->srq->pd == id->pd);
    CHECK(rdma_create_qp(id, NULL, &qa) == 0 && id->qp->srq == id->srq);
    rdma_destroy_qp(id);
    rdma_destroy_srq(id);
    CHECK(id->srq == NULL);
    rdma_destroy_id(id);
}

int main(void)
{
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    struct ibv_context *ctx = n > 0 ? ibv_open_device(list[0]) : NULL;

    CHECK(ctx);
    check_rates();
    check_ah_from_wc(ctx);
    check_not_offered(ctx);
    check_cm_srq();
    ibv_close_device(ctx);
    ibv_free_device_list(list);
    puts("ok");
    return 0;
}
