// SPDX-License-Identifier: MIT
/*
 * DISCONNECTED waits for the peer's last messages to be polled. Two connections to a forked
 * server; on each the client sends "fin", waits for its send completion, disconnects and
 * takes its own DISCONNECTED, then tells the server over a pipe. The server moves each
 * connection to a channel of its own (rdma_migrate_id).
 *  1. The server has not polled: no event on its channel while "fin" is unpolled (in the
 *     iWARP personality it waits until its QP is in ERR, so its CM has the disconnect; an
 *     InfiniBand-style QP shows nothing of the peer's disconnect); its poll takes "fin", and then
 *     DISCONNECTED comes. (libfabric's rxm reads its channel whenever a poll came back
 *     empty, and closes the connection on DISCONNECTED: a message that landed together
 *     with the disconnect between its poll and its read was lost.)
 *  2. The server never polls: DISCONNECTED still comes (the wait is bounded); destroyed,
 *     the QP takes its unpolled completions with it (as rdma-core's hardware providers do).
 *  3. The client sends three messages to the server's two receives (RNR retry 7: the third
 *     waits for a receive for ever) and disconnects; the server, which posts no more and
 *     never polls (qperf's rc_bw server), still hears DISCONNECTED within bounded time. Over
 *     iWARP the peer's close sat behind the waiting message in the stream, unread.
 *  4. As 3, with sixteen Sends of 1 MiB: the server's TCP window closes and the client's
 *     close cannot follow its bytes; the client's destroy resets the connection once they
 *     stop moving, and the server hears DISCONNECTED all the same.
 * Runs on the transport ND_TRANSPORT picks.
 */
#include "cm_test.h"

#include <arpa/inet.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char fin[] = "fin";
static int to_server[2];

static void wait_err(struct ibv_qp *qp)
{
    struct ibv_qp_attr a;
    struct ibv_qp_init_attr ia;

    if (qp->context->device->transport_type != IBV_TRANSPORT_IWARP)
        return;
    for (;;) {
        CHECK(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia) == 0);
        if (a.qp_state == IBV_QPS_ERR)
            return;
        sched_yield();
    }
}

/* One connection, on a channel of its own (the listener's takes the next request): accept
 * with two receives posted, wait for the client's word. */
static void serve_one(struct rdma_event_channel *lch, int round)
{
    struct rdma_event_channel *ch = rdma_create_event_channel();
    static char buf[2][1 << 20];
    struct rdma_cm_event *ev = expect(lch, RDMA_CM_EVENT_CONNECT_REQUEST);
    struct rdma_cm_id *c = ev->id;
    struct ibv_wc wc[4];
    char word;

    CHECK(rdma_ack_cm_event(ev) == 0);
    CHECK(ch && rdma_migrate_id(c, ch) == 0);
    struct ibv_pd *pd = ibv_alloc_pd(c->verbs);
    struct ibv_cq *cq = pd ? ibv_create_cq(c->verbs, 8, NULL, NULL, 0) : NULL;
    struct ibv_qp_init_attr qa = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
                                   .cap = { .max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1,
                                            .max_recv_sge = 1 } };
    CHECK(cq && rdma_create_qp(c, pd, &qa) == 0);
    struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
    CHECK(mr);
    memset(buf, 0, sizeof(buf));
    for (int i = 0; i < 2; i++) {
        struct ibv_sge sge = { (uintptr_t)buf[i], sizeof(buf[i]), mr->lkey };
        struct ibv_recv_wr rw = { .wr_id = 10 + (uint64_t)i, .sg_list = &sge, .num_sge = 1 }, *bad;
        CHECK(ibv_post_recv(c->qp, &rw, &bad) == 0);
    }
    CHECK(rdma_accept(c, NULL) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ESTABLISHED)) == 0);
    CHECK(read(to_server[0], &word, 1) == 1);       /* the client sent, disconnected */
    if (round >= 2) {
        struct pollfd p = { .fd = ch->fd, .events = POLLIN };
        CHECK(poll(&p, 1, 20000) == 1);
    }
    if (round == 0) {
        wait_err(c->qp);
        struct pollfd p = { .fd = ch->fd, .events = POLLIN };
        CHECK(poll(&p, 1, 200) == 0);               /* "fin" is unpolled: no event yet */
        int n;
        while ((n = ibv_poll_cq(cq, 4, wc)) == 0)
            ;
        CHECK(wc[0].wr_id == 10 && wc[0].status == IBV_WC_SUCCESS && wc[0].opcode == IBV_WC_RECV &&
              wc[0].byte_len == sizeof(fin) && memcmp(buf[0], fin, sizeof(fin)) == 0);
    }
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED)) == 0);
    rdma_destroy_qp(c);
    if (round == 1)
        CHECK(ibv_poll_cq(cq, 4, wc) == 0);         /* gone with the QP */
    CHECK(ibv_dereg_mr(mr) == 0 && ibv_destroy_cq(cq) == 0 && rdma_destroy_id(c) == 0 && ibv_dealloc_pd(pd) == 0);
    rdma_destroy_event_channel(ch);
}

static void server(struct sockaddr_in *addr, int ready)
{
    struct rdma_event_channel *ch = rdma_create_event_channel();
    struct rdma_cm_id *l;

    CHECK(ch && rdma_create_id(ch, &l, NULL, RDMA_PS_TCP) == 0);
    CHECK(rdma_bind_addr(l, (struct sockaddr *)addr) == 0 && rdma_listen(l, 4) == 0);
    CHECK(write(ready, &((struct sockaddr_in *)rdma_get_local_addr(l))->sin_port, 2) == 2);
    for (int round = 0; round < 4; round++)
        serve_one(ch, round);
    CHECK(rdma_destroy_id(l) == 0);
    rdma_destroy_event_channel(ch);
    exit(0);
}

static void client_one(struct rdma_event_channel *ch, struct sockaddr_in *addr, int round)
{
    struct ibv_qp_init_attr qa = { .cap = { .max_send_wr = 16, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
                                   .qp_type = IBV_QPT_RC, .sq_sig_all = 1 };
    static char msg[1 << 20];
    struct rdma_cm_id *id;
    struct ibv_wc wc;

    CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0);
    cm_resolve(ch, id, addr);
    CHECK(rdma_create_qp(id, NULL, &qa) == 0 && rdma_connect(id, NULL) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ESTABLISHED)) == 0);
    struct ibv_mr *mr = ibv_reg_mr(id->pd, msg, sizeof(msg), IBV_ACCESS_LOCAL_WRITE);
    CHECK(mr);
    memcpy(msg, fin, sizeof(fin));
    struct ibv_sge sge = { (uintptr_t)msg, round == 3 ? sizeof(msg) : sizeof(fin), mr->lkey };
    struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND }, *bad;
    int sends = round == 3 ? 16 : round == 2 ? 3 : 1;
    for (int i = 0; i < sends; i++)
        CHECK(ibv_post_send(id->qp, &wr, &bad) == 0);
    for (int i = 0; i < (sends > 1 ? 2 : 1); i++) {  /* the third may wait for a receive */
        while (ibv_poll_cq(id->send_cq, 1, &wc) == 0)
            ;
        CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 1);
    }
    CHECK(rdma_disconnect(id) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED)) == 0);
    CHECK(write(to_server[1], "d", 1) == 1);
    rdma_destroy_qp(id);
    CHECK(ibv_dereg_mr(mr) == 0 && rdma_destroy_id(id) == 0);
}

int main(void)
{
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct rdma_event_channel *ch;
    int st;
    pid_t pid;

    CHECK(pipe(to_server) == 0);
    pid = fork_server(server, &addr);
    ch = rdma_create_event_channel();
    CHECK(ch);
    for (int round = 0; round < 4; round++)
        client_one(ch, &addr, round);
    rdma_destroy_event_channel(ch);
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    puts("disconnect after the last messages ok");
    return 0;
}
