/* SPDX-License-Identifier: MIT */
/*
 * Two sides of a QP pair connected by address vector (ibv_modify_qp to RTR with the peer's
 * GID and QP number), for the tests of av.c: each side opens the device, a PD, a CQ, an RC
 * QP in INIT and a buffer of receives and messages; the peers swap endpoints over pipes.
 */
#ifndef ND_TEST_AV_H
#define ND_TEST_AV_H

#include <infiniband/verbs.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
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

static inline void side_open(struct side *s)
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

static inline void side_close(struct side *s)
{
    if (s->qp)
        CHECK(ibv_destroy_qp(s->qp) == 0);
    CHECK(ibv_dereg_mr(s->mr) == 0);
    CHECK(ibv_destroy_cq(s->cq) == 0);
    CHECK(ibv_dealloc_pd(s->pd) == 0);
    CHECK(ibv_close_device(s->ctx) == 0);
}

static inline struct endpoint me(struct side *s)
{
    struct endpoint e = { .qpn = s->qp->qp_num };

    CHECK(ibv_query_gid(s->ctx, 1, 0, &e.gid) == 0);
    return e;
}

static inline struct ibv_qp_attr rtr_attr(const struct endpoint *peer)
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

static inline void to_rts(struct side *s, const struct endpoint *peer, uint8_t timeout, uint8_t retry)
{
    struct ibv_qp_attr a = rtr_attr(peer);

    CHECK(ibv_modify_qp(s->qp, &a, RTR_MASK) == 0);
    a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = timeout, .retry_cnt = retry, .rnr_retry = 7,
                              .max_rd_atomic = 1 };
    int err = ibv_modify_qp(s->qp, &a, RTS_MASK);
    if (err) {
        struct ibv_qp_init_attr ia;

        /* Say where the QP is: a connection that failed in RTR fails the RTS step. */
        CHECK(ibv_query_qp(s->qp, &a, IBV_QP_STATE, &ia) == 0);
        fprintf(stderr, "RTS refused (%s) with the QP in state %d\n", strerror(err), a.qp_state);
        exit(1);
    }
}

static inline void post_recv(struct side *s, int i)
{
    struct ibv_sge sge = { (uintptr_t)s->buf[i], MSG, s->mr->lkey };
    struct ibv_recv_wr rw = { .wr_id = 100 + (uint64_t)i, .sg_list = &sge, .num_sge = 1 }, *bad;

    CHECK(ibv_post_recv(s->qp, &rw, &bad) == 0);
}

static inline int post_send(struct side *s, int i)
{
    struct ibv_sge sge = { (uintptr_t)s->buf[NRECV + i], MSG, s->mr->lkey };
    struct ibv_send_wr wr = { .wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                              .send_flags = IBV_SEND_SIGNALED }, *bad;

    snprintf(s->buf[NRECV + i], MSG, "message %d", i);
    return ibv_post_send(s->qp, &wr, &bad);
}

static inline uint64_t now_ms(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* The next completion within @ms (false: none came). */
static inline bool poll_within(struct ibv_cq *cq, uint64_t ms, struct ibv_wc *wc)
{
    uint64_t end = now_ms() + ms;
    int n;

    while ((n = ibv_poll_cq(cq, 1, wc)) == 0)
        if (now_ms() >= end)
            return false;
    CHECK(n == 1);
    return true;
}

static inline void expect_ok(struct ibv_cq *cq, enum ibv_wc_opcode op, uint64_t id)
{
    struct ibv_wc wc;

    CHECK(poll_within(cq, 30000, &wc));
    if (wc.status != IBV_WC_SUCCESS || wc.opcode != op || wc.wr_id != id) {
        fprintf(stderr, "wc %llu: %s opcode %d; wanted %llu opcode %d\n", (unsigned long long)wc.wr_id,
                ibv_wc_status_str(wc.status), wc.opcode, (unsigned long long)id, op);
        exit(1);
    }
}

static inline void xfer(int fd, void *p, size_t n, bool out)
{
    CHECK((out ? write(fd, p, n) : read(fd, p, n)) == (ssize_t)n);
}

/* Opens @s and swaps endpoints with the peer over the pipes: whether this side dials (the
 * lower QP number), the peer's endpoint in @peer. */
static inline bool side_open_swap(struct side *s, int to, int from, struct endpoint *peer)
{
    struct endpoint mine;

    side_open(s);
    mine = me(s);
    xfer(to, &mine, sizeof(mine), true);
    xfer(from, peer, sizeof(*peer), false);
    return mine.qpn < peer->qpn;
}

/* Runs @pair(to, from, arg) in this process and in a child forked first (the library's
 * threads are not carried over a fork), joined by two pipes; the child must exit 0. Each
 * side keeps only the ends it uses: a side that dies is an end of file to the other. */
static inline void av_fork_pair(void (*pair)(int to, int from, int arg), int arg)
{
    int ab[2], ba[2], status;
    pid_t pid;

    CHECK(pipe(ab) == 0 && pipe(ba) == 0);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        close(ab[1]);
        close(ba[0]);
        pair(ba[1], ab[0], arg);
        _exit(0);
    }
    close(ab[0]);
    close(ba[1]);
    pair(ab[1], ba[0], arg);
    close(ab[1]);
    close(ba[0]);
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

#endif
