// SPDX-License-Identifier: MIT
/*
 * A receive whose memory the program deregistered after posting it: the message that comes
 * for it is not placed, and the receive completes IBV_WC_LOC_PROT_ERR (the responder's own
 * buffer, as an RNIC reports it), never a remote access error, which only a requester sees.
 * The buffer is untouched. The requester of that small Send hears IBV_WC_REM_OP_ERR, as an
 * RNIC's requester does: over iwarp from the receiver, on shm from its own look at the
 * receive, which the receiver flagged as one that may fail its check when it deregistered
 * the memory. Runs on the transport ND_TRANSPORT picks.
 */
#include "cm_test.h"

#include <string.h>

#define LEN 64

static void server(struct sockaddr_in *addr, int ready)
{
    struct rdma_event_channel *ch = rdma_create_event_channel();
    static char buf[LEN];
    struct rdma_cm_id *l, *c;
    struct ibv_cq *cq = cm_server_start(ch, addr, ready, &l, &c);
    struct ibv_mr *mr = ibv_reg_mr(c->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
    CHECK(mr);
    cm_post_recv(c->qp, mr, buf, LEN, 7);
    CHECK(ibv_dereg_mr(mr) == 0);
    CHECK(rdma_accept(c, NULL) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ESTABLISHED)) == 0);
    struct ibv_wc wc = cm_poll_one(cq);
    if (wc.wr_id != 7 || wc.status != IBV_WC_LOC_PROT_ERR || wc.opcode != IBV_WC_RECV) {
        fprintf(stderr, "receive into deregistered memory: wc %llu %s opcode %d\n", (unsigned long long)wc.wr_id,
                ibv_wc_status_str(wc.status), wc.opcode);
        exit(1);
    }
    for (int i = 0; i < LEN; i++)
        CHECK(buf[i] == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED)) == 0);
    rdma_destroy_qp(c);
    CHECK(ibv_destroy_cq(cq) == 0 && rdma_destroy_id(c) == 0 && rdma_destroy_id(l) == 0);
    rdma_destroy_event_channel(ch);
    exit(0);
}

int main(void)
{
    static char msg[LEN / 2];
    struct rdma_event_channel *ch;
    struct rdma_cm_id *id;
    pid_t pid;
    struct ibv_cq *cq = cm_client_start(server, &ch, &id, &pid);
    struct ibv_mr *mr = ibv_reg_mr(id->pd, msg, sizeof(msg), IBV_ACCESS_LOCAL_WRITE);
    CHECK(mr);
    CHECK(rdma_connect(id, NULL) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ESTABLISHED)) == 0);
    memset(msg, 'M', sizeof(msg));
    struct ibv_sge sge = { (uintptr_t)msg, sizeof(msg), mr->lkey };
    struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                              .send_flags = IBV_SEND_SIGNALED }, *bad;
    CHECK(ibv_post_send(id->qp, &wr, &bad) == 0);
    struct ibv_wc wc = cm_poll_one(cq);
    enum ibv_wc_status want = IBV_WC_REM_OP_ERR;

    if (wc.status != want) {
        fprintf(stderr, "the requester heard %s, wanted %s\n", ibv_wc_status_str(wc.status), ibv_wc_status_str(want));
        exit(1);
    }
    CHECK(ibv_dereg_mr(mr) == 0);
    cm_client_finish(ch, id, cq, pid);
    puts("receive protection ok");
    return 0;
}
