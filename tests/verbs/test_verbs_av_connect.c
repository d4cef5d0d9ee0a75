// SPDX-License-Identifier: MIT
/*
 * QPs connected by the application's own exchange (ibv_modify_qp to RTR with an address
 * vector), as ibv_rc_pingpong and perftest connect them. Two processes swap QP numbers and
 * GIDs over pipes:
 * - the side whose QP the library makes dial (the lower QP number) moves to RTS and posts
 *   three Sends before the other side has even moved to RTR (they are held, then delivered
 *   in order); the other side posts its receives in INIT and moves to RTR only then;
 * - ibv_query_qp reports the address vector and destination it was given;
 * - once the peer destroyed its QP, ours keeps its receives (nothing flushes) until a Send
 *   of its own fails; then the receives flush, and ibv_query_qp reports ERR.
 * Then, alone: an address vector without a GRH, or with a GID not IPv4, or no destination
 * QP number, is EINVAL; towards a QP nobody has (refused, or never dialling us) Sends fail
 * within bounded time, the held ones included. Runs on the transport ND_TRANSPORT picks.
 */
#include <infiniband/verbs.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "%s:%d: %s (errno %d)\n", __FILE__, __LINE__, #c, errno); exit(1); } } while (0)

#define NMSG 3
#define NRECV 8
#define MSG 64

struct endpoint {
    uint32_t qpn;
    union ibv_gid gid;
};

struct side {
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_cq *cq;
    struct ibv_qp *qp;
    struct ibv_mr *mr;
    char buf[NRECV + NMSG][MSG];
};

static void side_open(struct side *s)
{
    struct ibv_device **list = ibv_get_device_list(NULL);
    struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC, .cap = { .max_send_wr = 16, .max_recv_wr = 16,
                                                                   .max_send_sge = 1, .max_recv_sge = 1 } };
    struct ibv_qp_attr init = { .qp_state = IBV_QPS_INIT, .port_num = 1,
                                .qp_access_flags = IBV_ACCESS_LOCAL_WRITE };

    CHECK(list && list[0]);
    CHECK((s->ctx = ibv_open_device(list[0])) != NULL);
    ibv_free_device_list(list);
    CHECK((s->pd = ibv_alloc_pd(s->ctx)) != NULL);
    CHECK((s->cq = ibv_create_cq(s->ctx, 64, NULL, NULL, 0)) != NULL);
    qa.send_cq = qa.recv_cq = s->cq;
    CHECK((s->qp = ibv_create_qp(s->pd, &qa)) != NULL);
    CHECK((s->mr = ibv_reg_mr(s->pd, s->buf, sizeof(s->buf), IBV_ACCESS_LOCAL_WRITE)) != NULL);
    CHECK(ibv_modify_qp(s->qp, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0);
}

static void side_close(struct side *s)
{
    if (s->qp)
        CHECK(ibv_destroy_qp(s->qp) == 0);
    CHECK(ibv_dereg_mr(s->mr) == 0);
    CHECK(ibv_destroy_cq(s->cq) == 0);
    CHECK(ibv_dealloc_pd(s->pd) == 0);
    CHECK(ibv_close_device(s->ctx) == 0);
}

static struct endpoint me(struct side *s)
{
    struct endpoint e = { .qpn = s->qp->qp_num };

    CHECK(ibv_query_gid(s->ctx, 1, 0, &e.gid) == 0);
    return e;
}

static struct ibv_qp_attr rtr_attr(const struct endpoint *peer)
{
    struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = peer->qpn,
                             .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
                             .ah_attr = { .is_global = 1, .port_num = 1,
                                          .grh = { .dgid = peer->gid, .sgid_index = 0, .hop_limit = 1 } } };
    return a;
}

#define RTR_MASK (IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | \
                  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)
#define RTS_MASK (IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | \
                  IBV_QP_MAX_QP_RD_ATOMIC)

static void to_rts(struct side *s, const struct endpoint *peer, uint8_t timeout, uint8_t retry)
{
    struct ibv_qp_attr a = rtr_attr(peer);

    CHECK(ibv_modify_qp(s->qp, &a, RTR_MASK) == 0);
    a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = timeout, .retry_cnt = retry, .rnr_retry = 7,
                              .max_rd_atomic = 1 };
    CHECK(ibv_modify_qp(s->qp, &a, RTS_MASK) == 0);
}

static void post_recv(struct side *s, int i)
{
    struct ibv_sge sge = { (uintptr_t)s->buf[i], MSG, s->mr->lkey };
    struct ibv_recv_wr rw = { .wr_id = 100 + (uint64_t)i, .sg_list = &sge, .num_sge = 1 }, *bad;

    CHECK(ibv_post_recv(s->qp, &rw, &bad) == 0);
}

static int post_send(struct side *s, int i)
{
    struct ibv_sge sge = { (uintptr_t)s->buf[NRECV + i], MSG, s->mr->lkey };
    struct ibv_send_wr wr = { .wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                              .send_flags = IBV_SEND_SIGNALED }, *bad;

    snprintf(s->buf[NRECV + i], MSG, "message %d", i);
    return ibv_post_send(s->qp, &wr, &bad);
}

static uint64_t now_ms(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* The next completion within @ms (false: none came). */
static bool poll_within(struct ibv_cq *cq, uint64_t ms, struct ibv_wc *wc)
{
    uint64_t end = now_ms() + ms;
    int n;

    while ((n = ibv_poll_cq(cq, 1, wc)) == 0)
        if (now_ms() >= end)
            return false;
    CHECK(n == 1);
    return true;
}

static void expect_ok(struct ibv_cq *cq, enum ibv_wc_opcode op, uint64_t id)
{
    struct ibv_wc wc;

    CHECK(poll_within(cq, 30000, &wc));
    if (wc.status != IBV_WC_SUCCESS || wc.opcode != op || wc.wr_id != id) {
        fprintf(stderr, "wc %llu: %s opcode %d; wanted %llu opcode %d\n", (unsigned long long)wc.wr_id,
                ibv_wc_status_str(wc.status), wc.opcode, (unsigned long long)id, op);
        exit(1);
    }
}

static void xfer(int fd, void *p, size_t n, bool out)
{
    CHECK((out ? write(fd, p, n) : read(fd, p, n)) == (ssize_t)n);
}

static void check_query(struct side *s, const struct endpoint *peer)
{
    struct ibv_qp_attr a;
    struct ibv_qp_init_attr ia;

    CHECK(ibv_query_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_DEST_QPN, &ia) == 0);
    CHECK(a.qp_state == IBV_QPS_RTS && a.dest_qp_num == peer->qpn && a.ah_attr.is_global == 1);
    CHECK(memcmp(&a.ah_attr.grh.dgid, &peer->gid, sizeof(peer->gid)) == 0);
}

/* The pair. @to/@from: pipes to and from the peer. */
static void pair(int to, int from)
{
    struct side s = { 0 };
    struct endpoint mine, peer;
    char go = 'g';
    struct ibv_wc wc;

    side_open(&s);
    mine = me(&s);
    xfer(to, &mine, sizeof(mine), true);
    xfer(from, &peer, sizeof(peer), false);
    if (mine.qpn < peer.qpn) {
        /* The library makes us dial: Sends before the peer is even at RTR. */
        to_rts(&s, &peer, 14, 7);
        for (int i = 0; i < NMSG; i++)
            CHECK(post_send(&s, i) == 0);
        xfer(to, &go, 1, true);
        for (int i = 0; i < NMSG; i++)
            expect_ok(s.cq, IBV_WC_SEND, (uint64_t)i);
        check_query(&s, &peer);
        xfer(from, &go, 1, false);  /* the peer has all three */
    } else {
        for (int i = 0; i < NRECV; i++)
            post_recv(&s, i);
        xfer(from, &go, 1, false);
        to_rts(&s, &peer, 14, 7);
        for (int i = 0; i < NMSG; i++) {
            char want[MSG];

            expect_ok(s.cq, IBV_WC_RECV, 100 + (uint64_t)i);
            snprintf(want, sizeof(want), "message %d", i);
            CHECK(strcmp(s.buf[i], want) == 0);
        }
        check_query(&s, &peer);
        xfer(to, &go, 1, true);
        /* The peer destroys its QP: ours keeps its receives until a Send fails. */
        xfer(from, &go, 1, false);
        CHECK(!poll_within(s.cq, 300, &wc));
        CHECK(post_send(&s, 0) == 0);
        CHECK(poll_within(s.cq, 30000, &wc));
        CHECK(wc.wr_id == 0 && wc.status != IBV_WC_SUCCESS);
        for (int i = NMSG; i < NRECV; i++) {
            CHECK(poll_within(s.cq, 30000, &wc));
            CHECK(wc.wr_id == 100 + (uint64_t)i && wc.status == IBV_WC_WR_FLUSH_ERR && wc.opcode == IBV_WC_RECV);
        }
        /* The QP failed under the application, which last asked for RTS. */
        struct ibv_qp_attr qa;
        struct ibv_qp_init_attr qia;
        CHECK(ibv_query_qp(s.qp, &qa, IBV_QP_STATE, &qia) == 0 && qa.qp_state == IBV_QPS_ERR);
        side_close(&s);
        return;
    }
    CHECK(ibv_destroy_qp(s.qp) == 0);
    s.qp = NULL;
    xfer(to, &go, 1, true);
    side_close(&s);
}

static void bad_vectors(void)
{
    struct side s = { 0 };
    struct endpoint e;
    struct ibv_qp_attr a;

    side_open(&s);
    e = me(&s);
    e.qpn ^= 1;
    a = rtr_attr(&e);
    a.ah_attr.is_global = 0;
    CHECK(ibv_modify_qp(s.qp, &a, RTR_MASK) == EINVAL);
    a = rtr_attr(&e);
    memset(&a.ah_attr.grh.dgid, 0, sizeof(a.ah_attr.grh.dgid));
    a.ah_attr.grh.dgid.raw[0] = 0xfe;
    a.ah_attr.grh.dgid.raw[1] = 0x80;
    CHECK(ibv_modify_qp(s.qp, &a, RTR_MASK) == EINVAL);
    a = rtr_attr(&e);
    CHECK(ibv_modify_qp(s.qp, &a, RTR_MASK & ~IBV_QP_DEST_QPN) == EINVAL);
    side_close(&s);
}

/* Towards a QP nobody has: held Sends, and those after, fail within bounded time (the
 * smallest retry budget: the library's floor). */
static void nobody(bool dial)
{
    struct side s = { 0 };
    struct endpoint e;
    struct ibv_wc wc;

    side_open(&s);
    e = me(&s);
    /* Port 65535 is nobody's (the top of the ephemeral range): we dial it; QP
     * number 1 is below ours, so we wait to be dialled, and nobody does. */
    e.qpn = dial ? 0xffff00 : 1;
    CHECK(dial == (s.qp->qp_num < e.qpn));
    to_rts(&s, &e, 1, 0);
    for (int i = 0; i < 2; i++)
        CHECK(post_send(&s, i) == 0);
    for (int i = 0; i < 2; i++) {
        CHECK(poll_within(s.cq, 30000, &wc));
        CHECK(wc.wr_id == (uint64_t)i && wc.status == IBV_WC_WR_FLUSH_ERR);
    }
    if (post_send(&s, 2) == 0) {
        CHECK(poll_within(s.cq, 30000, &wc));
        CHECK(wc.wr_id == 2 && wc.status == IBV_WC_WR_FLUSH_ERR);
    }
    side_close(&s);
}

int main(void)
{
    int ab[2], ba[2], status;
    pid_t pid;

    /* The peer first: the library's threads are not carried over a fork. */
    CHECK(pipe(ab) == 0 && pipe(ba) == 0);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        pair(ba[1], ab[0]);
        _exit(0);
    }
    pair(ab[1], ba[0]);
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    bad_vectors();
    nobody(true);
    nobody(false);
    puts("ok");
    return 0;
}
