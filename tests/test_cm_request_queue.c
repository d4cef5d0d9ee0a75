// SPDX-License-Identifier: MIT
/*
 * The listener's queue of incoming requests, as a front end that makes an object per request
 * uses it (rdma_cm), both ends in this process:
 * - with no request queued, a take is pending (-EINPROGRESS, the core's status);
 * - three requests come: the listener's callback runs on the thread serving its port, and
 *   takes each on a connector of its own, with the request's private data;
 * - the taken connectors accept (the active side completes and both are connected), reject
 *   with private data (the active side sees ND_CONNECTION_REFUSED and the data), or close;
 * - a pending GetConnectionRequest still comes first: the next request goes to it and the
 *   callback does not run; once the callback is unset, requests wait in the queue.
 * Runs on the transport ND_TRANSPORT picks.
 */
#include "t_util.h"
#include <netdirect/netdirect.h>
#include "core/core.h"

#include <string.h>

#define NREQ 3

static nd_adapter *a;
static nd_port *port;
static nd_cq *cq;

static struct taker {
    nd_listener *l;
    int calls;
    int n;
    nd_connector *c[8];
} tk;

static void take_all(void *ctx)
{
    struct taker *t = ctx;
    nd_connector *c;

    t->calls++;
    while (ndc_listener_take_request(t->l, &c) == 0)
        if (t->n < 8)
            t->c[t->n++] = c;
}

static nd_qp *new_qp(void)
{
    nd_qp *qp;

    CHECK_ST(nd_adapter_create_queue_pair(a, cq, cq, NULL, 4, 4, 1, 1, 0, &qp), ND_SUCCESS);
    return qp;
}

static nd_connector *dial(uint16_t lport, int i, nd_qp *qp, nd_overlapped *ov)
{
    struct sockaddr_in src = t_ipv4(t_my_ip(), 0), dest = t_ipv4(t_my_ip(), lport);
    char pd[16];
    nd_connector *c;

    snprintf(pd, sizeof(pd), "req %d", i);
    CHECK_ST(nd_adapter_create_connector(a, port, &c), ND_SUCCESS);
    CHECK_ST(nd_connector_bind(c, (struct sockaddr *)&src, sizeof(src)), ND_SUCCESS);
    CHECK_ST(nd_connector_connect(c, qp, (struct sockaddr *)&dest, sizeof(dest), 0, 0, pd, sizeof(pd), ov),
             ND_PENDING);
    return c;
}

/* Serve the port until @n requests were taken (10 s at most). */
static void serve_until(int n)
{
    for (int i = 0; i < 1000 && tk.n < n; i++) {
        nd_overlapped *ov = NULL;

        nd_port_wait(port, 10, &ov);
        CHECK(ov == NULL);
    }
    CHECK(tk.n == n);
}

/* Which request (its private data's number) @c holds. */
static int request_number(nd_connector *c)
{
    char pd[256];
    uint32_t len = sizeof(pd);
    int i = -1;

    CHECK_ST(nd_connector_get_private_data(c, pd, &len), ND_SUCCESS);
    CHECK(len >= 16 && sscanf(pd, "req %d", &i) == 1);
    return i;
}

int main(void)
{
    struct sockaddr_in sin = t_ipv4(t_my_ip(), 0);
    uint32_t len = sizeof(sin);
    nd_overlapped cov[NREQ + 2], aov = { .flags = ND_OV_FLAG_NO_PORT }, gov = { 0 }, *came;
    nd_connector *act[NREQ + 2], *by_num[NREQ] = { 0 }, *c;
    nd_qp *aqp[NREQ + 2], *pqp;
    char got[256];

    a = t_open_loopback();
    CHECK_ST(nd_port_create(&port), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_completion_queue(a, port, 64, 0, 0, &cq), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_listener(a, port, &tk.l), ND_SUCCESS);
    ndc_listener_notify_requests(tk.l, take_all, &tk);
    CHECK_ST(nd_listener_bind(tk.l, (struct sockaddr *)&sin, sizeof(sin)), ND_SUCCESS);
    CHECK_ST(nd_listener_listen(tk.l, 0), ND_SUCCESS);
    CHECK_ST(nd_listener_get_local_address(tk.l, (struct sockaddr *)&sin, &len), ND_SUCCESS);
    uint16_t lport = ntohs(sin.sin_port);
    CHECK(ndc_listener_take_request(tk.l, &c) == -EINPROGRESS);

    for (int i = 0; i < NREQ; i++) {
        cov[i] = (nd_overlapped){ .flags = ND_OV_FLAG_NO_PORT };
        aqp[i] = new_qp();
        act[i] = dial(lport, i, aqp[i], &cov[i]);
    }
    serve_until(NREQ);
    CHECK(tk.calls >= 1 && tk.calls <= NREQ);
    for (int i = 0; i < NREQ; i++) {
        int k = request_number(tk.c[i]);

        CHECK(k >= 0 && k < NREQ && !by_num[k]);
        by_num[k] = tk.c[i];
    }

    /* Accept request 0: the active side completes, both connected. */
    pqp = new_qp();
    CHECK_ST(nd_connector_accept(by_num[0], pqp, 0, 0, "yes", 4, &aov), ND_PENDING);
    CHECK_ST(nd_get_overlapped_result(&cov[0], 1), ND_SUCCESS);
    len = sizeof(got);
    CHECK_ST(nd_connector_get_private_data(act[0], got, &len), ND_SUCCESS);
    CHECK(len >= 4 && strcmp(got, "yes") == 0);
    nd_overlapped done = { .flags = ND_OV_FLAG_NO_PORT };
    nd_status cst = nd_connector_complete_connect(act[0], &done);
    CHECK_ST(cst == ND_PENDING ? nd_get_overlapped_result(&done, 1) : cst, ND_SUCCESS);
    CHECK_ST(nd_get_overlapped_result(&aov, 1), ND_SUCCESS);
    /* Reject request 1 with data; close request 2 unanswered. */
    CHECK_ST(nd_connector_reject(by_num[1], "no", 3), ND_SUCCESS);
    CHECK_ST(nd_get_overlapped_result(&cov[1], 1), ND_CONNECTION_REFUSED);
    len = sizeof(got);
    CHECK_ST(nd_connector_get_private_data(act[1], got, &len), ND_SUCCESS);
    CHECK(len >= 3 && strcmp(got, "no") == 0);
    CHECK_ST(nd_connector_close(by_num[2]), ND_SUCCESS);
    CHECK(nd_get_overlapped_result(&cov[2], 1) != ND_SUCCESS);

    /* A pending GetConnectionRequest takes the next request; the callback does not run. */
    int calls = tk.calls;
    CHECK_ST(nd_adapter_create_connector(a, port, &c), ND_SUCCESS);
    CHECK_ST(nd_listener_get_connection_request(tk.l, c, &gov), ND_PENDING);
    cov[NREQ] = (nd_overlapped){ .flags = ND_OV_FLAG_NO_PORT };
    aqp[NREQ] = new_qp();
    act[NREQ] = dial(lport, NREQ, aqp[NREQ], &cov[NREQ]);
    came = NULL;
    CHECK_ST(nd_port_wait(port, 10000, &came), ND_SUCCESS);
    CHECK(came == &gov && gov.status == ND_SUCCESS && request_number(c) == NREQ && tk.calls == calls);
    CHECK_ST(nd_connector_reject(c, NULL, 0), ND_SUCCESS);
    CHECK_ST(nd_get_overlapped_result(&cov[NREQ], 1), ND_CONNECTION_REFUSED);
    CHECK_ST(nd_connector_close(c), ND_SUCCESS);

    /* Unset: the next request waits in the queue for a take. */
    ndc_listener_notify_requests(tk.l, NULL, NULL);
    cov[NREQ + 1] = (nd_overlapped){ .flags = ND_OV_FLAG_NO_PORT };
    aqp[NREQ + 1] = new_qp();
    act[NREQ + 1] = dial(lport, NREQ + 1, aqp[NREQ + 1], &cov[NREQ + 1]);
    int st = -EINPROGRESS;
    for (int i = 0; i < 1000 && st == -EINPROGRESS; i++) {
        came = NULL;
        nd_port_wait(port, 10, &came);
        CHECK(came == NULL);
        st = ndc_listener_take_request(tk.l, &c);
    }
    CHECK(st == 0);
    CHECK(request_number(c) == NREQ + 1 && tk.calls == calls);
    CHECK_ST(nd_connector_close(c), ND_SUCCESS);
    CHECK(nd_get_overlapped_result(&cov[NREQ + 1], 1) != ND_SUCCESS);

    CHECK_ST(nd_listener_close(tk.l), ND_SUCCESS);
    for (int i = 0; i < NREQ + 2; i++) {
        CHECK_ST(nd_connector_close(act[i]), ND_SUCCESS);
        CHECK_ST(nd_qp_close(aqp[i]), ND_SUCCESS);
    }
    CHECK_ST(nd_connector_close(by_num[0]), ND_SUCCESS);
    CHECK_ST(nd_connector_close(by_num[1]), ND_SUCCESS);
    CHECK_ST(nd_qp_close(pqp), ND_SUCCESS);
    CHECK_ST(nd_cq_close(cq), ND_SUCCESS);
    CHECK_ST(nd_port_close(port), ND_SUCCESS);
    CHECK_ST(nd_adapter_close(a), ND_SUCCESS);
    puts("request queue ok");
    return 0;
}
