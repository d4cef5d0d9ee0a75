// SPDX-License-Identifier: MIT
/*
 * Address handles, checked as rxe checks them: a global route from a GID of port 1 to a
 * GID that names an address is taken; no GRH (RoCE has no LIDs), another port, a source
 * GID index past the table or an empty destination GID fail EINVAL. ibv_create_ah_from_wc
 * makes one from a UD receive's GRH (RoCE v2 over IPv4: the IPv4 header in its last 20
 * bytes) and refuses a completion without one.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <netinet/ip.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "%s:%d: %s (errno %d)\n", __FILE__, __LINE__, #c, errno); exit(1); } } while (0)

static struct ibv_pd *pd;

/* ibv_create_ah with @attr must fail with EINVAL. */
static void refused(struct ibv_ah_attr attr)
{
    errno = 0;
    CHECK(!ibv_create_ah(pd, &attr) && errno == EINVAL);
}

int main(void)
{
    struct ibv_device **list = ibv_get_device_list(NULL);
    struct ibv_context *ctx;
    struct ibv_port_attr pa;
    union ibv_gid gid;
    struct ibv_ah_attr attr, good;
    struct ibv_ah *ah;
    int v4 = -1;

    CHECK(list && list[0] && (ctx = ibv_open_device(list[0])) && (pd = ibv_alloc_pd(ctx)));
    CHECK(ibv_query_port(ctx, 1, &pa) == 0);
    for (int i = 0; i < pa.gid_tbl_len && v4 < 0; i++)
        if (ibv_query_gid(ctx, 1, i, &gid) == 0 && gid.raw[10] == 0xff && gid.raw[11] == 0xff)
            v4 = i;
    CHECK(v4 >= 0);             /* IPv4 GIDs come first: lo's at least */

    good = (struct ibv_ah_attr){ .is_global = 1, .port_num = 1, .grh = { .dgid = gid, .sgid_index = (uint8_t)v4,
                                                                         .hop_limit = 64 } };
    ah = ibv_create_ah(pd, &good);
    CHECK(ah && ah->pd == pd && ah->context == ctx);
    CHECK(ibv_destroy_ah(ah) == 0);

    attr = good, attr.is_global = 0;
    refused(attr);
    attr = good, attr.port_num = 2;
    refused(attr);
    attr = good, attr.grh.sgid_index = (uint8_t)pa.gid_tbl_len;
    refused(attr);
    attr = good, memset(&attr.grh.dgid, 0, sizeof(attr.grh.dgid));
    refused(attr);
    CHECK(!ibv_create_ah(NULL, &good) && errno == EINVAL);

    /* From a receive: a GRH whose IPv4 header says the datagram came from our address. */
    struct ibv_grh grh;
    struct iphdr ip = { .version = 4, .ihl = 5, .ttl = 64, .protocol = IPPROTO_UDP };
    struct ibv_wc wc = { .wc_flags = IBV_WC_GRH, .src_qp = 0x800001 };

    memcpy(&ip.saddr, gid.raw + 12, 4);
    memcpy(&ip.daddr, gid.raw + 12, 4);
    memset(&grh, 0, sizeof(grh));
    memcpy((uint8_t *)&grh + 20, &ip, sizeof(ip));
    CHECK(ibv_init_ah_from_wc(ctx, 1, &wc, &grh, &attr) == 0);
    CHECK(attr.is_global && !memcmp(&attr.grh.dgid, &gid, sizeof(gid)) && attr.grh.sgid_index == v4);
    ah = ibv_create_ah_from_wc(pd, &wc, &grh, 1);
    CHECK(ah && ibv_destroy_ah(ah) == 0);
    wc.wc_flags = 0;
    errno = 0;
    CHECK(!ibv_create_ah_from_wc(pd, &wc, &grh, 1) && errno == EINVAL);

    CHECK(ibv_dealloc_pd(pd) == 0 && ibv_close_device(ctx) == 0);
    ibv_free_device_list(list);
    printf("address handles ok\n");
    return 0;
}
