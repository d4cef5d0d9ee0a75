// SPDX-License-Identifier: MIT
/*
 * Memory windows through verbs. A forked server binds a type 2 window with IBV_WR_BIND_MW
 * and the rkey ibv_inc_rkey made, and a type 1 window with ibv_bind_mw twice (the rebind
 * gives a new key in the same slot); binds complete IBV_WC_BIND_MW. The client writes
 * through the type 2 window and reads through the type 1 window's second binding. The
 * server then invalidates the type 2 window (IBV_WR_LOCAL_INV, IBV_WC_LOCAL_INV), and the
 * client's next write through it fails IBV_WC_REM_ACCESS_ERR without touching the memory.
 * Binds the verbs rules forbid are refused at post. Runs on the transport ND_TRANSPORT picks.
 */
#include "cm_test.h"

#include <arpa/inet.h>
#include <string.h>
#include <sys/wait.h>

struct windows {
    uint64_t addr2, addr1;
    uint32_t rkey2, rkey1_old, rkey1;
};

static void expect_wc(struct ibv_cq *cq, uint64_t wr_id, enum ibv_wc_opcode op, enum ibv_wc_status st)
{
    struct ibv_wc wc = cm_poll_one(cq);

    if (wc.wr_id != wr_id || wc.status != st || (st == IBV_WC_SUCCESS && wc.opcode != op)) {
        fprintf(stderr, "wc wr_id %llu opcode %d status %s, wanted %llu %d %s\n", (unsigned long long)wc.wr_id,
                wc.opcode, ibv_wc_status_str(wc.status), (unsigned long long)wr_id, op, ibv_wc_status_str(st));
        exit(1);
    }
}

static void send_msg(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_mr *mr, void *buf, uint32_t len)
{
    struct ibv_sge sge = { (uintptr_t)buf, len, mr->lkey };
    struct ibv_send_wr wr = { .wr_id = 99, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                              .send_flags = IBV_SEND_SIGNALED }, *bad;

    CHECK(ibv_post_send(qp, &wr, &bad) == 0);
    expect_wc(cq, 99, IBV_WC_SEND, IBV_WC_SUCCESS);
}

/* What verbs forbids is refused when posted, before anything runs. */
static void refused_binds(struct ibv_qp *qp, struct ibv_mw *mw1, struct ibv_mw *mw2, struct ibv_mr *mr,
                          struct ibv_mr *plain)
{
    struct ibv_mw_bind b1 = { .wr_id = 1, .bind_info = { mr, (uintptr_t)mr->addr, 64, IBV_ACCESS_REMOTE_READ } };
    struct ibv_send_wr wr = { .wr_id = 2, .opcode = IBV_WR_BIND_MW }, *bad;

    CHECK(ibv_bind_mw(qp, mw2, &b1) == EINVAL);                 /* type 2 binds are posted */
    wr.bind_mw.mw = mw1;
    wr.bind_mw.rkey = ibv_inc_rkey(mw1->rkey);
    wr.bind_mw.bind_info = b1.bind_info;
    CHECK(ibv_post_send(qp, &wr, &bad) == EINVAL && bad == &wr); /* type 1 binds are not */
    wr.bind_mw.mw = mw2;
    CHECK(ibv_post_send(qp, &wr, &bad) == EINVAL);               /* another window's rkey */
    wr.bind_mw.rkey = ibv_inc_rkey(mw2->rkey);
    wr.bind_mw.bind_info.mr = plain;
    CHECK(ibv_post_send(qp, &wr, &bad) == EINVAL);               /* region without MW_BIND */
    wr.bind_mw.bind_info = (struct ibv_mw_bind_info){ mr, (uintptr_t)mr->addr + mr->length - 8, 64,
                                                      IBV_ACCESS_REMOTE_READ };
    CHECK(ibv_post_send(qp, &wr, &bad) == EINVAL);               /* past the region's end */
}

static void bind_windows(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_mr *mr, char *buf,
                         struct ibv_mw *mw1, struct ibv_mw *mw2, struct windows *w)
{
    uint32_t rkey2 = ibv_inc_rkey(mw2->rkey);
    struct ibv_send_wr wr = { .wr_id = 10, .opcode = IBV_WR_BIND_MW, .send_flags = IBV_SEND_SIGNALED,
                              .bind_mw = { mw2, rkey2, { mr, (uintptr_t)buf + 1024, 1024,
                                                         IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                                                             IBV_ACCESS_LOCAL_WRITE } } }, *bad;

    CHECK(ibv_post_send(qp, &wr, &bad) == 0 && mw2->rkey == rkey2);
    expect_wc(cq, 10, IBV_WC_BIND_MW, IBV_WC_SUCCESS);

    struct ibv_mw_bind b = { .wr_id = 11, .send_flags = IBV_SEND_SIGNALED,
                             .bind_info = { mr, (uintptr_t)buf, 512, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_LOCAL_WRITE } };
    uint32_t before = mw1->rkey;

    CHECK(ibv_bind_mw(qp, mw1, &b) == 0 && mw1->rkey != before);
    expect_wc(cq, 11, IBV_WC_BIND_MW, IBV_WC_SUCCESS);
    w->rkey1_old = mw1->rkey;
    b.wr_id = 12;
    b.bind_info.addr = (uintptr_t)buf + 4096;
    b.bind_info.length = 256;
    CHECK(ibv_bind_mw(qp, mw1, &b) == 0);                       /* a rebind: new key, same slot */
    CHECK(mw1->rkey != w->rkey1_old && mw1->rkey >> 8 == w->rkey1_old >> 8);
    expect_wc(cq, 12, IBV_WC_BIND_MW, IBV_WC_SUCCESS);
    *w = (struct windows){ (uintptr_t)buf + 1024, (uintptr_t)buf + 4096, rkey2, w->rkey1_old, mw1->rkey };
}

static void server(struct sockaddr_in *addr, int ready)
{
    struct rdma_event_channel *ch = rdma_create_event_channel();
    static char buf[8192], msg[2][64], plain_buf[64];
    struct rdma_cm_id *l, *c = cm_take_request(ch, addr, ready, &l);

    struct ibv_pd *pd = ibv_alloc_pd(c->verbs);
    /* Sends and receives on their own CQs: a reply may come before our send's completion. */
    struct ibv_cq *cq = pd ? ibv_create_cq(c->verbs, 16, NULL, NULL, 0) : NULL;
    struct ibv_cq *rcq = pd ? ibv_create_cq(c->verbs, 16, NULL, NULL, 0) : NULL;
    struct ibv_qp_init_attr qa = { .send_cq = cq, .recv_cq = rcq, .qp_type = IBV_QPT_RC,
                                   .cap = { .max_send_wr = 8, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 } };
    CHECK(cq && rcq && rdma_create_qp(c, pd, &qa) == 0);
    struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                                          IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND);
    struct ibv_mr *mmr = ibv_reg_mr(pd, msg, sizeof(msg), IBV_ACCESS_LOCAL_WRITE);
    struct ibv_mr *plain = ibv_reg_mr(pd, plain_buf, sizeof(plain_buf), IBV_ACCESS_LOCAL_WRITE);
    struct ibv_mw *mw1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1), *mw2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
    CHECK(mr && mmr && plain && mw1 && mw2 && mw1->type == IBV_MW_TYPE_1 && mw2->pd == pd);
    memset(buf + 4096, 'R', 256);
    cm_post_recv(c->qp, mmr, msg[1], sizeof(msg[1]), 50);
    CHECK(rdma_accept(c, NULL) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ESTABLISHED)) == 0);

    refused_binds(c->qp, mw1, mw2, mr, plain);
    struct windows w;
    bind_windows(c->qp, cq, mr, buf, mw1, mw2, &w);
    memcpy(msg[0], &w, sizeof(w));
    send_msg(c->qp, cq, mmr, msg[0], sizeof(w));
    expect_wc(rcq, 50, IBV_WC_RECV, IBV_WC_SUCCESS);             /* the client wrote and read */
    for (int i = 0; i < 1024; i++)
        CHECK(buf[1024 + i] == 'W');
    CHECK(buf[1023] == 0 && buf[2048] == 0);

    struct ibv_send_wr inv = { .wr_id = 20, .opcode = IBV_WR_LOCAL_INV, .send_flags = IBV_SEND_SIGNALED,
                               .invalidate_rkey = w.rkey2 }, *bad;
    CHECK(ibv_post_send(c->qp, &inv, &bad) == 0);
    expect_wc(cq, 20, IBV_WC_LOCAL_INV, IBV_WC_SUCCESS);
    send_msg(c->qp, cq, mmr, msg[0], 1);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED)) == 0);
    for (int i = 0; i < 1024; i++)
        CHECK(buf[1024 + i] == 'W');                            /* the refused write left it */

    CHECK(ibv_dealloc_mw(mw1) == 0 && ibv_dealloc_mw(mw2) == 0);
    rdma_destroy_qp(c);
    CHECK(ibv_dereg_mr(mr) == 0 && ibv_dereg_mr(mmr) == 0 && ibv_dereg_mr(plain) == 0);
    CHECK(ibv_destroy_cq(cq) == 0 && ibv_destroy_cq(rcq) == 0 && rdma_destroy_id(c) == 0 && ibv_dealloc_pd(pd) == 0);
    CHECK(rdma_destroy_id(l) == 0);
    rdma_destroy_event_channel(ch);
    exit(0);
}

static void rdma(struct ibv_qp *qp, struct ibv_mr *mr, char *buf, uint32_t len, enum ibv_wr_opcode op,
                 uint64_t addr, uint32_t rkey, uint64_t id)
{
    struct ibv_sge sge = { (uintptr_t)buf, len, mr->lkey };
    struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = op,
                              .send_flags = IBV_SEND_SIGNALED, .wr.rdma = { addr, rkey } }, *bad;

    CHECK(ibv_post_send(qp, &wr, &bad) == 0);
}

int main(void)
{
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct ibv_qp_init_attr qa = { .cap = { .max_send_wr = 4, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1 },
                                   .qp_type = IBV_QPT_RC };
    static char buf[2048], msg[2][64];
    struct rdma_event_channel *ch;
    struct rdma_cm_id *id;
    struct windows w;
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
    cm_post_recv(id->qp, mmr, msg[0], sizeof(msg[0]), 60);
    cm_post_recv(id->qp, mmr, msg[1], sizeof(msg[1]), 61);
    CHECK(rdma_connect(id, NULL) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ESTABLISHED)) == 0);

    expect_wc(rcq, 60, IBV_WC_RECV, IBV_WC_SUCCESS);
    memcpy(&w, msg[0], sizeof(w));
    memset(buf, 'W', 1024);
    rdma(id->qp, mr, buf, 1024, IBV_WR_RDMA_WRITE, w.addr2, w.rkey2, 1);
    expect_wc(cq, 1, IBV_WC_RDMA_WRITE, IBV_WC_SUCCESS);
    rdma(id->qp, mr, buf + 1024, 256, IBV_WR_RDMA_READ, w.addr1, w.rkey1, 2);
    expect_wc(cq, 2, IBV_WC_RDMA_READ, IBV_WC_SUCCESS);
    for (int i = 0; i < 256; i++)
        CHECK(buf[1024 + i] == 'R');
    send_msg(id->qp, cq, mmr, msg[0], 1);

    expect_wc(rcq, 61, IBV_WC_RECV, IBV_WC_SUCCESS);             /* the window is invalidated */
    memset(buf, 'X', 64);
    rdma(id->qp, mr, buf, 64, IBV_WR_RDMA_WRITE, w.addr2, w.rkey2, 3);
    expect_wc(cq, 3, IBV_WC_RDMA_WRITE, IBV_WC_REM_ACCESS_ERR);
    CHECK(rdma_disconnect(id) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED)) == 0);
    rdma_destroy_qp(id);
    CHECK(ibv_dereg_mr(mr) == 0 && ibv_dereg_mr(mmr) == 0 && rdma_destroy_id(id) == 0);
    CHECK(ibv_destroy_cq(cq) == 0 && ibv_destroy_cq(rcq) == 0);
    rdma_destroy_event_channel(ch);
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    puts("memory windows ok");
    return 0;
}
