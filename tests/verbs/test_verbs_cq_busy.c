// SPDX-License-Identifier: MIT
/*
 * ibv_destroy_cq of a CQ a QP still uses fails EBUSY at once and changes nothing, as
 * rdma-core's: not after waiting for its events to be acknowledged (a server that tears
 * down in that order hung), and without dropping the events its channel holds or its armed
 * notification. A flushed receive (the QP moved to ERR) gives the completions.
 */
#include <infiniband/verbs.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "%s:%d: %s (errno %d)\n", __FILE__, __LINE__, #c, errno); exit(1); } } while (0)

static char buf[64];

static void flush_one_receive(struct ibv_qp *qp, struct ibv_mr *mr, uint64_t id)
{
    struct ibv_sge sge = { (uintptr_t)buf, sizeof(buf), mr->lkey };
    struct ibv_recv_wr rw = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;
    struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

    CHECK(ibv_post_recv(qp, &rw, &bad) == 0);
    CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE) == 0);
}

static void wait_readable(int fd)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };

    CHECK(poll(&p, 1, 10000) == 1);
}

int main(void)
{
    struct ibv_device **list = ibv_get_device_list(NULL);
    struct ibv_context *ctx;
    struct ibv_comp_channel *ch;
    struct ibv_cq *cq, *ev_cq;
    struct ibv_pd *pd;
    struct ibv_mr *mr;
    struct ibv_qp *qp;
    struct ibv_wc wc;
    void *ev_ctx;

    CHECK(list && list[0] && (ctx = ibv_open_device(list[0])) != NULL);
    ibv_free_device_list(list);
    CHECK((pd = ibv_alloc_pd(ctx)) && (ch = ibv_create_comp_channel(ctx)));
    CHECK((cq = ibv_create_cq(ctx, 8, NULL, ch, 0)) && (mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE)));
    struct ibv_qp_init_attr qa = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
                                   .cap = { .max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1 } };
    struct ibv_qp_attr init = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = IBV_ACCESS_LOCAL_WRITE };
    CHECK((qp = ibv_create_qp(pd, &qa)) != NULL);
    CHECK(ibv_modify_qp(qp, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0);

    /* An event delivered and not acknowledged, a QP on the CQ: EBUSY, at once. */
    CHECK(ibv_req_notify_cq(cq, 0) == 0);
    flush_one_receive(qp, mr, 1);
    CHECK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0 && ev_cq == cq);
    CHECK(ibv_destroy_cq(cq) == EBUSY);
    CHECK(ibv_poll_cq(cq, 1, &wc) == 1 && wc.wr_id == 1 && wc.status == IBV_WC_WR_FLUSH_ERR);
    ibv_ack_cq_events(cq, 1);

    /* An armed notification survives a refused destroy, and so does the event it gives. */
    CHECK(ibv_req_notify_cq(cq, 0) == 0);
    CHECK(ibv_destroy_cq(cq) == EBUSY);
    struct ibv_qp *qp2 = ibv_create_qp(pd, &qa);
    CHECK(qp2 && ibv_modify_qp(qp2, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0);
    flush_one_receive(qp2, mr, 2);
    wait_readable(ch->fd);
    CHECK(ibv_destroy_cq(cq) == EBUSY);         /* the event waits in the channel */
    CHECK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0 && ev_cq == cq);
    ibv_ack_cq_events(cq, 1);
    CHECK(ibv_poll_cq(cq, 1, &wc) == 1 && wc.wr_id == 2);

    CHECK(ibv_destroy_qp(qp) == 0 && ibv_destroy_cq(cq) == EBUSY);     /* qp2 still on it */
    CHECK(ibv_destroy_qp(qp2) == 0 && ibv_destroy_cq(cq) == 0);
    CHECK(ibv_dereg_mr(mr) == 0 && ibv_destroy_comp_channel(ch) == 0);
    CHECK(ibv_dealloc_pd(pd) == 0 && ibv_close_device(ctx) == 0);
    puts("ok");
    return 0;
}
