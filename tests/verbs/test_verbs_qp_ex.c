// SPDX-License-Identifier: MIT
/*
 * Extended QPs and CQs. The client's QP is made by rdma_create_qp_ex with send ops flags, its
 * CQ by ibv_create_cq_ex; one ibv_wr_* batch carries a Send of inline data from two buffers
 * (overwritten as soon as given: the data must have been copied), a Send with immediate
 * from an SGE, a Write with immediate from an SGE list and a Read. The server waits for its
 * extended CQ's event on a completion channel, polls it with start/next/end and reads each
 * field it asked for. Then the rules of a
 * batch: one past the send queue, a setter before any builder, inline data past the QP's
 * room each fail ibv_wr_complete and post nothing of the batch; ibv_wr_abort posts nothing;
 * an empty batch completes. A window is bound and invalidated through the builders. A classic QP has no extended view; atomics, timestamps and
 * send ops past what the device carries are refused with EOPNOTSUPP.
 */
#include "cm_test.h"

#include <string.h>

#define LEN 64
#define SQ_DEPTH 4

struct target {
    uint64_t addr;
    uint32_t rkey;
};

static const uint64_t std_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM |
                                  IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |
                                  IBV_WC_EX_WITH_DLID_PATH_BITS;

static struct ibv_cq_ex *make_cq(struct ibv_context *ctx, struct ibv_comp_channel *ch)
{
    struct ibv_cq_init_attr_ex ca = { .cqe = 16, .wc_flags = std_flags, .channel = ch };
    struct ibv_cq_ex *cq = ibv_create_cq_ex(ctx, &ca);

    CHECK(cq);
    return cq;
}

/* The next completion of @cq, by the iterator; it must have succeeded with @op and @wr_id. */
static void expect_ex(struct ibv_cq_ex *cq, uint64_t wr_id, enum ibv_wc_opcode op)
{
    struct ibv_poll_cq_attr pa = { 0 };
    int st;

    while ((st = ibv_start_poll(cq, &pa)) == ENOENT)
        ;
    CHECK(st == 0);
    if (cq->status != IBV_WC_SUCCESS || cq->wr_id != wr_id || ibv_wc_read_opcode(cq) != op) {
        fprintf(stderr, "wc %llu: %s, opcode %d; wanted %llu, opcode %d\n", (unsigned long long)cq->wr_id,
                ibv_wc_status_str(cq->status), ibv_wc_read_opcode(cq), (unsigned long long)wr_id, op);
        exit(1);
    }
    ibv_end_poll(cq);
}

static struct ibv_qp *make_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_cq_ex *cq, uint64_t ops)
{
    struct ibv_qp_init_attr_ex qa = {
        .send_cq = ibv_cq_ex_to_cq(cq), .recv_cq = ibv_cq_ex_to_cq(cq), .qp_type = IBV_QPT_RC,
        .cap = { .max_send_wr = SQ_DEPTH, .max_recv_wr = 4, .max_send_sge = 2, .max_recv_sge = 1 },
        .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, .pd = pd, .send_ops_flags = ops };

    CHECK(rdma_create_qp_ex(id, &qa) == 0);
    return id->qp;
}

static void server(struct sockaddr_in *addr, int ready)
{
    struct rdma_event_channel *ch = rdma_create_event_channel();
    static char wbuf[LEN], msg[3][LEN];
    struct rdma_cm_id *l, *c = cm_take_request(ch, addr, ready, &l);
    struct ibv_pd *pd = ibv_alloc_pd(c->verbs);
    struct ibv_comp_channel *events = ibv_create_comp_channel(c->verbs);
    struct ibv_cq_ex *cq = make_cq(c->verbs, events);
    struct ibv_poll_cq_attr pa = { 0 };
    struct ibv_qp *qp = make_qp(c, pd, cq, IBV_QP_EX_WITH_SEND);
    struct ibv_mr *mr = ibv_reg_mr(pd, wbuf, sizeof(wbuf),
                                   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    struct ibv_mr *mmr = ibv_reg_mr(pd, msg, sizeof(msg), IBV_ACCESS_LOCAL_WRITE);

    CHECK(mr && mmr);
    memset(wbuf, 'r', sizeof(wbuf));
    for (int i = 0; i < 3; i++)
        cm_post_recv(qp, mmr, msg[i], LEN, 70 + (uint64_t)i);
    struct target t = { (uintptr_t)wbuf, mr->rkey };
    struct rdma_conn_param cp = { .private_data = &t, .private_data_len = sizeof(t), .responder_resources = 1 };
    CHECK(rdma_accept(c, &cp) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ESTABLISHED)) == 0);

    /* The first receive's event on the extended CQ's channel, as on a classic CQ's; then
     * the three receives in one pass of the iterator: start, then next, next. */
    struct ibv_cq *ev_cq;
    void *ev_ctx;
    int st;

    CHECK(ibv_req_notify_cq(ibv_cq_ex_to_cq(cq), 0) == 0);
    CHECK(ibv_get_cq_event(events, &ev_cq, &ev_ctx) == 0 && ev_cq == ibv_cq_ex_to_cq(cq));
    ibv_ack_cq_events(ev_cq, 1);
    while ((st = ibv_start_poll(cq, &pa)) == ENOENT)
        ;
    for (int i = 0; i < 3; i++) {
        static const uint32_t len[3] = { 11, 20, 30 };
        static const enum ibv_wc_opcode op[3] = { IBV_WC_RECV, IBV_WC_RECV, IBV_WC_RECV_RDMA_WITH_IMM };

        if (i)
            while ((st = ibv_next_poll(cq)) == ENOENT)
                ;
        CHECK(st == 0 && cq->status == IBV_WC_SUCCESS && cq->wr_id == 70 + (uint64_t)i);
        CHECK(ibv_wc_read_opcode(cq) == op[i] && ibv_wc_read_byte_len(cq) == len[i]);
        CHECK(ibv_wc_read_qp_num(cq) == qp->qp_num && ibv_wc_read_slid(cq) == 0);
        CHECK(!!(ibv_wc_read_wc_flags(cq) & IBV_WC_WITH_IMM) == (i > 0));
        if (i)
            CHECK(ibv_wc_read_imm_data(cq) == htonl(0x5150 + (uint32_t)i));
    }
    ibv_end_poll(cq);
    CHECK(memcmp(msg[0], "inline-data", 11) == 0);
    CHECK(memcmp(msg[1], "sge-sge-sge-sge-sge-", 20) == 0);
    CHECK(memcmp(wbuf, "write-write-write-write-write-", 30) == 0 && wbuf[30] == 'r');
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED)) == 0);
    rdma_destroy_qp(c);
    CHECK(ibv_dereg_mr(mr) == 0 && ibv_dereg_mr(mmr) == 0);
    CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)) == 0 && rdma_destroy_id(c) == 0 && ibv_dealloc_pd(pd) == 0);
    CHECK(ibv_destroy_comp_channel(events) == 0 && rdma_destroy_id(l) == 0);
    rdma_destroy_event_channel(ch);
    exit(0);
}

/* The batch rules, on a connected extended QP whose CQ @cq is empty. */
static void batch_rules(struct ibv_qp_ex *x, struct ibv_cq_ex *cq, struct ibv_mr *mr, const struct target *t)
{
    struct ibv_poll_cq_attr pa = { 0 };
    struct ibv_qp_init_attr init;
    struct ibv_qp_attr qattr;
    char *big;

    CHECK(ibv_query_qp(&x->qp_base, &qattr, IBV_QP_CAP, &init) == 0);
    big = calloc(1, init.cap.max_inline_data + 1);
    CHECK(big);
    x->wr_flags = IBV_SEND_SIGNALED;
    /* One request past the send queue: refused whole. */
    ibv_wr_start(x);
    for (int i = 0; i <= SQ_DEPTH; i++) {
        x->wr_id = 100 + (uint64_t)i;
        ibv_wr_rdma_write(x, t->rkey, t->addr + 40);
        ibv_wr_set_sge(x, mr->lkey, (uintptr_t)mr->addr, 1);
    }
    CHECK(ibv_wr_complete(x) == ENOMEM);
    /* A setter with no request to set. */
    ibv_wr_start(x);
    ibv_wr_set_sge(x, mr->lkey, (uintptr_t)mr->addr, 1);
    CHECK(ibv_wr_complete(x) == EINVAL);
    /* Inline data past the QP's room. */
    ibv_wr_start(x);
    x->wr_id = 110;
    ibv_wr_rdma_write(x, t->rkey, t->addr + 40);
    ibv_wr_set_inline_data(x, big, init.cap.max_inline_data + 1);
    CHECK(ibv_wr_complete(x) == ENOMEM);
    free(big);
    /* Aborted: nothing goes. An empty batch completes. */
    ibv_wr_start(x);
    x->wr_id = 111;
    ibv_wr_rdma_write(x, t->rkey, t->addr + 40);
    ibv_wr_set_sge(x, mr->lkey, (uintptr_t)mr->addr, 1);
    ibv_wr_abort(x);
    ibv_wr_start(x);
    CHECK(ibv_wr_complete(x) == 0);
    CHECK(ibv_start_poll(cq, &pa) == ENOENT);
    /* And the queue is whole: a batch of its full depth goes. */
    ibv_wr_start(x);
    for (int i = 0; i < SQ_DEPTH; i++) {
        x->wr_id = 120 + (uint64_t)i;
        ibv_wr_rdma_write(x, t->rkey, t->addr + 40);
        ibv_wr_set_sge(x, mr->lkey, (uintptr_t)mr->addr, 1);
    }
    CHECK(ibv_wr_complete(x) == 0);
    for (int i = 0; i < SQ_DEPTH; i++)
        expect_ex(cq, 120 + (uint64_t)i, IBV_WC_RDMA_WRITE);
}

/* A type 2 window bound and invalidated through the builders, in one batch. */
static void window_ops(struct ibv_qp_ex *x, struct ibv_cq_ex *cq, struct ibv_pd *pd)
{
    static char win[64];
    struct ibv_mr *wmr = ibv_reg_mr(pd, win, sizeof(win), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                                          IBV_ACCESS_MW_BIND);
    struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
    struct ibv_mw_bind_info bi = { .mr = wmr, .addr = (uintptr_t)win, .length = sizeof(win),
                                   .mw_access_flags = IBV_ACCESS_REMOTE_WRITE };
    uint32_t rkey;

    CHECK(wmr && mw);
    rkey = ibv_inc_rkey(mw->rkey);
    ibv_wr_start(x);
    x->wr_flags = IBV_SEND_SIGNALED;
    x->wr_id = 130;
    ibv_wr_bind_mw(x, mw, rkey, &bi);
    x->wr_id = 131;
    ibv_wr_local_inv(x, rkey);
    CHECK(ibv_wr_complete(x) == 0);
    expect_ex(cq, 130, IBV_WC_BIND_MW);
    expect_ex(cq, 131, IBV_WC_LOCAL_INV);
    CHECK(mw->rkey == rkey);
    CHECK(ibv_dealloc_mw(mw) == 0 && ibv_dereg_mr(wmr) == 0);
}

/* What is not offered, and the classic QP's missing extended view. */
static void refusals(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_cq_ex *cq)
{
    struct ibv_cq_init_attr_ex ca = { .cqe = 4, .wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP };
    struct ibv_qp_init_attr_ex qa = {
        .send_cq = ibv_cq_ex_to_cq(cq), .recv_cq = ibv_cq_ex_to_cq(cq), .qp_type = IBV_QPT_RC,
        .cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
        .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, .pd = pd,
        .send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_TSO };
    struct ibv_qp_init_attr ca_classic = { .send_cq = qa.send_cq, .recv_cq = qa.recv_cq, .qp_type = IBV_QPT_RC,
                                           .cap = qa.cap };
    struct ibv_qp *qp;

    errno = 0;
    CHECK(!ibv_create_cq_ex(id->verbs, &ca) && errno == EOPNOTSUPP);
    CHECK(!ibv_create_qp_ex(id->verbs, &qa) && errno == EOPNOTSUPP);
    qa.qp_type = IBV_QPT_UD;
    qa.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE;
    CHECK(!ibv_create_qp_ex(id->verbs, &qa) && errno == EOPNOTSUPP);
    qp = ibv_create_qp(pd, &ca_classic);
    CHECK(qp && !ibv_qp_to_qp_ex(qp));
    CHECK(ibv_destroy_qp(qp) == 0);
}

int main(void)
{
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    static char buf[LEN], rbuf[LEN];
    char in1[6] = "inline", in2[5] = "-data";
    struct rdma_event_channel *ch;
    struct rdma_cm_event *ev;
    struct target t;
    int st;
    pid_t pid = fork_server(server, &addr);
    struct rdma_cm_id *id = cm_client_resolved(&ch, &addr);
    struct ibv_pd *pd = ibv_alloc_pd(id->verbs);
    struct ibv_cq_ex *cq = make_cq(id->verbs, NULL);
    struct ibv_qp *qp = make_qp(id, pd, cq,
                                IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_WRITE |
                                    IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |
                                    IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV);
    struct ibv_qp_ex *x = ibv_qp_to_qp_ex(qp);
    struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
    struct ibv_mr *rmr = ibv_reg_mr(pd, rbuf, sizeof(rbuf), IBV_ACCESS_LOCAL_WRITE);

    CHECK(x && mr && rmr && &x->qp_base == qp);
    CHECK(rdma_connect(id, NULL) == 0);
    ev = expect(ch, RDMA_CM_EVENT_ESTABLISHED);
    CHECK(ev->param.conn.private_data_len >= sizeof(t));
    memcpy(&t, ev->param.conn.private_data, sizeof(t));
    CHECK(rdma_ack_cm_event(ev) == 0);

    memcpy(buf, "sge-sge-sge-sge-sge-write-write-write-write-write-", 50);
    struct ibv_data_buf inl[2] = { { in1, sizeof(in1) }, { in2, sizeof(in2) } };
    struct ibv_sge wl[2] = { { (uintptr_t)buf + 20, 12, mr->lkey }, { (uintptr_t)buf + 32, 18, mr->lkey } };
    ibv_wr_start(x);
    x->wr_flags = IBV_SEND_SIGNALED;
    x->wr_id = 1;
    ibv_wr_send(x);
    ibv_wr_set_inline_data_list(x, 2, inl);
    memset(in1, 'X', sizeof(in1));                  /* copied at the call */
    memset(in2, 'X', sizeof(in2));
    x->wr_id = 2;
    ibv_wr_send_imm(x, htonl(0x5151));
    ibv_wr_set_sge(x, mr->lkey, (uintptr_t)buf, 20);
    x->wr_id = 3;
    ibv_wr_rdma_write_imm(x, t.rkey, t.addr, htonl(0x5152));
    ibv_wr_set_sge_list(x, 2, wl);
    x->wr_id = 4;
    ibv_wr_rdma_read(x, t.rkey, t.addr + 30);
    ibv_wr_set_sge(x, rmr->lkey, (uintptr_t)rbuf, 8);
    CHECK(ibv_wr_complete(x) == 0);
    expect_ex(cq, 1, IBV_WC_SEND);
    expect_ex(cq, 2, IBV_WC_SEND);
    expect_ex(cq, 3, IBV_WC_RDMA_WRITE);
    expect_ex(cq, 4, IBV_WC_RDMA_READ);
    CHECK(memcmp(rbuf, "rrrrrrrr", 8) == 0);

    batch_rules(x, cq, mr, &t);
    window_ops(x, cq, pd);
    refusals(id, pd, cq);

    CHECK(rdma_disconnect(id) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED)) == 0);
    rdma_destroy_qp(id);
    CHECK(ibv_dereg_mr(mr) == 0 && ibv_dereg_mr(rmr) == 0 && rdma_destroy_id(id) == 0);
    CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)) == 0 && ibv_dealloc_pd(pd) == 0);
    rdma_destroy_event_channel(ch);
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    puts("extended QPs and CQs ok");
    return 0;
}
