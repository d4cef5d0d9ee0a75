// SPDX-License-Identifier: MIT
/*
 * A disconnect of our own, with a message still unpolled: DISCONNECTED waits for the poll
 * (as it does for the peer's disconnect, test_rdmacm_disconnect_drain) and then comes
 * without any further event from the peer. rdma_disconnect hands the wait to the CM thread
 * from the application's thread, while that thread may be handling another connection's
 * disconnect: ROUNDS connections, the server ending the odd ones while the client ends the
 * even ones, so both threads defer at once (TSan watches their shared list). Runs on the
 * transport ND_TRANSPORT picks.
 */
#include "cm_test.h"

#include <poll.h>
#include <stdbool.h>
#include <string.h>

#define ROUNDS 8

static const char hello[] = "hello";
static int to_server[2], to_client[2];

/* Each connection on a channel of its own; the server sends hello on each, says so, and
 * disconnects the odd ones when the client asks. */
static void server(struct sockaddr_in *addr, int ready)
{
    struct rdma_event_channel *lch = rdma_create_event_channel(), *ch[ROUNDS];
    struct rdma_cm_id *l, *c[ROUNDS];
    struct ibv_cq *cq[ROUNDS];
    static char buf[sizeof(hello)];
    struct ibv_mr *mr[ROUNDS];
    char word;

    CHECK(lch && rdma_create_id(lch, &l, NULL, RDMA_PS_TCP) == 0);
    CHECK(rdma_bind_addr(l, (struct sockaddr *)addr) == 0 && rdma_listen(l, ROUNDS) == 0);
    CHECK(write(ready, &((struct sockaddr_in *)rdma_get_local_addr(l))->sin_port, 2) == 2);
    memcpy(buf, hello, sizeof(hello));
    for (int i = 0; i < ROUNDS; i++) {
        struct rdma_cm_event *ev = expect(lch, RDMA_CM_EVENT_CONNECT_REQUEST);
        struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
                                       .cap = { .max_send_wr = 2, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 } };

        c[i] = ev->id;
        CHECK(rdma_ack_cm_event(ev) == 0);
        CHECK((ch[i] = rdma_create_event_channel()) && rdma_migrate_id(c[i], ch[i]) == 0);
        cq[i] = cm_create_qp_with_cq(c[i], &qa);
        CHECK((mr[i] = ibv_reg_mr(c[i]->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE)));
        CHECK(rdma_accept(c[i], NULL) == 0);
        CHECK(rdma_ack_cm_event(expect(ch[i], RDMA_CM_EVENT_ESTABLISHED)) == 0);
        struct ibv_sge sge = { (uintptr_t)buf, sizeof(buf), mr[i]->lkey };
        struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                                  .send_flags = IBV_SEND_SIGNALED }, *bad;
        CHECK(ibv_post_send(c[i]->qp, &wr, &bad) == 0);
        CHECK(cm_poll_one(cq[i]).status == IBV_WC_SUCCESS);
        CHECK(write(to_client[1], "s", 1) == 1);   /* hello is in the client's queue */
    }
    CHECK(read(to_server[0], &word, 1) == 1);       /* the client disconnects the even ones now */
    for (int i = 1; i < ROUNDS; i += 2)
        CHECK(rdma_disconnect(c[i]) == 0);
    for (int i = 0; i < ROUNDS; i++) {
        CHECK(rdma_ack_cm_event(expect(ch[i], RDMA_CM_EVENT_DISCONNECTED)) == 0);
        rdma_destroy_qp(c[i]);
        CHECK(ibv_dereg_mr(mr[i]) == 0 && ibv_destroy_cq(cq[i]) == 0 && rdma_destroy_id(c[i]) == 0);
        rdma_destroy_event_channel(ch[i]);
    }
    CHECK(rdma_destroy_id(l) == 0);
    rdma_destroy_event_channel(lch);
    exit(0);
}

/* No event on @ch within @ms, or one (which must be DISCONNECTED, taken). */
static bool disconnected_within(struct rdma_event_channel *ch, int ms)
{
    struct pollfd p = { .fd = ch->fd, .events = POLLIN };

    if (poll(&p, 1, ms) != 1)
        return false;
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED)) == 0);
    return true;
}

int main(void)
{
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct rdma_event_channel *ch[ROUNDS];
    struct rdma_cm_id *id[ROUNDS];
    struct ibv_cq *cq[ROUNDS];
    struct ibv_mr *mr[ROUNDS];
    static char buf[ROUNDS][64];
    pid_t pid;
    int st;
    char word;

    CHECK(pipe(to_server) == 0 && pipe(to_client) == 0);
    pid = fork_server(server, &addr);
    for (int i = 0; i < ROUNDS; i++) {
        struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
                                       .cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 } };

        id[i] = cm_client_resolved(&ch[i], &addr);
        cq[i] = cm_create_qp_with_cq(id[i], &qa);
        CHECK((mr[i] = ibv_reg_mr(id[i]->pd, buf[i], sizeof(buf[i]), IBV_ACCESS_LOCAL_WRITE)));
        cm_post_recv(id[i]->qp, mr[i], buf[i], sizeof(buf[i]), 1);
        CHECK(rdma_connect(id[i], NULL) == 0);
        CHECK(rdma_ack_cm_event(expect(ch[i], RDMA_CM_EVENT_ESTABLISHED)) == 0);
        CHECK(read(to_client[0], &word, 1) == 1);
    }
    CHECK(write(to_server[1], "d", 1) == 1);
    for (int i = 0; i < ROUNDS; i += 2)
        CHECK(rdma_disconnect(id[i]) == 0);
    /* hello is unpolled on every connection: no DISCONNECTED yet (the wait is 500 ms). */
    for (int i = 0; i < ROUNDS; i++)
        CHECK(!disconnected_within(ch[i], 0));
    for (int i = 0; i < ROUNDS; i++) {
        struct ibv_wc wc = cm_poll_one(cq[i]);

        CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV && wc.byte_len == sizeof(hello) &&
              !memcmp(buf[i], hello, sizeof(hello)));
        if (!disconnected_within(ch[i], 5000)) {
            fprintf(stderr, "connection %d: no DISCONNECTED 5 s after its last message was polled\n", i);
            return 1;
        }
        rdma_destroy_qp(id[i]);
        CHECK(ibv_dereg_mr(mr[i]) == 0 && ibv_destroy_cq(cq[i]) == 0 && rdma_destroy_id(id[i]) == 0);
        rdma_destroy_event_channel(ch[i]);
    }
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    puts("local disconnect ok");
    return 0;
}
