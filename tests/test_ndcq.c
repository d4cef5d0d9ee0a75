// SPDX-License-Identifier: MIT
/*
 * Port of ND's ndcq: two CQs bound to one port; notify both and cancel in order, in
 * reverse order, and two notifies on one CQ then cancel; 1000 iterations each. The
 * cancellations must be on the port when the cancel call returns, in request order.
 */
#include "t_util.h"

#define ITERATIONS 1000

static nd_port *port;

static void expect_next(nd_overlapped *want)
{
    nd_overlapped *got = NULL;

    CHECK_ST(nd_port_wait(port, 0, &got), ND_SUCCESS);   /* timeout 0: synchronous delivery */
    CHECK(got == want);
    CHECK_ST(nd_get_overlapped_result(got, 0), ND_CANCELED);
    CHECK_ST(nd_get_overlapped_result(got, 1), ND_CANCELED);
}

static void expect_empty(void)
{
    nd_overlapped *got;

    CHECK_ST(nd_port_wait(port, 0, &got), ND_TIMEOUT);
}

int main(void)
{
    nd_adapter *a = t_open_loopback();
    nd_overlapped ov1 = { 0 }, ov2 = { 0 }, ov3 = { 0 };
    nd_cq *cq1, *cq2;

    CHECK_ST(nd_adapter_create_overlapped_file(a, &port), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_completion_queue(a, port, 64, 0, 0, &cq1), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_completion_queue(a, port, 64, 0, 0, &cq2), ND_SUCCESS);

    for (int i = 0; i < ITERATIONS; i++) {   /* in order */
        CHECK_ST(nd_cq_notify(cq1, ND_CQ_NOTIFY_ANY, &ov1), ND_PENDING);
        CHECK_ST(nd_cq_notify(cq2, ND_CQ_NOTIFY_ANY, &ov2), ND_PENDING);
        CHECK_ST(nd_cq_get_overlapped_result(cq1, &ov1, 0), ND_PENDING);
        CHECK_ST(nd_cq_cancel_overlapped_requests(cq1), ND_SUCCESS);
        CHECK_ST(nd_cq_cancel_overlapped_requests(cq2), ND_SUCCESS);
        expect_next(&ov1);
        expect_next(&ov2);
        expect_empty();
    }
    for (int i = 0; i < ITERATIONS; i++) {   /* reverse order */
        CHECK_ST(nd_cq_notify(cq1, ND_CQ_NOTIFY_ANY, &ov1), ND_PENDING);
        CHECK_ST(nd_cq_notify(cq2, ND_CQ_NOTIFY_SOLICITED, &ov2), ND_PENDING);
        CHECK_ST(nd_cq_cancel_overlapped_requests(cq2), ND_SUCCESS);
        CHECK_ST(nd_cq_cancel_overlapped_requests(cq1), ND_SUCCESS);
        expect_next(&ov2);
        expect_next(&ov1);
        expect_empty();
    }
    for (int i = 0; i < ITERATIONS; i++) {   /* several notifies on one CQ */
        CHECK_ST(nd_cq_notify(cq1, ND_CQ_NOTIFY_ANY, &ov1), ND_PENDING);
        CHECK_ST(nd_cq_notify(cq1, ND_CQ_NOTIFY_SOLICITED, &ov2), ND_PENDING);
        CHECK_ST(nd_cq_notify(cq1, ND_CQ_NOTIFY_ERRORS, &ov3), ND_PENDING);
        CHECK_ST(nd_cq_cancel_overlapped_requests(cq1), ND_SUCCESS);
        expect_next(&ov1);
        expect_next(&ov2);
        expect_next(&ov3);
        expect_empty();
    }
    /* Closing a CQ cancels what is pending on it. */
    CHECK_ST(nd_cq_notify(cq2, ND_CQ_NOTIFY_ANY, &ov1), ND_PENDING);
    CHECK_ST(nd_cq_close(cq2), ND_SUCCESS);
    expect_next(&ov1);
    CHECK_ST(nd_cq_close(cq1), ND_SUCCESS);
    CHECK_ST(nd_port_close(port), ND_SUCCESS);
    CHECK_ST(nd_adapter_close(a), ND_SUCCESS);
    printf("ndcq: %d iterations x 3 cases ok\n", ITERATIONS);
    return 0;
}
