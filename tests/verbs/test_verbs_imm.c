// SPDX-License-Identifier: MIT
/*
 * Immediate data through verbs. The client sends with immediate (a message small enough to
 * ride in a completion, and one that does not), writes with immediate (1000 bytes, then
 * none at all) and sends once without. The server's receives report IBV_WC_RECV or
 * IBV_WC_RECV_RDMA_WITH_IMM, IBV_WC_WITH_IMM and the immediate data as the client gave it,
 * the byte count of the message or of the Write; a Write's receive buffer stays untouched.
 * The client's own completions are IBV_WC_SEND and IBV_WC_RDMA_WRITE. Runs on the
 * transport ND_TRANSPORT picks (iwarp between two netdirect peers carries it; towards siw
 * it is refused at post).
 */
#include "cm_test.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <string.h>
#include <sys/wait.h>

#define NRECV 5
#define WRITE_LEN 1000

struct target {
    uint64_t addr;
    uint32_t rkey;
};

/* The next completion, which must have succeeded. */
static struct ibv_wc poll_one(struct ibv_cq *cq)
{
    struct ibv_wc wc = cm_poll_one(cq);

    if (wc.status != IBV_WC_SUCCESS) {
        fprintf(stderr, "wc %llu: %s\n", (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));
        exit(1);
    }
    return wc;
}

static void expect_recv(struct ibv_cq *cq, uint64_t id, enum ibv_wc_opcode op, uint32_t len, bool imm, uint32_t value)
{
    struct ibv_wc wc = poll_one(cq);

    if (wc.wr_id != id || wc.opcode != op || wc.byte_len != len || !!(wc.wc_flags & IBV_WC_WITH_IMM) != imm ||
        (imm && wc.imm_data != value)) {
        fprintf(stderr, "receive %llu: opcode %d len %u flags 0x%x imm 0x%x; wanted %llu %d %u imm %d 0x%x\n",
                (unsigned long long)wc.wr_id, wc.opcode, wc.byte_len, wc.wc_flags, wc.imm_data,
                (unsigned long long)id, op, len, imm, value);
        exit(1);
    }
}

static void post(struct ibv_qp *qp, struct ibv_mr *mr, void *buf, uint32_t len, enum ibv_wr_opcode op, uint32_t imm,
                 const struct target *t, uint64_t id)
{
    struct ibv_sge sge = { (uintptr_t)buf, len, mr->lkey };
    struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = len ? 1 : 0, .opcode = op,
                              .send_flags = IBV_SEND_SIGNALED, .imm_data = imm }, *bad;

    if (t)
        wr.wr.rdma = (typeof(wr.wr.rdma)){ t->addr, t->rkey };
    CHECK(ibv_post_send(qp, &wr, &bad) == 0);
}

static void server(struct sockaddr_in *addr, int ready)
{
    struct rdma_event_channel *ch = rdma_create_event_channel();
    static char buf[WRITE_LEN], msg[NRECV][64];
    struct rdma_cm_id *l, *c = cm_take_request(ch, addr, ready, &l);
    struct ibv_pd *pd = ibv_alloc_pd(c->verbs);
    struct ibv_cq *cq = pd ? ibv_create_cq(c->verbs, 16, NULL, NULL, 0) : NULL;
    struct ibv_cq *rcq = pd ? ibv_create_cq(c->verbs, 16, NULL, NULL, 0) : NULL;
    struct ibv_qp_init_attr qa = { .send_cq = cq, .recv_cq = rcq, .qp_type = IBV_QPT_RC,
                                   .cap = { .max_send_wr = 4, .max_recv_wr = NRECV, .max_send_sge = 1,
                                            .max_recv_sge = 1 } };
    CHECK(cq && rcq && rdma_create_qp(c, pd, &qa) == 0);
    struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    struct ibv_mr *mmr = ibv_reg_mr(pd, msg, sizeof(msg), IBV_ACCESS_LOCAL_WRITE);
    CHECK(mr && mmr);
    memset(msg, '.', sizeof(msg));
    for (int i = 0; i < NRECV; i++)
        cm_post_recv(c->qp, mmr, msg[i], sizeof(msg[i]), 50 + (uint64_t)i);
    struct target t = { (uintptr_t)buf, mr->rkey };
    struct rdma_conn_param cp = { .private_data = &t, .private_data_len = sizeof(t), .responder_resources = 1 };
    CHECK(rdma_accept(c, &cp) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ESTABLISHED)) == 0);

    expect_recv(rcq, 50, IBV_WC_RECV, 10, true, htonl(0x11223344));
    CHECK(memcmp(msg[0], "immediate!", 10) == 0);
    expect_recv(rcq, 51, IBV_WC_RECV, 40, true, htonl(0xa5a5a5a5));
    for (int i = 0; i < 40; i++)
        CHECK(msg[1][i] == 'L');
    expect_recv(rcq, 52, IBV_WC_RECV_RDMA_WITH_IMM, WRITE_LEN, true, htonl(7));
    for (int i = 0; i < WRITE_LEN; i++)
        CHECK(buf[i] == 'W');
    CHECK(msg[2][0] == '.');                        /* a Write's receive holds nothing */
    expect_recv(rcq, 53, IBV_WC_RECV_RDMA_WITH_IMM, 0, true, 0);
    expect_recv(rcq, 54, IBV_WC_RECV, 3, false, 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED)) == 0);

    rdma_destroy_qp(c);
    CHECK(ibv_dereg_mr(mr) == 0 && ibv_dereg_mr(mmr) == 0);
    CHECK(ibv_destroy_cq(cq) == 0 && ibv_destroy_cq(rcq) == 0 && rdma_destroy_id(c) == 0 && ibv_dealloc_pd(pd) == 0);
    CHECK(rdma_destroy_id(l) == 0);
    rdma_destroy_event_channel(ch);
    exit(0);
}

int main(void)
{
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct ibv_qp_init_attr qa = { .cap = { .max_send_wr = 8, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
                                   .qp_type = IBV_QPT_RC };
    static char buf[WRITE_LEN], small[64];
    struct rdma_event_channel *ch;
    struct rdma_cm_event *ev;
    struct rdma_cm_id *id;
    struct target t;
    int st;
    pid_t pid;

    pid = fork_server(server, &addr);
    id = cm_client_resolved(&ch, &addr);
    struct ibv_cq *cq = cm_create_qp_with_cq(id, &qa);
    struct ibv_mr *mr = ibv_reg_mr(id->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
    struct ibv_mr *smr = ibv_reg_mr(id->pd, small, sizeof(small), IBV_ACCESS_LOCAL_WRITE);
    CHECK(mr && smr);
    CHECK(rdma_connect(id, NULL) == 0);
    ev = expect(ch, RDMA_CM_EVENT_ESTABLISHED);
    CHECK(ev->param.conn.private_data_len >= sizeof(t));
    memcpy(&t, ev->param.conn.private_data, sizeof(t));
    CHECK(rdma_ack_cm_event(ev) == 0);

    memcpy(small, "immediate!", 10);
    post(id->qp, smr, small, 10, IBV_WR_SEND_WITH_IMM, htonl(0x11223344), NULL, 1);
    CHECK(poll_one(cq).opcode == IBV_WC_SEND);
    memset(small, 'L', 40);
    post(id->qp, smr, small, 40, IBV_WR_SEND_WITH_IMM, htonl(0xa5a5a5a5), NULL, 2);
    CHECK(poll_one(cq).opcode == IBV_WC_SEND);
    memset(buf, 'W', sizeof(buf));
    post(id->qp, mr, buf, WRITE_LEN, IBV_WR_RDMA_WRITE_WITH_IMM, htonl(7), &t, 3);
    CHECK(poll_one(cq).opcode == IBV_WC_RDMA_WRITE);
    post(id->qp, mr, buf, 0, IBV_WR_RDMA_WRITE_WITH_IMM, 0, &t, 4);
    CHECK(poll_one(cq).opcode == IBV_WC_RDMA_WRITE);
    post(id->qp, smr, small, 3, IBV_WR_SEND, 0, NULL, 5);
    CHECK(poll_one(cq).opcode == IBV_WC_SEND);

    CHECK(rdma_disconnect(id) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED)) == 0);
    rdma_destroy_qp(id);
    CHECK(ibv_dereg_mr(mr) == 0 && ibv_dereg_mr(smr) == 0 && rdma_destroy_id(id) == 0);
    CHECK(ibv_destroy_cq(cq) == 0);
    rdma_destroy_event_channel(ch);
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    puts("immediate data ok");
    return 0;
}
