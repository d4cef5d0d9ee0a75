// SPDX-License-Identifier: MIT
/*
 * libibverbs' own helpers, which rdma-core computes in the library whatever the device:
 * rate conversions, copies from the kernel ABI's structs, fork ranges, address handles
 * from a received completion; and the calls for features this device does not have
 * (ECE, sharing objects through the command fd), which fail as rdma-core's do for a
 * provider without them.
 */
#include "verbs_int.h"

#include <errno.h>
#include <infiniband/sa.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>
#include <string.h>

/* Declared by rdma-core's marshall.h, which Debian does not ship. */
VB_API void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, struct ib_uverbs_qp_attr *src);
VB_API void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, struct ib_uverbs_ah_attr *src);
VB_API void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst, struct ib_user_path_rec *src);
VB_API void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst, struct ibv_sa_path_rec *src);
/* Declared by rdma-core's driver.h, also not shipped. */
VB_API int ibv_dontfork_range(void *base, size_t size);
VB_API int ibv_dofork_range(void *base, size_t size);

/* Each rate with its multiple of 2.5 Gb/s (0: none) and its data rate in Mb/s. */
static const struct {
    enum ibv_rate rate;
    int mult;
    int mbps;
} rates[] = {
    { IBV_RATE_2_5_GBPS, 1, 2500 },      { IBV_RATE_5_GBPS, 2, 5000 },        { IBV_RATE_10_GBPS, 4, 10000 },
    { IBV_RATE_20_GBPS, 8, 20000 },      { IBV_RATE_30_GBPS, 12, 30000 },     { IBV_RATE_40_GBPS, 16, 40000 },
    { IBV_RATE_60_GBPS, 24, 60000 },     { IBV_RATE_80_GBPS, 32, 80000 },     { IBV_RATE_120_GBPS, 48, 120000 },
    { IBV_RATE_14_GBPS, 0, 14062 },      { IBV_RATE_56_GBPS, 0, 56250 },      { IBV_RATE_112_GBPS, 0, 112500 },
    { IBV_RATE_168_GBPS, 0, 168750 },    { IBV_RATE_25_GBPS, 0, 25781 },      { IBV_RATE_100_GBPS, 0, 103125 },
    { IBV_RATE_200_GBPS, 0, 206250 },    { IBV_RATE_300_GBPS, 0, 309375 },    { IBV_RATE_28_GBPS, 11, 28125 },
    { IBV_RATE_50_GBPS, 20, 53125 },     { IBV_RATE_400_GBPS, 160, 425000 },  { IBV_RATE_600_GBPS, 240, 637500 },
    { IBV_RATE_800_GBPS, 320, 850000 },  { IBV_RATE_1200_GBPS, 480, 1275000 },
};
#define RATES (sizeof(rates) / sizeof(rates[0]))

VB_API int ibv_rate_to_mult(enum ibv_rate rate)
{
    for (size_t i = 0; i < RATES; i++)
        if (rates[i].rate == rate && rates[i].mult)
            return rates[i].mult;
    return -1;
}

VB_API enum ibv_rate mult_to_ibv_rate(int mult)
{
    for (size_t i = 0; i < RATES; i++)
        if (rates[i].mult == mult && mult)
            return rates[i].rate;
    return IBV_RATE_MAX;
}

VB_API int ibv_rate_to_mbps(enum ibv_rate rate)
{
    for (size_t i = 0; i < RATES; i++)
        if (rates[i].rate == rate)
            return rates[i].mbps;
    return -1;
}

VB_API enum ibv_rate mbps_to_ibv_rate(int mbps)
{
    for (size_t i = 0; i < RATES; i++)
        if (rates[i].mbps == mbps)
            return rates[i].rate;
    return IBV_RATE_MAX;
}

VB_API void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, struct ib_uverbs_ah_attr *src)
{
    memcpy(dst->grh.dgid.raw, src->grh.dgid, sizeof(dst->grh.dgid));
    dst->grh.flow_label = src->grh.flow_label;
    dst->grh.sgid_index = src->grh.sgid_index;
    dst->grh.hop_limit = src->grh.hop_limit;
    dst->grh.traffic_class = src->grh.traffic_class;
    dst->dlid = src->dlid;
    dst->sl = src->sl;
    dst->src_path_bits = src->src_path_bits;
    dst->static_rate = src->static_rate;
    dst->is_global = src->is_global;
    dst->port_num = src->port_num;
}

VB_API void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, struct ib_uverbs_qp_attr *src)
{
    dst->cur_qp_state = src->cur_qp_state;
    dst->path_mtu = src->path_mtu;
    dst->path_mig_state = src->path_mig_state;
    dst->qkey = src->qkey;
    dst->rq_psn = src->rq_psn;
    dst->sq_psn = src->sq_psn;
    dst->dest_qp_num = src->dest_qp_num;
    dst->qp_access_flags = src->qp_access_flags;
    dst->cap.max_send_wr = src->max_send_wr;
    dst->cap.max_recv_wr = src->max_recv_wr;
    dst->cap.max_send_sge = src->max_send_sge;
    dst->cap.max_recv_sge = src->max_recv_sge;
    dst->cap.max_inline_data = src->max_inline_data;
    ibv_copy_ah_attr_from_kern(&dst->ah_attr, &src->ah_attr);
    ibv_copy_ah_attr_from_kern(&dst->alt_ah_attr, &src->alt_ah_attr);
    dst->pkey_index = src->pkey_index;
    dst->alt_pkey_index = src->alt_pkey_index;
    dst->en_sqd_async_notify = src->en_sqd_async_notify;
    dst->sq_draining = src->sq_draining;
    dst->max_rd_atomic = src->max_rd_atomic;
    dst->max_dest_rd_atomic = src->max_dest_rd_atomic;
    dst->min_rnr_timer = src->min_rnr_timer;
    dst->port_num = src->port_num;
    dst->timeout = src->timeout;
    dst->retry_cnt = src->retry_cnt;
    dst->rnr_retry = src->rnr_retry;
    dst->alt_port_num = src->alt_port_num;
    dst->alt_timeout = src->alt_timeout;
}

/* A path record's fields both ways; the two structs name the same fields. */
#define PATH_REC_FIELDS(X)                                                                                         \
    X(dlid) X(slid) X(raw_traffic) X(flow_label) X(reversible) X(mtu) X(pkey) X(hop_limit) X(traffic_class)        \
        X(numb_path) X(sl) X(mtu_selector) X(rate_selector) X(rate) X(packet_life_time_selector)                 \
            X(packet_life_time) X(preference)
#define COPY_FIELD(f) dst->f = src->f;

VB_API void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst, struct ib_user_path_rec *src)
{
    memcpy(dst->dgid.raw, src->dgid, sizeof(dst->dgid));
    memcpy(dst->sgid.raw, src->sgid, sizeof(dst->sgid));
    PATH_REC_FIELDS(COPY_FIELD)
}

VB_API void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst, struct ibv_sa_path_rec *src)
{
    memcpy(dst->dgid, src->dgid.raw, sizeof(dst->dgid));
    memcpy(dst->sgid, src->sgid.raw, sizeof(dst->sgid));
    PATH_REC_FIELDS(COPY_FIELD)
}

/* Registered memory is reached by the peer through this process's pages, not pinned by a
 * kernel driver, so a child of fork() cannot break it: there is nothing to mark. */
VB_API int ibv_dontfork_range(void *base, size_t size)
{
    (void)base;
    (void)size;
    return 0;
}

VB_API int ibv_dofork_range(void *base, size_t size)
{
    (void)base;
    (void)size;
    return 0;
}

/* The GID table's index of gid, or -1. */
static int gid_index(struct ibv_context *ctx, uint8_t port, const union ibv_gid *gid)
{
    union ibv_gid have;

    for (int i = 0; i < VB_GID_MAX; i++) {
        if (ibv_query_gid(ctx, port, i, &have))
            break;
        if (!memcmp(&have, gid, sizeof(have)))
            return i;
    }
    errno = ENOENT;
    return -1;
}

/* rdma-core's test of which header a UD receive's 40-byte GRH space holds: an IPv6 header,
 * or (RoCE v2 over IPv4) an IPv4 header in its last 20 bytes, believed when its checksum is. */
static int grh_ip_version(const struct ibv_grh *grh)
{
    struct iphdr ip4;
    uint32_t sum = 0;
    uint16_t words[10];

    memcpy(&ip4, (const uint8_t *)grh + 20, sizeof(ip4));
    if ((be32toh(grh->version_tclass_flow) >> 28) != 6)
        return ip4.version == 4 ? 4 : -1;
    if (ip4.ihl != 5)
        return 6;
    memcpy(words, &ip4, sizeof(words));
    for (int i = 0; i < 10; i++)
        sum += words[i];
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return sum == 0xffff ? 4 : 6;
}

static void ipv4_mapped(union ibv_gid *gid, uint32_t addr_be)
{
    memset(gid, 0, sizeof(*gid));
    gid->raw[10] = gid->raw[11] = 0xff;
    memcpy(gid->raw + 12, &addr_be, 4);
}

VB_API int ibv_init_ah_from_wc(struct ibv_context *ctx, uint8_t port, struct ibv_wc *wc, struct ibv_grh *grh,
                               struct ibv_ah_attr *ah)
{
    union ibv_gid local;
    int version, index;

    memset(ah, 0, sizeof(*ah));
    ah->dlid = wc->slid;
    ah->sl = wc->sl;
    ah->src_path_bits = wc->dlid_path_bits;
    ah->port_num = port;
    if (!(wc->wc_flags & IBV_WC_GRH))
        return 0;
    ah->is_global = 1;
    ah->grh.flow_label = be32toh(grh->version_tclass_flow) & 0xfffff;
    version = grh_ip_version(grh);
    if (version == 4) {
        struct iphdr ip4;

        memcpy(&ip4, (const uint8_t *)grh + 20, sizeof(ip4));
        ipv4_mapped(&local, ip4.daddr);
        ipv4_mapped(&ah->grh.dgid, ip4.saddr);
        ah->grh.hop_limit = ip4.ttl;
        ah->grh.traffic_class = ip4.tos;
    } else if (version == 6) {
        local = grh->dgid;
        ah->grh.dgid = grh->sgid;
        ah->grh.hop_limit = grh->hop_limit;
        ah->grh.traffic_class = (be32toh(grh->version_tclass_flow) >> 20) & 0xff;
    } else {
        errno = EPROTONOSUPPORT;
        return -1;
    }
    index = gid_index(ctx, port, &local);
    if (index < 0)
        return -1;
    ah->grh.sgid_index = (uint8_t)index;
    return 0;
}

/* Layer 2 addresses belong to a NIC's Ethernet port; this device's port has none. */
VB_API int ibv_resolve_eth_l2_from_gid(struct ibv_context *ctx, struct ibv_ah_attr *attr, uint8_t eth_mac[6],
                                       uint16_t *vid)
{
    (void)ctx;
    (void)attr;
    (void)eth_mac;
    (void)vid;
    errno = EOPNOTSUPP;
    return -EOPNOTSUPP;
}

/* Data placement is not promised in order within a message: 0, as rdma-core answers for a
 * provider that does not say. */
VB_API int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
    (void)qp;
    (void)op;
    (void)flags;
    return 0;
}

/* Enhanced connection establishment is an option of Mellanox's CM; rdma-core refuses it for
 * a provider without it. */
VB_API int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
    (void)qp;
    (void)ece;
    errno = EOPNOTSUPP;
    return EOPNOTSUPP;
}

VB_API int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
    (void)qp;
    (void)ece;
    errno = EOPNOTSUPP;
    return EOPNOTSUPP;
}

/* Objects are shared between processes through a kernel command fd, which this device does
 * not have. */
VB_API struct ibv_context *ibv_import_device(int cmd_fd)
{
    (void)cmd_fd;
    errno = EOPNOTSUPP;
    return NULL;
}

VB_API struct ibv_pd *ibv_import_pd(struct ibv_context *ctx, uint32_t handle)
{
    (void)ctx;
    (void)handle;
    errno = EOPNOTSUPP;
    return NULL;
}

VB_API struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t handle)
{
    (void)pd;
    (void)handle;
    errno = EOPNOTSUPP;
    return NULL;
}

VB_API struct ibv_dm *ibv_import_dm(struct ibv_context *ctx, uint32_t handle)
{
    (void)ctx;
    (void)handle;
    errno = EOPNOTSUPP;
    return NULL;
}

/* Nothing can have been imported. */
VB_API void ibv_unimport_pd(struct ibv_pd *pd)
{
    (void)pd;
}

VB_API void ibv_unimport_mr(struct ibv_mr *mr)
{
    (void)mr;
}

VB_API void ibv_unimport_dm(struct ibv_dm *dm)
{
    (void)dm;
}
