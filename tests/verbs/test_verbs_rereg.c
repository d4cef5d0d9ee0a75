// SPDX-License-Identifier: MIT
/*
 * ibv_rereg_mr. The server registers buffer A for remote write and hands out A, B and the
 * rkey; the client writes into A. The server moves the region to B
 * (IBV_REREG_MR_CHANGE_TRANSLATION): the keys stay, and the client's Write with the same
 * rkey lands in B. The server takes remote write away (IBV_REREG_MR_CHANGE_ACCESS): the
 * client's next Write fails with IBV_WC_REM_ACCESS_ERR. Then the rules: a region moved to
 * another PD (IBV_REREG_MR_CHANGE_PD) keeps its keys; bad input is
 * IBV_REREG_MR_ERR_INPUT with EINVAL and changes nothing. Steps are paced over pipes; the
 * two Writes that land carry immediate data, whose receive tells the server (as it would
 * tell any program) that the bytes are there. Runs on the transport ND_TRANSPORT picks.
 */
#include "cm_test.h"

#include <string.h>

#define LEN 64

struct target {
    uint64_t a, b;
    uint32_t rkey;
};

static int to_client[2], to_server[2];

static void step(int fd, char c)
{
    CHECK(write(fd, &c, 1) == 1);
}

static void await(int fd, char want)
{
    char c;

    CHECK(read(fd, &c, 1) == 1 && c == want);
}

static void rules(struct ibv_mr *mr, struct ibv_pd *pd)
{
    struct ibv_pd *pd2 = ibv_alloc_pd(pd->context);
    uint32_t lkey = mr->lkey, rkey = mr->rkey;

    CHECK(pd2);
    errno = 0;
    CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, NULL, NULL, 0, 0) == IBV_REREG_MR_ERR_INPUT && errno == EINVAL);
    CHECK(ibv_rereg_mr(mr, 1 << 7, NULL, NULL, 0, 0) == IBV_REREG_MR_ERR_INPUT);
    CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, IBV_ACCESS_REMOTE_WRITE) ==
          IBV_REREG_MR_ERR_INPUT);     /* remote write without local write */
    CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, NULL, 0, 0) == IBV_REREG_MR_ERR_INPUT);
    CHECK(mr->pd == pd && mr->lkey == lkey && mr->rkey == rkey);
    CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0) == 0);
    CHECK(mr->pd == pd2 && mr->lkey == lkey && mr->rkey == rkey);
    CHECK(ibv_dereg_mr(mr) == 0 && ibv_dealloc_pd(pd2) == 0);
}

static void server(struct sockaddr_in *addr, int ready)
{
    struct rdma_event_channel *ch = rdma_create_event_channel();
    static char a[LEN], b[LEN];
    struct rdma_cm_id *l, *c = cm_take_request(ch, addr, ready, &l);
    struct ibv_pd *pd = ibv_alloc_pd(c->verbs);
    struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
                                   .cap = { .max_send_wr = 1, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1 } };
    struct ibv_recv_wr rw = { .wr_id = 1 }, *bad;
    struct ibv_mr *mr;
    uint32_t lkey, rkey;

    CHECK(pd && rdma_create_qp(c, pd, &qa) == 0);
    CHECK(ibv_post_recv(c->qp, &rw, &bad) == 0 && ibv_post_recv(c->qp, &rw, &bad) == 0);
    mr = ibv_reg_mr(pd, a, LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    CHECK(mr);
    lkey = mr->lkey;
    rkey = mr->rkey;
    struct target t = { (uintptr_t)a, (uintptr_t)b, mr->rkey };
    struct rdma_conn_param cp = { .private_data = &t, .private_data_len = sizeof(t) };
    CHECK(rdma_accept(c, &cp) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ESTABLISHED)) == 0);

    await(to_server[0], '1');
    CHECK(cm_poll_one(c->recv_cq).status == IBV_WC_SUCCESS);
    CHECK(memcmp(a, "into-a", 6) == 0);
    CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, b, LEN, 0) == 0);
    CHECK(mr->addr == b && mr->length == LEN && mr->lkey == lkey && mr->rkey == rkey);
    step(to_client[1], '2');
    await(to_server[0], '3');
    CHECK(cm_poll_one(c->recv_cq).status == IBV_WC_SUCCESS);
    CHECK(memcmp(b, "into-b", 6) == 0 && memcmp(a, "into-a", 6) == 0);
    CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, IBV_ACCESS_LOCAL_WRITE) == 0);
    CHECK(mr->rkey == rkey);
    step(to_client[1], '4');
    await(to_server[0], '5');
    CHECK(memcmp(b + 1, "refused", 7) != 0);        /* the refused Write left nothing */
    rules(mr, pd);
    rdma_disconnect(c);
    rdma_destroy_qp(c);
    CHECK(rdma_destroy_id(c) == 0 && ibv_dealloc_pd(pd) == 0 && rdma_destroy_id(l) == 0);
    rdma_destroy_event_channel(ch);
    exit(0);
}

static struct ibv_wc write_to(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_mr *mr, char *buf, uint64_t raddr,
                              uint32_t rkey, enum ibv_wr_opcode op)
{
    struct ibv_sge sge = { (uintptr_t)buf, 7, mr->lkey };
    struct ibv_send_wr wr = { .wr_id = 9, .sg_list = &sge, .num_sge = 1, .opcode = op,
                              .send_flags = IBV_SEND_SIGNALED }, *bad;

    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey = rkey;
    CHECK(ibv_post_send(qp, &wr, &bad) == 0);
    return cm_poll_one(cq);
}

int main(void)
{
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct ibv_qp_init_attr qa = { .cap = { .max_send_wr = 2, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
                                   .qp_type = IBV_QPT_RC };
    static char buf[LEN];
    struct rdma_event_channel *ch;
    struct rdma_cm_event *ev;
    struct target t;
    int st;

    CHECK(pipe(to_client) == 0 && pipe(to_server) == 0);
    pid_t pid = fork_server(server, &addr);
    struct rdma_cm_id *id = cm_client_resolved(&ch, &addr);
    struct ibv_cq *cq = cm_create_qp_with_cq(id, &qa);
    struct ibv_mr *mr = ibv_reg_mr(id->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);

    CHECK(mr && rdma_connect(id, NULL) == 0);
    ev = expect(ch, RDMA_CM_EVENT_ESTABLISHED);
    CHECK(ev->param.conn.private_data_len >= sizeof(t));
    memcpy(&t, ev->param.conn.private_data, sizeof(t));
    CHECK(rdma_ack_cm_event(ev) == 0);

    memcpy(buf, "into-a!", 7);
    CHECK(write_to(id->qp, cq, mr, buf, t.a, t.rkey, IBV_WR_RDMA_WRITE_WITH_IMM).status == IBV_WC_SUCCESS);
    step(to_server[1], '1');
    await(to_client[0], '2');
    memcpy(buf, "into-b!", 7);
    CHECK(write_to(id->qp, cq, mr, buf, t.b, t.rkey, IBV_WR_RDMA_WRITE_WITH_IMM).status == IBV_WC_SUCCESS);
    step(to_server[1], '3');
    await(to_client[0], '4');
    memcpy(buf, "refused", 7);
    CHECK(write_to(id->qp, cq, mr, buf, t.b + 1, t.rkey, IBV_WR_RDMA_WRITE).status == IBV_WC_REM_ACCESS_ERR);
    step(to_server[1], '5');

    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    rdma_disconnect(id);
    rdma_destroy_qp(id);
    CHECK(ibv_dereg_mr(mr) == 0 && rdma_destroy_id(id) == 0 && ibv_destroy_cq(cq) == 0);
    rdma_destroy_event_channel(ch);
    puts("rereg: translation, access and PD changed, keys kept");
    return 0;
}
