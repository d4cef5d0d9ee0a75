// SPDX-License-Identifier: MIT
/*
 * Two QPs of one process connected to each other by address vector (as rdma-core's own
 * tests connect their client and server) and torn down at once, QPs then CQs, while the
 * library's event thread may still be setting their connection up: nothing of theirs is
 * touched after the application destroyed it (under ASan a use after free fails this), and
 * every call succeeds. Many rounds, so that the teardown meets the set-up at every step.
 * Runs on the transport ND_TRANSPORT picks.
 */
#include "av_test.h"

#define ROUNDS 100

static uint64_t now_us(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000 + (uint64_t)t.tv_nsec / 1000;
}

static struct ibv_qp *new_qp(struct ibv_pd *pd, struct ibv_cq *cq)
{
    struct ibv_qp_init_attr qa = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
                                   .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
                                            .max_recv_sge = 1 } };
    struct ibv_qp_attr init = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = IBV_ACCESS_LOCAL_WRITE };
    struct ibv_qp *qp = ibv_create_qp(pd, &qa);

    CHECK(qp);
    CHECK(ibv_modify_qp(qp, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0);
    return qp;
}

/* One player, as rdma-core's tests make each: its own context, PD and CQ. */
struct player {
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_cq *cq;
    struct ibv_qp *qp;
    struct endpoint ep;
};

static void player_open(struct player *p)
{
    struct ibv_device **list = ibv_get_device_list(NULL);

    CHECK(list && list[0] && (p->ctx = ibv_open_device(list[0])) != NULL);
    ibv_free_device_list(list);
    CHECK((p->pd = ibv_alloc_pd(p->ctx)) != NULL && (p->cq = ibv_create_cq(p->ctx, 16, NULL, NULL, 0)) != NULL);
    p->qp = new_qp(p->pd, p->cq);
    p->ep.qpn = p->qp->qp_num;
    CHECK(ibv_query_gid(p->ctx, 1, 0, &p->ep.gid) == 0);
}

static void player_close(struct player *p)
{
    CHECK(ibv_destroy_qp(p->qp) == 0 && ibv_destroy_cq(p->cq) == 0);
    CHECK(ibv_dealloc_pd(p->pd) == 0 && ibv_close_device(p->ctx) == 0);
}

int main(void)
{
    for (int r = 0; r < ROUNDS; r++) {
        struct player a = { 0 }, b = { 0 };

        player_open(&a);
        player_open(&b);
        struct side sa = { .qp = a.qp }, sb = { .qp = b.qp };
        to_rts(&sa, &b.ep, 14, 7);
        to_rts(&sb, &a.ep, 14, 7);
        /* Each round stops the set-up at another step: after polling for 0 to 1.2 ms. */
        for (uint64_t end = now_us() + (uint64_t)(r % 13) * 100; now_us() < end;) {
            struct ibv_wc wc;

            (void)ibv_poll_cq(a.cq, 1, &wc);
        }
        player_close(&a);
        player_close(&b);
    }
    puts("ok");
    return 0;
}
