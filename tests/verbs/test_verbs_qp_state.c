// SPDX-License-Identifier: MIT
/*
 * The QP state machine as ibv_modify_qp and ibv_query_qp see it (connected RC):
 * - a new QP is in RESET; RTR and RTS need the steps before them; SQD is not offered;
 * - a send posted before the QP has a connection is refused, a receive in INIT is kept;
 * - ERR from INIT flushes the receive, and the QP then reports ERR;
 * - from ERR only RESET and ERR are edges; after RESET the QP is reusable (INIT again),
 *   with nothing of its past left on its CQ, as an RNIC's;
 * - the state reported is the QP's own, whatever the application last asked: the field
 *   ibv_qp.state follows a query, as rdma-core's does.
 * Runs on the transport ND_TRANSPORT picks.
 */
#include <infiniband/verbs.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "%s:%d: %s (errno %d)\n", __FILE__, __LINE__, #c, errno); exit(1); } } while (0)

static enum ibv_qp_state query(struct ibv_qp *qp)
{
    struct ibv_qp_attr a;
    struct ibv_qp_init_attr ia;

    CHECK(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia) == 0);
    CHECK(a.cur_qp_state == a.qp_state && qp->state == a.qp_state);
    return a.qp_state;
}

static int move(struct ibv_qp *qp, enum ibv_qp_state to)
{
    struct ibv_qp_attr a = { .qp_state = to, .port_num = 1, .qp_access_flags = IBV_ACCESS_LOCAL_WRITE };
    int mask = IBV_QP_STATE;

    if (to == IBV_QPS_INIT)
        mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
    return ibv_modify_qp(qp, &a, mask);
}

int main(void)
{
    struct ibv_device **list = ibv_get_device_list(NULL);
    static char buf[64];
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_cq *cq;
    struct ibv_qp *qp;
    struct ibv_mr *mr;
    struct ibv_wc wc;

    CHECK(list && list[0]);
    CHECK((ctx = ibv_open_device(list[0])) != NULL);
    ibv_free_device_list(list);
    CHECK((pd = ibv_alloc_pd(ctx)) && (cq = ibv_create_cq(ctx, 8, NULL, NULL, 0)));
    CHECK((mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE)) != NULL);
    struct ibv_qp_init_attr qa = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
                                   .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 } };
    CHECK((qp = ibv_create_qp(pd, &qa)) != NULL);
    /* The iWARP personality reports RESET as INIT, as siw does (an RNIC's QP has no RESET). */
    const char *personality = getenv("ND_VERBS_PERSONALITY");
    enum ibv_qp_state reset_as_queried = personality && !strcmp(personality, "iwarp") ? IBV_QPS_INIT : IBV_QPS_RESET;
    CHECK(qp->state == IBV_QPS_RESET);
    /* Inline room is granted whatever is asked, 0 included, as rdma-core's providers grant
     * theirs; ibv_query_qp says the same. More than the device has is refused. */
    struct ibv_qp_attr qattr;
    struct ibv_qp_init_attr qinit;
    CHECK(qa.cap.max_inline_data >= 64);
    CHECK(ibv_query_qp(qp, &qattr, IBV_QP_CAP, &qinit) == 0 && qattr.cap.max_inline_data == qa.cap.max_inline_data);
    struct ibv_qp_init_attr big = qa;
    big.cap.max_inline_data = 1u << 20;
    CHECK(ibv_create_qp(pd, &big) == NULL && errno == EINVAL);
    /* A QP that only sends, or only receives, may ask for no room for the other. */
    struct ibv_qp_init_attr one_way = qa;
    one_way.cap.max_recv_wr = 0;
    struct ibv_qp *sender = ibv_create_qp(pd, &one_way);
    one_way = qa;
    one_way.cap.max_send_wr = 0;
    struct ibv_qp *receiver = ibv_create_qp(pd, &one_way);
    CHECK(sender && receiver && ibv_destroy_qp(sender) == 0 && ibv_destroy_qp(receiver) == 0);

    CHECK(query(qp) == reset_as_queried);
    CHECK(move(qp, IBV_QPS_RTR) == EINVAL && move(qp, IBV_QPS_RTS) == EINVAL);
    CHECK(move(qp, IBV_QPS_SQD) == EINVAL && move(qp, (enum ibv_qp_state)99) == EINVAL);
    CHECK(query(qp) == reset_as_queried);
    CHECK(move(qp, IBV_QPS_INIT) == 0 && query(qp) == IBV_QPS_INIT);
    CHECK(move(qp, IBV_QPS_INIT) == 0 && move(qp, IBV_QPS_RTS) == EINVAL && query(qp) == IBV_QPS_INIT);

    struct ibv_sge sge = { (uintptr_t)buf, sizeof(buf), mr->lkey };
    struct ibv_recv_wr rw = { .wr_id = 7, .sg_list = &sge, .num_sge = 1 }, *rbad;
    struct ibv_send_wr sw = { .wr_id = 8, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                              .send_flags = IBV_SEND_SIGNALED }, *sbad;
    CHECK(ibv_post_recv(qp, &rw, &rbad) == 0);
    CHECK(ibv_post_send(qp, &sw, &sbad) != 0 && sbad == &sw);
    /* A lone Send the fast path does not take (a flag not carried, a negative count) is
     * refused the same way, and so is one in a list. */
    struct ibv_send_wr odd = sw, two[2] = { sw, sw };
    odd.send_flags |= IBV_SEND_IP_CSUM;
    sbad = NULL;
    CHECK(ibv_post_send(qp, &odd, &sbad) == EINVAL && sbad == &odd);
    odd = sw;
    odd.num_sge = -1;
    sbad = NULL;
    CHECK(ibv_post_send(qp, &odd, &sbad) == EINVAL && sbad == &odd);
    two[0].next = &two[1];
    sbad = NULL;
    CHECK(ibv_post_send(qp, two, &sbad) != 0 && sbad == &two[0]);
    CHECK(ibv_poll_cq(cq, 1, &wc) == 0);

    /* The application's ERR: the receive flushes, and the QP says so. */
    CHECK(move(qp, IBV_QPS_ERR) == 0 && query(qp) == IBV_QPS_ERR);
    CHECK(ibv_poll_cq(cq, 1, &wc) == 1 && wc.wr_id == 7 && wc.status == IBV_WC_WR_FLUSH_ERR);
    CHECK(move(qp, IBV_QPS_INIT) == EINVAL && move(qp, IBV_QPS_RTS) == EINVAL && move(qp, IBV_QPS_ERR) == 0);
    /* A send posted in ERR completes with a flush. */
    CHECK(ibv_post_send(qp, &sw, &sbad) == 0);
    CHECK(ibv_poll_cq(cq, 1, &wc) == 1 && wc.wr_id == 8 && wc.status == IBV_WC_WR_FLUSH_ERR);
    CHECK(move(qp, IBV_QPS_RESET) == 0 && query(qp) == reset_as_queried);
    CHECK(ibv_poll_cq(cq, 1, &wc) == 0);
    CHECK(move(qp, IBV_QPS_INIT) == 0 && query(qp) == IBV_QPS_INIT);

    CHECK(ibv_destroy_qp(qp) == 0);
    CHECK(ibv_dereg_mr(mr) == 0 && ibv_destroy_cq(cq) == 0 && ibv_dealloc_pd(pd) == 0);
    CHECK(ibv_close_device(ctx) == 0);
    puts("qp states ok");
    return 0;
}
