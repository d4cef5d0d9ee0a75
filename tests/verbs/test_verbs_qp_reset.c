// SPDX-License-Identifier: MIT
/*
 * A QP that failed is reusable after RESET, and a receive's key is judged when a message
 * comes for it, as an RNIC judges it (rdma-core's test_mr_rereg_pd and _addr do both). Two
 * processes connect RC QPs by address vector, then, each round ending in a RESET of both
 * QPs and a new INIT, RTR, RTS towards the same peer (the dialer restates first, so its
 * request finds the other QP still connected or in ERR, and waits for its RESET):
 * 1. a receive posted with the key of a region of another PD is taken by the post; the
 *    Send that comes for it fails IBV_WC_REM_OP_ERR at its sender, the receive fails
 *    IBV_WC_LOC_PROT_ERR, and the buffer stays untouched;
 * 2. a receive posted in a region then re-registered elsewhere (IBV_REREG_MR_CHANGE_TRANSLATION):
 *    the same;
 * 3. after each RESET the CQs hold nothing of the failed connection (a Send posted after
 *    the failure, a receive after the refused one: their flushes are dropped), and Sends
 *    both ways arrive whole.
 * Runs on the transport ND_TRANSPORT picks.
 */
#include "av_test.h"

#include <stdint.h>

static char other[MSG], moved[MSG];

static void sync_peer(int to, int from)
{
    char go = 'g';

    xfer(to, &go, 1, true);
    xfer(from, &go, 1, false);
}

/* A Send's completion and a receive's, in either order: the answer to our Send may be
 * reported before our Send is (over iwarp its completion waits for a proof of placement). */
static void expect_send_and_recv(struct ibv_cq *cq, uint64_t send_id, uint64_t recv_id)
{
    bool sent = false, got = false;

    while (!sent || !got) {
        struct ibv_wc wc;

        CHECK(poll_within(cq, 30000, &wc));
        CHECK(wc.status == IBV_WC_SUCCESS);
        if (wc.opcode == IBV_WC_SEND && wc.wr_id == send_id && !sent)
            sent = true;
        else if (wc.opcode == IBV_WC_RECV && wc.wr_id == recv_id && !got)
            got = true;
        else
            CHECK(!"an unexpected completion");
    }
}

/* Both directions, one Send each, every byte checked. */
static void traffic(struct side *s, bool dialer, int to, int from)
{
    char want[MSG];

    post_recv(s, 0);
    sync_peer(to, from);
    if (dialer) {
        CHECK(post_send(s, 0) == 0);
        expect_send_and_recv(s->cq, 0, 100);
    } else {
        expect_ok(s->cq, IBV_WC_RECV, 100);
        CHECK(post_send(s, 1) == 0);
        expect_ok(s->cq, IBV_WC_SEND, 1);
    }
    snprintf(want, sizeof(want), "message %d", dialer ? 1 : 0);
    CHECK(strcmp(s->buf[0], want) == 0);
    memset(s->buf[0], 0, MSG);
}

/* The receiver posted receive @recv_id, which its QP may not use, and one more after it:
 * the dialer's Send into the first fails IBV_WC_REM_OP_ERR, the receive IBV_WC_LOC_PROT_ERR.
 * What follows (the dialer's next Send, the other receive) is left on the CQs for the RESET. */
static void refused_send(struct side *s, bool dialer, int to, int from, const char *untouched, uint64_t recv_id)
{
    struct ibv_wc wc;

    if (!dialer)
        post_recv(s, 2);
    sync_peer(to, from);
    if (dialer)
        CHECK(post_send(s, 2) == 0);
    CHECK(poll_within(s->cq, 30000, &wc));
    if (wc.wr_id != (dialer ? 2 : recv_id) || wc.status != (dialer ? IBV_WC_REM_OP_ERR : IBV_WC_LOC_PROT_ERR)) {
        fprintf(stderr, "%s: wc %llu %s\n", dialer ? "a Send into a refused receive" : "the refused receive",
                (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));
        exit(1);
    }
    if (dialer)
        CHECK(post_send(s, 1) == 0);
    sync_peer(to, from);
    for (int i = 0; i < MSG; i++)
        CHECK(untouched[i] == 0);
}

/* RESET, then back to RTS towards the same peer, the dialer first; nothing of the old
 * connection is left on the CQ. */
static void restate(struct side *s, bool dialer, const struct endpoint *peer, int to, int from)
{
    struct ibv_qp_attr reset = { .qp_state = IBV_QPS_RESET };
    struct ibv_qp_attr init = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = IBV_ACCESS_LOCAL_WRITE };
    struct ibv_wc wc;
    char go = 'g';

    /* The other side stays in ERR until the dialer's request may have come. */
    if (!dialer)
        xfer(from, &go, 1, false);
    CHECK(ibv_modify_qp(s->qp, &reset, IBV_QP_STATE) == 0);
    CHECK(ibv_poll_cq(s->cq, 1, &wc) == 0);
    CHECK(ibv_modify_qp(s->qp, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0);
    to_rts(s, peer, 14, 7);
    if (dialer)
        xfer(to, &go, 1, true);
    CHECK(!poll_within(s->cq, 50, &wc));
}

static void pair(int to, int from, int unused)
{
    (void)unused;
    struct side s = { 0 };
    struct endpoint peer;
    bool dialer = side_open_swap(&s, to, from, &peer);

    to_rts(&s, &peer, 14, 7);
    traffic(&s, dialer, to, from);

    /* 1: a key of another protection domain, taken by the post. */
    struct ibv_pd *pd2 = ibv_alloc_pd(s.ctx);
    struct ibv_mr *mr2 = pd2 ? ibv_reg_mr(pd2, other, sizeof(other), IBV_ACCESS_LOCAL_WRITE) : NULL;
    CHECK(mr2);
    if (!dialer) {
        struct ibv_sge sge = { (uintptr_t)other, MSG, mr2->lkey };
        struct ibv_recv_wr rw = { .wr_id = 7, .sg_list = &sge, .num_sge = 1 }, *bad;

        CHECK(ibv_post_recv(s.qp, &rw, &bad) == 0);
    }
    refused_send(&s, dialer, to, from, other, 7);
    restate(&s, dialer, &peer, to, from);
    traffic(&s, dialer, to, from);

    /* 2: a receive posted, then its region re-registered elsewhere. */
    if (!dialer) {
        post_recv(&s, 1);
        CHECK(ibv_rereg_mr(s.mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, moved, sizeof(moved), 0) == 0);
    }
    refused_send(&s, dialer, to, from, s.buf[1], 101);
    if (!dialer)
        CHECK(ibv_rereg_mr(s.mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, s.buf, sizeof(s.buf), 0) == 0);
    restate(&s, dialer, &peer, to, from);
    traffic(&s, dialer, to, from);

    sync_peer(to, from);
    CHECK(ibv_dereg_mr(mr2) == 0 && ibv_dealloc_pd(pd2) == 0);
    side_close(&s);
}

int main(void)
{
    av_fork_pair(pair, 0);
    puts("QP reuse after RESET, receives judged at use: ok");
    return 0;
}
