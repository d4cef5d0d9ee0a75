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
#include "av_test.h"

#include <arpa/inet.h>
#include <sys/wait.h>

static void check_query(struct side *s, const struct endpoint *peer)
{
    struct ibv_qp_attr a;
    struct ibv_qp_init_attr ia;

    CHECK(ibv_query_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_DEST_QPN, &ia) == 0);
    CHECK(a.qp_state == IBV_QPS_RTS && a.dest_qp_num == peer->qpn && a.ah_attr.is_global == 1);
    CHECK(memcmp(&a.ah_attr.grh.dgid, &peer->gid, sizeof(peer->gid)) == 0);
}

/* The pair. @to/@from: pipes to and from the peer. */
static void pair(int to, int from, int unused)
{
    (void)unused;
    struct side s = { 0 };
    struct endpoint peer;
    char go = 'g';
    struct ibv_wc wc;

    if (side_open_swap(&s, to, from, &peer)) {
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
    av_fork_pair(pair, 0);
    bad_vectors();
    nobody(true);
    nobody(false);
    puts("ok");
    return 0;
}
