// SPDX-License-Identifier: MIT
/*
 * Protection domains fence memory: a QP uses only memory registered in its own PD. The
 * server registers one buffer in its QP's PD and one in another PD, with the same rights,
 * and tells the client both rkeys. The client's Write through the first lands; its Write
 * through the second completes IBV_WC_REM_ACCESS_ERR and leaves that buffer untouched.
 * Locally: a receive whose lkey belongs to another PD than the QP's is taken when posted
 * (an RNIC judges its key when a message comes for it: test_verbs_qp_reset), and a type 2
 * window of another PD cannot be bound. Runs on the transport ND_TRANSPORT picks.
 */
#include "cm_test.h"

#include <arpa/inet.h>
#include <string.h>
#include <sys/wait.h>

#define LEN 4096

struct targets {
    uint64_t own_addr, other_addr;
    uint32_t own_rkey, other_rkey;
};

static int post_write(struct ibv_qp *qp, struct ibv_mr *mr, void *buf, uint64_t addr, uint32_t rkey, uint64_t id)
{
    struct ibv_sge sge = { (uintptr_t)buf, LEN, mr->lkey };
    struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
                              .send_flags = IBV_SEND_SIGNALED, .wr.rdma = { addr, rkey } }, *bad;

    return ibv_post_send(qp, &wr, &bad);
}

static void server(struct sockaddr_in *addr, int ready)
{
    struct rdma_event_channel *ch = rdma_create_event_channel();
    static char own[LEN], other[LEN], msg[64];
    struct rdma_cm_id *l, *c = cm_take_request(ch, addr, ready, &l);
    struct ibv_pd *pd = ibv_alloc_pd(c->verbs), *pd2 = ibv_alloc_pd(c->verbs);
    struct ibv_cq *cq = pd ? ibv_create_cq(c->verbs, 16, NULL, NULL, 0) : NULL;
    struct ibv_qp_init_attr qa = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
                                   .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 } };
    CHECK(pd && pd2 && pd->handle != pd2->handle && cq && rdma_create_qp(c, pd, &qa) == 0);
    int rights = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND;
    struct ibv_mr *own_mr = ibv_reg_mr(pd, own, sizeof(own), rights);
    struct ibv_mr *other_mr = ibv_reg_mr(pd2, other, sizeof(other), rights);
    struct ibv_mr *msg_other = ibv_reg_mr(pd2, msg, sizeof(msg), IBV_ACCESS_LOCAL_WRITE);
    struct ibv_mw *mw_other = ibv_alloc_mw(pd2, IBV_MW_TYPE_2);
    CHECK(own_mr && other_mr && msg_other && mw_other);

    /* A receive into another PD's memory: taken when posted, judged at use. */
    struct ibv_sge rs = { (uintptr_t)msg, sizeof(msg), msg_other->lkey };
    struct ibv_recv_wr rw = { .wr_id = 1, .sg_list = &rs, .num_sge = 1 }, *rbad;
    CHECK(ibv_post_recv(c->qp, &rw, &rbad) == 0);
    /* A window of another PD: not bound through this QP. */
    struct ibv_send_wr bw = { .wr_id = 2, .opcode = IBV_WR_BIND_MW, .send_flags = IBV_SEND_SIGNALED,
                              .bind_mw = { mw_other, ibv_inc_rkey(mw_other->rkey),
                                           { other_mr, (uintptr_t)other, 64, IBV_ACCESS_REMOTE_WRITE } } }, *sbad;
    CHECK(ibv_post_send(c->qp, &bw, &sbad) == EINVAL);

    struct targets t = { (uintptr_t)own, (uintptr_t)other, own_mr->rkey, other_mr->rkey };
    struct rdma_conn_param cp = { .private_data = &t, .private_data_len = sizeof(t), .responder_resources = 1 };
    CHECK(rdma_accept(c, &cp) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ESTABLISHED)) == 0);
    /* The client's refused Write ends the connection. */
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED)) == 0);
    for (int i = 0; i < LEN; i++)
        CHECK(own[i] == 'A' && other[i] == 0);

    rdma_destroy_qp(c);
    CHECK(ibv_dealloc_mw(mw_other) == 0);
    CHECK(ibv_dereg_mr(own_mr) == 0 && ibv_dereg_mr(other_mr) == 0 && ibv_dereg_mr(msg_other) == 0);
    CHECK(ibv_destroy_cq(cq) == 0 && rdma_destroy_id(c) == 0 && ibv_dealloc_pd(pd) == 0 && ibv_dealloc_pd(pd2) == 0);
    CHECK(rdma_destroy_id(l) == 0);
    rdma_destroy_event_channel(ch);
    exit(0);
}

int main(void)
{
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct ibv_qp_init_attr qa = { .cap = { .max_send_wr = 8, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
                                   .qp_type = IBV_QPT_RC };
    static char buf[LEN], elsewhere[LEN];
    struct rdma_event_channel *ch;
    struct rdma_cm_event *ev;
    struct rdma_cm_id *id;
    struct targets t;
    struct ibv_wc wc;
    int st;
    pid_t pid;

    pid = fork_server(server, &addr);
    id = cm_client_resolved(&ch, &addr);
    struct ibv_cq *cq = cm_create_qp_with_cq(id, &qa);
    struct ibv_pd *pd2 = ibv_alloc_pd(id->verbs);
    struct ibv_mr *mr = ibv_reg_mr(id->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
    struct ibv_mr *mr2 = pd2 ? ibv_reg_mr(pd2, elsewhere, sizeof(elsewhere), IBV_ACCESS_LOCAL_WRITE) : NULL;
    CHECK(mr && mr2);
    CHECK(rdma_connect(id, NULL) == 0);
    ev = expect(ch, RDMA_CM_EVENT_ESTABLISHED);
    CHECK(ev->param.conn.private_data_len >= sizeof(t));
    memcpy(&t, ev->param.conn.private_data, sizeof(t));
    CHECK(rdma_ack_cm_event(ev) == 0);

    memset(buf, 'A', sizeof(buf));
    memset(elsewhere, 'X', sizeof(elsewhere));
    CHECK(post_write(id->qp, mr, buf, t.own_addr, t.own_rkey, 1) == 0);
    wc = cm_poll_one(cq);
    CHECK(wc.wr_id == 1 && wc.status == IBV_WC_SUCCESS);
    /* A receive into our own buffer of another PD: taken when posted, judged at use. */
    struct ibv_sge rs = { (uintptr_t)elsewhere, 64, mr2->lkey };
    struct ibv_recv_wr rw = { .wr_id = 2, .sg_list = &rs, .num_sge = 1 }, *rbad;
    CHECK(ibv_post_recv(id->qp, &rw, &rbad) == 0);
    /* The peer's buffer of another PD than its QP's. */
    CHECK(post_write(id->qp, mr, buf, t.other_addr, t.other_rkey, 3) == 0);
    wc = cm_poll_one(cq);
    if (wc.wr_id != 3 || wc.status != IBV_WC_REM_ACCESS_ERR) {
        fprintf(stderr, "write through another PD's rkey: wc %llu %s\n", (unsigned long long)wc.wr_id,
                ibv_wc_status_str(wc.status));
        exit(1);
    }
    CHECK(rdma_disconnect(id) == 0 || errno == EINVAL);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED)) == 0);
    rdma_destroy_qp(id);
    CHECK(ibv_dereg_mr(mr) == 0 && ibv_dereg_mr(mr2) == 0 && ibv_dealloc_pd(pd2) == 0);
    CHECK(rdma_destroy_id(id) == 0 && ibv_destroy_cq(cq) == 0);
    rdma_destroy_event_channel(ch);
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    puts("protection domains ok");
    return 0;
}
