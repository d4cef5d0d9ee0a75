// SPDX-License-Identifier: MIT
/*
 * What a QP does when its peer disconnects, per personality, as rdma-core's devices do.
 * The client sends one message and disconnects; the server, with three receives posted,
 * takes the message and then DISCONNECTED.
 *  - RoCE (rxe): the peer's disconnect leaves the server's QP as it was. Its other
 *    receives stay posted, with no completion, and it reports RTS (librdmacm moves a QP to
 *    ERR only in the application's own rdma_disconnect). That rdma_disconnect then flushes
 *    both, and a receive posted after it flushes at once.
 *  - iWARP (siw): the connection's end moves the QP to ERR and flushes both receives.
 * libfabric's rxm, on a flush of its receives while the application still reads its CQ,
 * reports the flush to the application (fi_pingpong's "Work Request Flushed Error" when its
 * peer ended first): on RoCE no flush may come before the program's own disconnect.
 * Runs on the transport ND_TRANSPORT picks, in the personality ND_VERBS_PERSONALITY picks;
 * on loopback, or on the address given (built against rdma-core, it runs on rxe and siw).
 */
#include "cm_test.h"

#include <stdbool.h>
#include <string.h>
#include <time.h>

static const char fin[] = "fin";
static int to_server[2];

static bool iwarp_personality(struct ibv_context *ctx)
{
    return ctx->device->transport_type == IBV_TRANSPORT_IWARP;
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
    struct ibv_qp_attr a;
    struct ibv_qp_init_attr ia;

    CHECK(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia) == 0);
    return a.qp_state;
}

static uint64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Polls @cq for @ms: the completions that came, at most @max, into @wc. */
static int poll_for(struct ibv_cq *cq, struct ibv_wc *wc, int max, uint64_t ms)
{
    int got = 0;

    for (uint64_t until = now_ms() + ms; got < max && now_ms() < until;) {
        int n = ibv_poll_cq(cq, max - got, wc + got);

        CHECK(n >= 0);
        got += n;
    }
    return got;
}

static void expect_flushed(struct ibv_wc *wc, int n, uint64_t first_id)
{
    for (int i = 0; i < n; i++) {
        if (wc[i].status != IBV_WC_WR_FLUSH_ERR || wc[i].wr_id != first_id + (uint64_t)i) {
            fprintf(stderr, "completion %d: wr_id %llu status %s\n", i, (unsigned long long)wc[i].wr_id,
                    ibv_wc_status_str(wc[i].status));
            exit(1);
        }
    }
}

static void server(struct sockaddr_in *addr, int ready)
{
    struct rdma_event_channel *ch = rdma_create_event_channel();
    static char buf[4][64];
    struct rdma_cm_id *l, *c = cm_take_request(ch, addr, ready, &l);
    struct ibv_pd *pd = ibv_alloc_pd(c->verbs);
    struct ibv_cq *cq = pd ? ibv_create_cq(c->verbs, 8, NULL, NULL, 0) : NULL;
    struct ibv_qp_init_attr qa = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
                                   .cap = { .max_send_wr = 2, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 } };
    struct ibv_wc wc[4];
    char word;

    CHECK(cq && rdma_create_qp(c, pd, &qa) == 0);
    struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
    CHECK(mr);
    for (int i = 0; i < 3; i++)
        cm_post_recv(c->qp, mr, buf[i], 64, 10 + (uint64_t)i);
    CHECK(rdma_accept(c, NULL) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ESTABLISHED)) == 0);
    CHECK(poll_for(cq, wc, 1, 5000) == 1);
    CHECK(wc[0].wr_id == 10 && wc[0].status == IBV_WC_SUCCESS && memcmp(buf[0], fin, sizeof(fin)) == 0);
    CHECK(read(to_server[0], &word, 1) == 1);       /* the client has disconnected */
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED)) == 0);
    if (iwarp_personality(c->verbs)) {
        CHECK(poll_for(cq, wc, 2, 5000) == 2);
        expect_flushed(wc, 2, 11);
        /* siw's ibv_query_qp reports no state at all (its kernel leaves it unset). */
        CHECK(qp_state(c->qp) == IBV_QPS_ERR || strncmp(ibv_get_device_name(c->verbs->device), "siw", 3) == 0);
    } else {
        int n = poll_for(cq, wc, 2, 200);

        if (n) {
            fprintf(stderr, "the peer's disconnect completed %d receive(s) (%s) before ours\n", n,
                    ibv_wc_status_str(wc[0].status));
            exit(1);
        }
        CHECK(qp_state(c->qp) == IBV_QPS_RTS);
        CHECK(rdma_disconnect(c) == 0);
        CHECK(poll_for(cq, wc, 2, 5000) == 2);
        expect_flushed(wc, 2, 11);
        CHECK(qp_state(c->qp) == IBV_QPS_ERR);
    }
    /* A QP in ERR flushes a receive posted to it at once (the IB spec; rxe's and siw's
     * user-space posts do not reach their kernels, which leave it unflushed for seconds). */
    if (strncmp(ibv_get_device_name(c->verbs->device), "nd", 2) == 0) {
        cm_post_recv(c->qp, mr, buf[3], 64, 13);
        CHECK(poll_for(cq, wc, 1, 5000) == 1);
        expect_flushed(wc, 1, 13);
    }
    rdma_destroy_qp(c);
    CHECK(ibv_dereg_mr(mr) == 0 && ibv_destroy_cq(cq) == 0 && rdma_destroy_id(c) == 0 && ibv_dealloc_pd(pd) == 0);
    CHECK(rdma_destroy_id(l) == 0);
    rdma_destroy_event_channel(ch);
    exit(0);
}

int main(int argc, char **argv)
{
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct ibv_qp_init_attr qa = { .cap = { .max_send_wr = 2, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
                                   .qp_type = IBV_QPT_RC };
    struct rdma_event_channel *ch;
    struct rdma_cm_id *id;
    struct ibv_wc wc;
    static char msg[sizeof(fin)];
    int st;
    pid_t pid;

    CHECK(argc < 2 || inet_pton(AF_INET, argv[1], &addr.sin_addr) == 1);
    CHECK(pipe(to_server) == 0);
    pid = fork_server(server, &addr);
    id = cm_client_resolved(&ch, &addr);
    struct ibv_cq *cq = cm_create_qp_with_cq(id, &qa);
    bool iwarp = iwarp_personality(id->verbs);
    char dev[64];

    snprintf(dev, sizeof(dev), "%s", ibv_get_device_name(id->verbs->device));

    CHECK(rdma_connect(id, NULL) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ESTABLISHED)) == 0);
    struct ibv_mr *mr = ibv_reg_mr(id->pd, msg, sizeof(msg), IBV_ACCESS_LOCAL_WRITE);
    CHECK(mr);
    memcpy(msg, fin, sizeof(fin));
    struct ibv_sge sge = { (uintptr_t)msg, sizeof(msg), mr->lkey };
    struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                              .send_flags = IBV_SEND_SIGNALED }, *bad;
    CHECK(ibv_post_send(id->qp, &wr, &bad) == 0);
    wc = cm_poll_one(cq);
    CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 1);
    CHECK(rdma_disconnect(id) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED)) == 0);
    CHECK(write(to_server[1], "d", 1) == 1);
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    rdma_destroy_qp(id);
    CHECK(ibv_dereg_mr(mr) == 0 && ibv_destroy_cq(cq) == 0 && rdma_destroy_id(id) == 0);
    rdma_destroy_event_channel(ch);
    printf("%s, %s personality: the peer's disconnect %s\n", dev, iwarp ? "iWARP" : "RoCE",
           iwarp ? "flushed the receives" : "left the QP as it was until ours");
    return 0;
}
