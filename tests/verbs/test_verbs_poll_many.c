// SPDX-License-Identifier: MIT
/*
 * ibv_poll_cq for more completions than the library takes from the core at a time. The
 * client sends NMSG messages, each carrying its number; the server polls them with room
 * for more than there are, checks each in order (wr_id, opcode, length, bytes) and then
 * acks. With the ack in, the client's NMSG send completions are all queued (over shm they
 * are written at the post), and one poll must return them all, in order. Also: a poll for
 * 0 returns 0, for a negative count -1.
 */
#include "cm_test.h"

#include <stdbool.h>
#include <string.h>

#define NMSG 100
#define ROOM 256

/* Polls @cq until @n completions are in @wc; returns how many polls returned some. */
static int gather(struct ibv_cq *cq, struct ibv_wc *wc, int n)
{
    int got = 0, polls = 0;

    while (got < n) {
        int k = ibv_poll_cq(cq, ROOM, wc + got);

        CHECK(k >= 0 && k <= n - got);
        polls += k > 0;
        got += k;
    }
    return polls;
}

static void check_in_order(const struct ibv_wc *wc, uint64_t first, enum ibv_wc_opcode op, uint32_t len)
{
    for (int i = 0; i < NMSG; i++) {
        if (wc[i].status != IBV_WC_SUCCESS || wc[i].wr_id != first + (uint64_t)i || wc[i].opcode != op ||
            (op == IBV_WC_RECV && wc[i].byte_len != len)) {
            fprintf(stderr, "completion %d: wr_id %llu status %s opcode %d len %u\n", i,
                    (unsigned long long)wc[i].wr_id, ibv_wc_status_str(wc[i].status), wc[i].opcode, wc[i].byte_len);
            exit(1);
        }
    }
}

static void server(struct sockaddr_in *addr, int ready)
{
    struct rdma_event_channel *ch = rdma_create_event_channel();
    static uint32_t msg[NMSG], ack = 0xac;
    static struct ibv_wc wc[ROOM];
    struct rdma_cm_id *l, *c = cm_take_request(ch, addr, ready, &l);
    struct ibv_pd *pd = ibv_alloc_pd(c->verbs);
    struct ibv_cq *scq = pd ? ibv_create_cq(c->verbs, 4, NULL, NULL, 0) : NULL;
    struct ibv_cq *rcq = pd ? ibv_create_cq(c->verbs, 2 * NMSG, NULL, NULL, 0) : NULL;
    struct ibv_qp_init_attr qa = { .send_cq = scq, .recv_cq = rcq, .qp_type = IBV_QPT_RC,
                                   .cap = { .max_send_wr = 2, .max_recv_wr = NMSG, .max_send_sge = 1,
                                            .max_recv_sge = 1 } };
    CHECK(scq && rcq && rdma_create_qp(c, pd, &qa) == 0);
    struct ibv_mr *mr = ibv_reg_mr(pd, msg, sizeof(msg), IBV_ACCESS_LOCAL_WRITE);
    struct ibv_mr *amr = ibv_reg_mr(pd, &ack, sizeof(ack), 0);
    CHECK(mr && amr);
    for (int i = 0; i < NMSG; i++)
        cm_post_recv(c->qp, mr, &msg[i], sizeof(msg[i]), 1000 + (uint64_t)i);
    CHECK(rdma_accept(c, NULL) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ESTABLISHED)) == 0);

    gather(rcq, wc, NMSG);
    check_in_order(wc, 1000, IBV_WC_RECV, sizeof(uint32_t));
    for (uint32_t i = 0; i < NMSG; i++)
        CHECK(msg[i] == i);
    struct ibv_sge sge = { (uintptr_t)&ack, sizeof(ack), amr->lkey };
    struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                              .send_flags = IBV_SEND_SIGNALED }, *bad;
    CHECK(ibv_post_send(c->qp, &wr, &bad) == 0);
    CHECK(cm_poll_one(scq).status == IBV_WC_SUCCESS);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED)) == 0);

    rdma_destroy_qp(c);
    CHECK(ibv_dereg_mr(mr) == 0 && ibv_dereg_mr(amr) == 0);
    CHECK(ibv_destroy_cq(scq) == 0 && ibv_destroy_cq(rcq) == 0 && rdma_destroy_id(c) == 0 && ibv_dealloc_pd(pd) == 0);
    CHECK(rdma_destroy_id(l) == 0);
    rdma_destroy_event_channel(ch);
    exit(0);
}

int main(void)
{
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    const char *transport = getenv("ND_TRANSPORT");
    bool shm = !transport || !strcmp(transport, "shm");
    static uint32_t msg[NMSG], ack;
    static struct ibv_wc wc[ROOM];
    struct rdma_event_channel *ch;
    int st;

    pid_t pid = fork_server(server, &addr);
    struct rdma_cm_id *id = cm_client_resolved(&ch, &addr);
    struct ibv_cq *scq = ibv_create_cq(id->verbs, 2 * NMSG, NULL, NULL, 0);
    struct ibv_cq *rcq = ibv_create_cq(id->verbs, 4, NULL, NULL, 0);
    struct ibv_qp_init_attr qa = { .send_cq = scq, .recv_cq = rcq, .qp_type = IBV_QPT_RC,
                                   .cap = { .max_send_wr = NMSG, .max_recv_wr = 1, .max_send_sge = 1,
                                            .max_recv_sge = 1 } };
    CHECK(scq && rcq && rdma_create_qp(id, NULL, &qa) == 0);
    struct ibv_mr *mr = ibv_reg_mr(id->pd, msg, sizeof(msg), 0);
    struct ibv_mr *amr = ibv_reg_mr(id->pd, &ack, sizeof(ack), IBV_ACCESS_LOCAL_WRITE);
    CHECK(mr && amr);
    cm_post_recv(id->qp, amr, &ack, sizeof(ack), 9);
    CHECK(ibv_poll_cq(scq, 0, wc) == 0 && ibv_poll_cq(scq, -1, wc) == -1);
    CHECK(rdma_connect(id, NULL) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ESTABLISHED)) == 0);

    for (uint32_t i = 0; i < NMSG; i++) {
        struct ibv_sge sge = { (uintptr_t)&msg[i], sizeof(msg[i]), mr->lkey };
        struct ibv_send_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                                  .send_flags = IBV_SEND_SIGNALED }, *bad;

        msg[i] = i;
        CHECK(ibv_post_send(id->qp, &wr, &bad) == 0);
    }
    struct ibv_wc a = cm_poll_one(rcq);
    CHECK(a.status == IBV_WC_SUCCESS && a.wr_id == 9 && ack == 0xac);
    int polls = gather(scq, wc, NMSG);
    CHECK(!shm || polls == 1);
    check_in_order(wc, 0, IBV_WC_SEND, 0);
    CHECK(ibv_poll_cq(scq, ROOM, wc) == 0);

    CHECK(rdma_disconnect(id) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED)) == 0);
    rdma_destroy_qp(id);
    CHECK(ibv_dereg_mr(mr) == 0 && ibv_dereg_mr(amr) == 0);
    CHECK(ibv_destroy_cq(scq) == 0 && ibv_destroy_cq(rcq) == 0 && rdma_destroy_id(id) == 0);
    rdma_destroy_event_channel(ch);
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    return 0;
}
