// SPDX-License-Identifier: MIT
/*
 * rnr_retry 7 means "retry for ever" (InfiniBand): a Send that finds no receive waits for
 * the peer's receive however long it takes; 0 to 6 fail it in bounded time with
 * IBV_WC_RNR_RETRY_EXC_ERR. Two processes connected by address vector, both with the same
 * rnr_retry; the receiver posts its receive 1.5 s (more than the bounded wait) after the
 * sender said it posted its Send. Runs on the transport ND_TRANSPORT picks.
 */
#include "av_test.h"

#include <sys/wait.h>

#define LATE_MS 1500

static void to_rts_rnr(struct side *s, const struct endpoint *peer, uint8_t rnr_retry)
{
    struct ibv_qp_attr a = rtr_attr(peer);

    CHECK(ibv_modify_qp(s->qp, &a, RTR_MASK) == 0);
    a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7, .rnr_retry = rnr_retry,
                              .max_rd_atomic = 1 };
    CHECK(ibv_modify_qp(s->qp, &a, RTS_MASK) == 0);
}

/* One side of a pair whose QPs have @rnr_retry. */
static void pair(int to, int from, int rnr_retry)
{
    struct side s = { 0 };
    struct endpoint peer;
    struct ibv_wc wc;
    char b = 'x';
    bool dials = side_open_swap(&s, to, from, &peer);

    to_rts_rnr(&s, &peer, (uint8_t)rnr_retry);
    if (dials) {
        CHECK(post_send(&s, 0) == 0);
        xfer(to, &b, 1, true);
        CHECK(poll_within(s.cq, 30000, &wc) && wc.wr_id == 0);
        if (wc.status != (rnr_retry == 7 ? IBV_WC_SUCCESS : IBV_WC_RNR_RETRY_EXC_ERR)) {
            fprintf(stderr, "rnr_retry %d: %s\n", rnr_retry, ibv_wc_status_str(wc.status));
            exit(1);
        }
        xfer(to, &b, 1, true);
    } else {
        uint64_t t0;

        xfer(from, &b, 1, false);       /* the Send is posted */
        t0 = now_ms();
        /* Polling meanwhile: nothing completes, the Send waits on the other side. */
        CHECK(!poll_within(s.cq, LATE_MS, &wc) && now_ms() - t0 >= LATE_MS);
        post_recv(&s, 0);
        if (rnr_retry == 7)
            expect_ok(s.cq, IBV_WC_RECV, 100);
        xfer(from, &b, 1, false);
    }
    side_close(&s);
}

int main(void)
{
    av_fork_pair(pair, 7);
    av_fork_pair(pair, 6);
    puts("ok");
    return 0;
}
