// SPDX-License-Identifier: MIT
/*
 * A Send whose gather list names a region the program deregistered: the requester's own
 * memory fails its check, so the Send completes IBV_WC_LOC_PROT_ERR (as an RNIC and siw
 * report it), not the remote access error a bad remote key gives. Nothing reaches the
 * responder: its receive is flushed (at its own disconnect) with its buffer untouched. Runs on the transport
 * ND_TRANSPORT picks.
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
    CHECK(rdma_accept(c, NULL) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ESTABLISHED)) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED)) == 0);
    /* An InfiniBand-style QP keeps its receive until its own disconnect (as rxe's does). */
    CHECK(rdma_disconnect(c) == 0 || errno == EINVAL);
    struct ibv_wc wc = cm_poll_one(cq);
    if (wc.wr_id != 7 || wc.status != IBV_WC_WR_FLUSH_ERR) {
        fprintf(stderr, "responder's receive: wc %llu %s\n", (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));
        exit(1);
    }
    for (int i = 0; i < LEN; i++)
        CHECK(buf[i] == 0);
    rdma_destroy_qp(c);
    CHECK(ibv_dereg_mr(mr) == 0 && ibv_destroy_cq(cq) == 0 && rdma_destroy_id(c) == 0 && rdma_destroy_id(l) == 0);
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
    uint32_t lkey = mr->lkey;
    CHECK(ibv_dereg_mr(mr) == 0);
    CHECK(rdma_connect(id, NULL) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ESTABLISHED)) == 0);
    memset(msg, 'M', sizeof(msg));
    struct ibv_sge sge = { (uintptr_t)msg, sizeof(msg), lkey };
    struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                              .send_flags = IBV_SEND_SIGNALED }, *bad;
    CHECK(ibv_post_send(id->qp, &wr, &bad) == 0);
    struct ibv_wc wc = cm_poll_one(cq);
    if (wc.wr_id != 1 || wc.status != IBV_WC_LOC_PROT_ERR) {
        fprintf(stderr, "send from deregistered memory: wc %llu %s\n", (unsigned long long)wc.wr_id,
                ibv_wc_status_str(wc.status));
        return 1;
    }
    cm_client_finish(ch, id, cq, pid);
    puts("send protection ok");
    return 0;
}
