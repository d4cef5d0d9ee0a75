// SPDX-License-Identifier: MIT
/*
 * rdma_cm's events come in the order of what they report, as a kernel CM delivers them:
 * - the active side's ESTABLISHED is there (delivered, or waiting in its channel) before
 *   any message the passive side sent on the new connection completes on its CQ (the
 *   server posts a Send the moment it has its own ESTABLISHED);
 * - a listener's channel delivers the ESTABLISHED of the connection it accepted before the
 *   CONNECT_REQUEST of a connection the client starts only once the first is up.
 * The client connects CONNS times in a row, each time as soon as the last one is up (its
 * ESTABLISHED, or the server's message, came); the messages it has not seen yet it takes
 * at the end.
 * Runs on the transport ND_TRANSPORT picks.
 */
#include "cm_test.h"

#include <poll.h>
#include <stdbool.h>
#include <string.h>

#define CONNS 40

struct conn {
    struct rdma_cm_id *id;
    struct ibv_cq *cq;
    struct ibv_mr *mr;
    char buf[64];
};

static struct conn conns[CONNS];

static void server_send(struct conn *k)
{
    struct ibv_sge sge = { (uintptr_t)k->buf, sizeof(k->buf), k->mr->lkey };
    struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                              .send_flags = IBV_SEND_SIGNALED }, *bad;

    strcpy(k->buf, "hello");
    CHECK(ibv_post_send(k->id->qp, &wr, &bad) == 0);
}

static void server(struct sockaddr_in *addr, int ready)
{
    struct rdma_event_channel *ch = rdma_create_event_channel();
    struct rdma_cm_id *l;
    struct rdma_cm_event *ev;
    int accepted = 0, established = 0;

    CHECK(ch && rdma_create_id(ch, &l, NULL, RDMA_PS_TCP) == 0);
    CHECK(rdma_bind_addr(l, (struct sockaddr *)addr) == 0 && rdma_listen(l, CONNS) == 0);
    CHECK(write(ready, &((struct sockaddr_in *)rdma_get_local_addr(l))->sin_port, 2) == 2);
    while (established < CONNS) {
        CHECK(rdma_get_cm_event(ch, &ev) == 0);
        if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
            struct conn *k = &conns[accepted];
            struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC, .cap = { .max_send_wr = 2, .max_recv_wr = 1,
                                                                           .max_send_sge = 1, .max_recv_sge = 1 } };

            if (accepted != established) {
                fprintf(stderr, "connection %d: its CONNECT_REQUEST came before connection %d's ESTABLISHED\n",
                        accepted, established);
                exit(1);
            }
            k->id = ev->id;
            CHECK(rdma_ack_cm_event(ev) == 0);
            k->cq = cm_create_qp_with_cq(k->id, &qa);
            CHECK((k->mr = ibv_reg_mr(k->id->pd, k->buf, sizeof(k->buf), IBV_ACCESS_LOCAL_WRITE)) != NULL);
            CHECK(rdma_accept(k->id, NULL) == 0);
            accepted++;
        } else {
            if (ev->event != RDMA_CM_EVENT_ESTABLISHED || ev->id != conns[established].id) {
                int which = -1;

                for (int i = 0; i < accepted; i++)
                    if (conns[i].id == ev->id)
                        which = i;
                fprintf(stderr, "connection %d: %s (status %d) of connection %d where its ESTABLISHED was due\n",
                        established, rdma_event_str(ev->event), ev->status, which);
                exit(1);
            }
            CHECK(rdma_ack_cm_event(ev) == 0);
            server_send(&conns[established]);
            established++;
        }
    }
    for (int i = 0; i < CONNS; i++)
        CHECK(cm_poll_one(conns[i].cq).status == IBV_WC_SUCCESS);
    /* The client tears down first; its disconnects are taken here. */
    for (int n = 0; n < CONNS; n++) {
        CHECK(rdma_get_cm_event(ch, &ev) == 0 && ev->event == RDMA_CM_EVENT_DISCONNECTED);
        CHECK(rdma_ack_cm_event(ev) == 0);
    }
    for (int i = 0; i < CONNS; i++) {
        rdma_destroy_qp(conns[i].id);
        CHECK(ibv_dereg_mr(conns[i].mr) == 0 && ibv_destroy_cq(conns[i].cq) == 0 && rdma_destroy_id(conns[i].id) == 0);
    }
    CHECK(rdma_destroy_id(l) == 0);
    rdma_destroy_event_channel(ch);
    _exit(0);
}

/* One connection, until it is up: its ESTABLISHED must be there by the time the server's
 * message completes. Returns whether the message came. */
static bool client_connect(struct conn *k, struct sockaddr_in *addr, struct rdma_event_channel **ch)
{
    struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC, .cap = { .max_send_wr = 1, .max_recv_wr = 1,
                                                                   .max_send_sge = 1, .max_recv_sge = 1 } };
    struct rdma_cm_event *ev;
    struct ibv_wc wc;
    int n;

    k->id = cm_client_resolved(ch, addr);
    k->cq = cm_create_qp_with_cq(k->id, &qa);
    CHECK((k->mr = ibv_reg_mr(k->id->pd, k->buf, sizeof(k->buf), IBV_ACCESS_LOCAL_WRITE)) != NULL);
    cm_post_recv(k->id->qp, k->mr, k->buf, sizeof(k->buf), 7);
    CHECK(rdma_connect(k->id, NULL) == 0);
    for (;;) {
        struct pollfd p = { .fd = (*ch)->fd, .events = POLLIN };

        if (poll(&p, 1, 0) == 1) {
            CHECK(rdma_get_cm_event(*ch, &ev) == 0 && ev->event == RDMA_CM_EVENT_ESTABLISHED);
            CHECK(rdma_ack_cm_event(ev) == 0);
            return false;
        }
        if ((n = ibv_poll_cq(k->cq, 1, &wc)) == 0)
            continue;
        CHECK(n == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 7);
        /* The message is here: ESTABLISHED must be too. */
        if (poll(&p, 1, 0) != 1) {
            fprintf(stderr, "connection %d: the server's message completed before ESTABLISHED\n", (int)(k - conns));
            exit(1);
        }
        CHECK(rdma_get_cm_event(*ch, &ev) == 0 && ev->event == RDMA_CM_EVENT_ESTABLISHED);
        CHECK(rdma_ack_cm_event(ev) == 0);
        return true;
    }
}

int main(void)
{
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct rdma_event_channel *chans[CONNS];
    pid_t pid = fork_server(server, &addr);
    int st;

    bool got[CONNS];

    for (int i = 0; i < CONNS; i++)
        got[i] = client_connect(&conns[i], &addr, &chans[i]);
    for (int i = 0; i < CONNS; i++) {
        struct ibv_wc wc;

        if (!got[i])
            CHECK((wc = cm_poll_one(conns[i].cq)).status == IBV_WC_SUCCESS && wc.wr_id == 7);
    }
    for (int i = 0; i < CONNS; i++) {
        CHECK(rdma_disconnect(conns[i].id) == 0);
        CHECK(rdma_ack_cm_event(expect(chans[i], RDMA_CM_EVENT_DISCONNECTED)) == 0);
        rdma_destroy_qp(conns[i].id);
        CHECK(ibv_dereg_mr(conns[i].mr) == 0 && ibv_destroy_cq(conns[i].cq) == 0 && rdma_destroy_id(conns[i].id) == 0);
        rdma_destroy_event_channel(chans[i]);
    }
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    puts("ok");
    return 0;
}
