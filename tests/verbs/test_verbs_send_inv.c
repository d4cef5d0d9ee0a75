// SPDX-License-Identifier: MIT
/*
 * Send with Invalidate through verbs. The server binds a type 2 window and sends its rkey;
 * the client writes through it, then sends with IBV_WR_SEND_WITH_INV naming it. The
 * server's receive reports IBV_WC_WITH_INV and the rkey in invalidated_rkey, and the
 * client's next write through the window completes IBV_WC_REM_ACCESS_ERR without touching
 * the memory. Runs on the transport ND_TRANSPORT picks.
 */
#include "cm_test.h"

#include <arpa/inet.h>
#include <string.h>
#include <sys/wait.h>

#define LEN 1024

struct window {
    uint64_t addr;
    uint32_t rkey;
};

static void expect_wc(struct ibv_cq *cq, uint64_t id, enum ibv_wc_status st)
{
    struct ibv_wc wc = cm_poll_one(cq);

    if (wc.wr_id != id || wc.status != st) {
        fprintf(stderr, "wc %llu %s, wanted %llu %s\n", (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status),
                (unsigned long long)id, ibv_wc_status_str(st));
        exit(1);
    }
}

static void post(struct ibv_qp *qp, struct ibv_mr *mr, void *buf, uint32_t len, enum ibv_wr_opcode op,
                 const struct window *w, uint32_t inv, uint64_t id)
{
    struct ibv_sge sge = { (uintptr_t)buf, len, mr->lkey };
    struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = op,
                              .send_flags = IBV_SEND_SIGNALED, .invalidate_rkey = inv }, *bad;

    if (w)
        wr.wr.rdma = (typeof(wr.wr.rdma)){ w->addr, w->rkey };
    CHECK(ibv_post_send(qp, &wr, &bad) == 0);
}

static void server(struct sockaddr_in *addr, int ready)
{
    struct rdma_event_channel *ch = rdma_create_event_channel();
    static char buf[2 * LEN], msg[2][64];
    struct rdma_cm_id *l, *c = cm_take_request(ch, addr, ready, &l);
    struct ibv_pd *pd = ibv_alloc_pd(c->verbs);
    struct ibv_cq *cq = pd ? ibv_create_cq(c->verbs, 16, NULL, NULL, 0) : NULL;
    struct ibv_cq *rcq = pd ? ibv_create_cq(c->verbs, 16, NULL, NULL, 0) : NULL;
    struct ibv_qp_init_attr qa = { .send_cq = cq, .recv_cq = rcq, .qp_type = IBV_QPT_RC,
                                   .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 } };
    CHECK(cq && rcq && rdma_create_qp(c, pd, &qa) == 0);
    struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                                          IBV_ACCESS_MW_BIND);
    struct ibv_mr *mmr = ibv_reg_mr(pd, msg, sizeof(msg), IBV_ACCESS_LOCAL_WRITE);
    struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
    CHECK(mr && mmr && mw);
    cm_post_recv(c->qp, mmr, msg[1], sizeof(msg[1]), 50);
    CHECK(rdma_accept(c, NULL) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ESTABLISHED)) == 0);

    uint32_t rkey = ibv_inc_rkey(mw->rkey);
    struct ibv_send_wr bw = { .wr_id = 10, .opcode = IBV_WR_BIND_MW, .send_flags = IBV_SEND_SIGNALED,
                              .bind_mw = { mw, rkey, { mr, (uintptr_t)buf, sizeof(buf), IBV_ACCESS_REMOTE_WRITE } } },
                       *bad;
    CHECK(ibv_post_send(c->qp, &bw, &bad) == 0);
    expect_wc(cq, 10, IBV_WC_SUCCESS);
    struct window w = { (uintptr_t)buf, rkey };
    memcpy(msg[0], &w, sizeof(w));
    post(c->qp, mmr, msg[0], sizeof(w), IBV_WR_SEND, NULL, 0, 11);
    expect_wc(cq, 11, IBV_WC_SUCCESS);

    struct ibv_wc wc = cm_poll_one(rcq);
    if (wc.wr_id != 50 || wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV || wc.byte_len != 5 ||
        !(wc.wc_flags & IBV_WC_WITH_INV) || wc.invalidated_rkey != rkey) {
        fprintf(stderr, "receive: %s opcode %d len %u flags 0x%x rkey 0x%x (window 0x%x)\n",
                ibv_wc_status_str(wc.status), wc.opcode, wc.byte_len, wc.wc_flags, wc.invalidated_rkey, rkey);
        exit(1);
    }
    CHECK(memcmp(msg[1], "inval", 5) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED)) == 0);
    for (int i = 0; i < LEN; i++)
        CHECK(buf[i] == 'W' && buf[LEN + i] == 0);      /* the write after the invalidation left it */

    rdma_destroy_qp(c);
    CHECK(ibv_dealloc_mw(mw) == 0 && ibv_dereg_mr(mr) == 0 && ibv_dereg_mr(mmr) == 0);
    CHECK(ibv_destroy_cq(cq) == 0 && ibv_destroy_cq(rcq) == 0 && rdma_destroy_id(c) == 0 && ibv_dealloc_pd(pd) == 0);
    CHECK(rdma_destroy_id(l) == 0);
    rdma_destroy_event_channel(ch);
    exit(0);
}

int main(void)
{
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct ibv_qp_init_attr qa = { .cap = { .max_send_wr = 8, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1 },
                                   .qp_type = IBV_QPT_RC };
    static char buf[LEN], msg[64];
    struct rdma_event_channel *ch;
    struct rdma_cm_id *id;
    struct window w;
    int st;
    pid_t pid;

    pid = fork_server(server, &addr);
    id = cm_client_resolved(&ch, &addr);
    struct ibv_cq *cq = ibv_create_cq(id->verbs, 8, NULL, NULL, 0), *rcq = ibv_create_cq(id->verbs, 8, NULL, NULL, 0);
    CHECK(cq && rcq);
    qa.send_cq = cq;
    qa.recv_cq = rcq;
    CHECK(rdma_create_qp(id, NULL, &qa) == 0);
    struct ibv_mr *mr = ibv_reg_mr(id->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
    struct ibv_mr *mmr = ibv_reg_mr(id->pd, msg, sizeof(msg), IBV_ACCESS_LOCAL_WRITE);
    CHECK(mr && mmr);
    cm_post_recv(id->qp, mmr, msg, sizeof(msg), 60);
    CHECK(rdma_connect(id, NULL) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ESTABLISHED)) == 0);
    expect_wc(rcq, 60, IBV_WC_SUCCESS);
    memcpy(&w, msg, sizeof(w));

    memset(buf, 'W', sizeof(buf));
    post(id->qp, mr, buf, LEN, IBV_WR_RDMA_WRITE, &w, 0, 1);
    expect_wc(cq, 1, IBV_WC_SUCCESS);
    memcpy(msg, "inval", 5);
    post(id->qp, mmr, msg, 5, IBV_WR_SEND_WITH_INV, NULL, w.rkey, 2);
    expect_wc(cq, 2, IBV_WC_SUCCESS);
    memset(buf, 'X', sizeof(buf));
    w.addr += LEN;
    post(id->qp, mr, buf, LEN, IBV_WR_RDMA_WRITE, &w, 0, 3);
    expect_wc(cq, 3, IBV_WC_REM_ACCESS_ERR);

    CHECK(rdma_disconnect(id) == 0 || errno == EINVAL);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED)) == 0);
    rdma_destroy_qp(id);
    CHECK(ibv_dereg_mr(mr) == 0 && ibv_dereg_mr(mmr) == 0 && rdma_destroy_id(id) == 0);
    CHECK(ibv_destroy_cq(cq) == 0 && ibv_destroy_cq(rcq) == 0);
    rdma_destroy_event_channel(ch);
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    puts("send with invalidate ok");
    return 0;
}
