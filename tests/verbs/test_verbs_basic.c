// SPDX-License-Identifier: MIT
/*
 * The verbs library's device, PD, MR, CQ and completion channel entry points, called as a
 * verbs program calls them (Debian's headers, the inline ops): the device list and its
 * attributes; MR access rules (remote write needs local write, unknown bits and a foreign
 * iova refused, lkey/rkey from the token table); a channel's fd (non-blocking read says
 * EAGAIN, poll says not readable), refcounts (a channel with a CQ is busy), CQ limits;
 * arming and polling an empty CQ; destroying in order.
 */
#include <infiniband/verbs.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #c); exit(1); } } while (0)

static void device_and_port(struct ibv_context *ctx)
{
    struct ibv_device_attr da;
    struct ibv_port_attr pa;
    union ibv_gid gid;
    struct ibv_gid_entry ge;
    uint16_t pkey;

    CHECK(ibv_query_device(ctx, &da) == 0);
    CHECK(da.phys_port_cnt == 1 && da.max_qp_wr >= 1024 && da.max_cqe >= 1024 && da.max_sge >= 1);
    CHECK(da.atomic_cap == IBV_ATOMIC_HCA && da.node_guid != 0);
    struct ibv_device_attr_ex dax;
    CHECK(ibv_query_device_ex(ctx, NULL, &dax) == 0 && dax.orig_attr.phys_port_cnt == 1 && dax.phys_port_cnt_ex == 1);
    CHECK(ibv_query_port(ctx, 1, &pa) == 0);      /* the inline, through verbs_context */
    CHECK(pa.state == IBV_PORT_ACTIVE && pa.link_layer == IBV_LINK_LAYER_ETHERNET && pa.gid_tbl_len >= 1);
    CHECK(pa.active_mtu >= IBV_MTU_1024 && pa.active_mtu <= IBV_MTU_4096);
    CHECK(ibv_query_port(ctx, 2, &pa) != 0);      /* no such port */
    /* Some GID is 127.0.0.1, IPv4-mapped. */
    bool lo = false;
    for (int i = 0; i < pa.gid_tbl_len; i++) {
        static const uint8_t want[16] = { [10] = 0xff, [11] = 0xff, 127, 0, 0, 1 };

        CHECK(ibv_query_gid(ctx, 1, i, &gid) == 0);
        lo |= !memcmp(gid.raw, want, 16);
    }
    CHECK(lo);
    CHECK(ibv_query_gid_ex(ctx, 1, 0, &ge, 0) == 0 && ge.gid_type == IBV_GID_TYPE_ROCE_V2 && ge.port_num == 1);
    CHECK(ibv_query_gid_ex(ctx, 1, 100000, &ge, 0) != 0);
    CHECK(ibv_query_pkey(ctx, 1, 0, &pkey) == 0 && pkey == 0xffff);
}

static void memory(struct ibv_pd *pd)
{
    static char buf[8192];
    struct ibv_mr *mr, *mr2;

    mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    CHECK(mr && mr->addr == buf && mr->length == sizeof(buf) && mr->pd == pd && mr->lkey && mr->rkey);
    mr2 = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_REMOTE_READ);
    CHECK(mr2 && mr2->rkey != mr->rkey);
    CHECK(ibv_dereg_mr(mr2) == 0);
    /* Remote write without local write is refused, as by every verbs provider. */
    errno = 0;
    CHECK(!ibv_reg_mr(pd, buf, 64, IBV_ACCESS_REMOTE_WRITE) && errno == EINVAL);
    errno = 0;
    CHECK(!ibv_reg_mr(pd, buf, 64, IBV_ACCESS_ZERO_BASED) && errno == EINVAL);
    /* An iova other than the address: remote offsets are virtual addresses here. */
    errno = 0;
    CHECK(!ibv_reg_mr_iova2(pd, buf, 64, 0x1000, IBV_ACCESS_LOCAL_WRITE) && errno == EOPNOTSUPP);
    /* Memory that is not mapped. */
    errno = 0;
    CHECK(!ibv_reg_mr(pd, (void *)16, 64, IBV_ACCESS_LOCAL_WRITE) && errno == EFAULT);
    CHECK(ibv_dereg_mr(mr) == 0);
}

static void channel_and_cq(struct ibv_context *ctx)
{
    struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
    struct ibv_cq *cq, *evcq;
    struct ibv_wc wc[4];
    struct pollfd pfd;
    void *evctx;

    CHECK(ch && ch->fd >= 0 && ch->context == ctx);
    errno = 0;
    CHECK(!ibv_create_cq(ctx, 0, NULL, ch, 0) && errno == EINVAL);
    CHECK(!ibv_create_cq(ctx, 16, NULL, ch, 1));  /* one completion vector */
    /* As deep as libfabric's rxm asks (384 sends and receives for each of 256 peers), up to
     * the device's max_cqe. */
    struct ibv_device_attr da;
    CHECK(ibv_query_device(ctx, &da) == 0 && !ibv_create_cq(ctx, da.max_cqe + 1, NULL, NULL, 0));
    cq = ibv_create_cq(ctx, 2 * 384 * 256, NULL, NULL, 0);
    CHECK(cq && ibv_destroy_cq(cq) == 0);
    cq = ibv_create_cq(ctx, da.max_cqe, NULL, NULL, 0);
    CHECK(cq && ibv_destroy_cq(cq) == 0);
    cq = ibv_create_cq(ctx, 16, (void *)0x77, ch, 0);
    CHECK(cq && cq->cqe >= 16 && cq->channel == ch && cq->cq_context == (void *)0x77);
    CHECK(ch->refcnt == 1 && ibv_destroy_comp_channel(ch) == EBUSY);
    CHECK(ibv_poll_cq(cq, 4, wc) == 0);
    CHECK(ibv_req_notify_cq(cq, 0) == 0);
    CHECK(ibv_req_notify_cq(cq, 1) == 0);           /* armed already: still one event */
    /* Nothing completed: the channel is not readable and a non-blocking read says so. */
    pfd = (struct pollfd){ .fd = ch->fd, .events = POLLIN };
    CHECK(poll(&pfd, 1, 20) == 0);
    CHECK(fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK) == 0);
    errno = 0;
    CHECK(ibv_get_cq_event(ch, &evcq, &evctx) == -1 && errno == EAGAIN);
    CHECK(ibv_resize_cq(cq, 64) == 0 && cq->cqe >= 64);
    CHECK(ibv_resize_cq(cq, 0) == EINVAL);
    ibv_ack_cq_events(cq, 0);
    CHECK(ibv_destroy_cq(cq) == 0);                 /* armed, no events: returns */
    CHECK(ibv_destroy_comp_channel(ch) == 0);
}

int main(void)
{
    int n = -1;
    struct ibv_device **list = ibv_get_device_list(&n);
    struct ibv_context *ctx;
    struct ibv_pd *pd;

    CHECK(list && n == 1 && list[0] && !list[1]);
    CHECK(!strcmp(ibv_get_device_name(list[0]), "nd0") && ibv_get_device_guid(list[0]) != 0);
    CHECK(list[0]->transport_type == IBV_TRANSPORT_IB && list[0]->node_type == IBV_NODE_CA);
    ctx = ibv_open_device(list[0]);
    CHECK(ctx && ctx->device == list[0] && ctx->num_comp_vectors == 1 && ctx->async_fd >= 0);
    ibv_free_device_list(list);
    device_and_port(ctx);
    pd = ibv_alloc_pd(ctx);
    CHECK(pd && pd->context == ctx);
    memory(pd);
    channel_and_cq(ctx);
    CHECK(ibv_dealloc_pd(pd) == 0);
    CHECK(ibv_close_device(ctx) == 0);
    puts("verbs basics ok");
    return 0;
}
