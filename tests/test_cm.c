// SPDX-License-Identifier: MIT
/*
 * Connector and listener states (ND2's connector model) on one host, both ends in this process
 * (asynchronous calls interleaved): bind/connect statuses, refused and retried connects,
 * private data limits and size probes, read-limit negotiation, passive and active Reject
 * (NdConnReject), a closed listener (NdConnListenClosing), GetConnectionRequest FIFO and
 * cancellation, NotifyDisconnect and Disconnect in each state, addresses.
 */
#include "t_util.h"

static nd_adapter *a;
static nd_port *port;
static nd_cq *cq;

struct pair {
    nd_connector *act, *pas;
    nd_qp *aqp, *pqp;
};

static nd_qp *new_qp(void)
{
    nd_qp *qp;

    CHECK_ST(nd_adapter_create_queue_pair(a, cq, cq, NULL, 4, 4, 1, 1, 0, &qp), ND_SUCCESS);
    return qp;
}

static nd_connector *new_conn(void)
{
    nd_connector *c;

    CHECK_ST(nd_adapter_create_connector(a, port, &c), ND_SUCCESS);
    return c;
}

static nd_listener *listen_on(uint16_t p, uint16_t *bound)
{
    struct sockaddr_in sin = t_ipv4(t_my_ip(), p);
    uint32_t len = sizeof(sin);
    nd_listener *l;

    CHECK_ST(nd_adapter_create_listener(a, port, &l), ND_SUCCESS);
    CHECK_ST(nd_listener_bind(l, (struct sockaddr *)&sin, sizeof(sin)), ND_SUCCESS);
    CHECK_ST(nd_listener_get_local_address(l, (struct sockaddr *)&sin, &len), ND_INVALID_DEVICE_STATE);
    CHECK_ST(nd_listener_listen(l, 0), ND_SUCCESS);
    CHECK_ST(nd_listener_get_local_address(l, (struct sockaddr *)&sin, &len), ND_SUCCESS);
    *bound = ntohs(sin.sin_port);
    return l;
}

static void bind_any(nd_connector *c)
{
    struct sockaddr_in sin = t_ipv4(t_my_ip(), 0);

    CHECK_ST(nd_connector_bind(c, (struct sockaddr *)&sin, sizeof(sin)), ND_SUCCESS);
}

static nd_status wait_ov(nd_overlapped *ov)
{
    return nd_get_overlapped_result(ov, 1);
}

/* Connect -> GetConnectionRequest; stops with both sides holding the request/reply. */
static void start_pair(struct pair *p, nd_listener *l, uint16_t lport, const void *pd, uint32_t pl, uint32_t ird,
                       uint32_t ord, nd_overlapped *cov)
{
    struct sockaddr_in dest = t_ipv4(t_my_ip(), lport);
    nd_overlapped gov = { .flags = ND_OV_FLAG_NO_PORT };

    p->act = new_conn();
    p->pas = new_conn();
    p->aqp = new_qp();
    p->pqp = new_qp();
    bind_any(p->act);
    CHECK_ST(nd_connector_connect(p->act, p->aqp, (struct sockaddr *)&dest, sizeof(dest), ird, ord, pd, pl, cov),
             ND_PENDING);
    CHECK_ST(nd_listener_get_connection_request(l, p->pas, &gov), ND_PENDING);
    CHECK_ST(wait_ov(&gov), ND_SUCCESS);
}

static void end_pair(struct pair *p)
{
    CHECK_ST(nd_connector_close(p->act), ND_SUCCESS);
    CHECK_ST(nd_connector_close(p->pas), ND_SUCCESS);
    CHECK_ST(nd_qp_close(p->aqp), ND_SUCCESS);
    CHECK_ST(nd_qp_close(p->pqp), ND_SUCCESS);
}

int main(void)
{
    nd_adapter_info info = { .info_version = ND_VERSION_2 };
    uint32_t isz = sizeof(info), in, out, len;
    nd_overlapped cov = { .flags = ND_OV_FLAG_NO_PORT }, aov = { .flags = ND_OV_FLAG_NO_PORT };
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    struct sockaddr_in zero = t_ipv4("0.0.0.0", 9), sin;
    uint8_t pd[256], got[256];
    uint16_t lport, other;
    struct pair p;

    a = t_open_loopback();
    CHECK_ST(nd_adapter_query(a, &info, &isz), ND_SUCCESS);
    CHECK_ST(nd_port_create(&port), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_completion_queue(a, port, 64, 0, 0, &cq), ND_SUCCESS);
    for (uint32_t i = 0; i < sizeof(pd); i++)
        pd[i] = (uint8_t)(i * 3 + 1);

    /* Bind and Connect statuses on one connector. */
    nd_connector *c = new_conn();
    nd_qp *qp = new_qp();
    struct sockaddr_in nowhere = t_ipv4(t_my_ip(), 1);
    CHECK_ST(nd_connector_connect(c, qp, (struct sockaddr *)&nowhere, sizeof(nowhere), 0, 0, NULL, 0, &cov),
             STATUS_ADDRESS_NOT_ASSOCIATED);
    bind_any(c);
    CHECK_ST(nd_connector_bind(c, (struct sockaddr *)&nowhere, sizeof(nowhere)), STATUS_ADDRESS_ALREADY_ASSOCIATED);
    CHECK_ST(nd_connector_connect(c, qp, (struct sockaddr *)&zero, sizeof(zero), 0, 0, NULL, 0, &cov),
             STATUS_BAD_NETWORK_NAME);
    CHECK_ST(nd_connector_connect(c, qp, (struct sockaddr *)&nowhere, sizeof(nowhere), 0, 0, pd,
                                  info.max_caller_data + 1, &cov), ND_INVALID_BUFFER_SIZE);
    /* No listener on a reserved port: refused, and the connector may try again. */
    nd_listener *reserve;
    CHECK_ST(nd_adapter_create_listener(a, port, &reserve), ND_SUCCESS);
    sin = t_ipv4(t_my_ip(), 0);
    len = sizeof(sin);
    CHECK_ST(nd_listener_bind(reserve, (struct sockaddr *)&sin, sizeof(sin)), ND_SUCCESS);
    CHECK_ST(nd_listener_listen(reserve, 0), ND_SUCCESS);
    CHECK_ST(nd_listener_get_local_address(reserve, (struct sockaddr *)&sin, &len), ND_SUCCESS);
    other = ntohs(sin.sin_port);
    CHECK_ST(nd_listener_close(reserve), ND_SUCCESS);     /* NdConnListenClosing */
    struct sockaddr_in closed = t_ipv4(t_my_ip(), other);
    CHECK_ST(nd_connector_connect(c, qp, (struct sockaddr *)&closed, sizeof(closed), 0, 0, NULL, 0, &cov),
             ND_CONNECTION_REFUSED);
    CHECK_ST(nd_connector_complete_connect(c, &ov), ND_CONNECTION_INVALID);
    CHECK_ST(nd_connector_accept(c, qp, 0, 0, NULL, 0, &ov), ND_CONNECTION_ACTIVE);
    CHECK_ST(nd_connector_reject(c, NULL, 0), ND_INVALID_DEVICE_STATE);
    CHECK_ST(nd_connector_get_read_limits(c, &in, &out), ND_INVALID_DEVICE_STATE);
    CHECK_ST(nd_connector_notify_disconnect(c, &ov), ND_INVALID_DEVICE_STATE);
    CHECK_ST(nd_connector_disconnect(c, &ov), ND_CONNECTION_INVALID);

    /* A second listener on the same address and port. */
    nd_listener *l = listen_on(0, &lport), *dup;
    sin = t_ipv4(t_my_ip(), lport);
    CHECK_ST(nd_adapter_create_listener(a, port, &dup), ND_SUCCESS);
    CHECK_ST(nd_listener_bind(dup, (struct sockaddr *)&sin, sizeof(sin)), STATUS_ADDRESS_ALREADY_ASSOCIATED);
    CHECK_ST(nd_listener_close(dup), ND_SUCCESS);

    /* The refused connector connects once a listener is there (retry after refusal). */
    nd_connector *pas = new_conn();
    nd_qp *pqp = new_qp();
    CHECK_ST(nd_connector_connect(c, qp, (struct sockaddr *)&sin, sizeof(sin), 0, 0, NULL, 0, &cov), ND_PENDING);
    CHECK_ST(nd_connector_connect(c, qp, (struct sockaddr *)&sin, sizeof(sin), 0, 0, NULL, 0, &ov),
             ND_CONNECTION_ACTIVE);
    CHECK_ST(nd_listener_get_connection_request(l, pas, &ov), ND_PENDING);
    CHECK_ST(wait_ov(&ov), ND_SUCCESS);
    CHECK_ST(nd_connector_accept(pas, pqp, 0, 0, pd, info.max_callee_data + 1, &aov), ND_INVALID_BUFFER_SIZE);
    CHECK_ST(nd_connector_accept(pas, pqp, 0, 0, NULL, 0, &aov), ND_PENDING);
    CHECK_ST(wait_ov(&cov), ND_SUCCESS);
    CHECK_ST(nd_connector_complete_connect(c, &ov), ND_SUCCESS);
    CHECK_ST(wait_ov(&aov), ND_SUCCESS);
    len = sizeof(sin);
    CHECK_ST(nd_connector_get_peer_address(c, (struct sockaddr *)&sin, &len), ND_SUCCESS);
    CHECK(ntohs(sin.sin_port) == lport);
    len = 2;
    CHECK_ST(nd_connector_get_local_address(c, (struct sockaddr *)&sin, &len), ND_BUFFER_OVERFLOW);
    CHECK(len == sizeof(struct sockaddr_in));
    CHECK_ST(nd_connector_get_read_limits(c, &in, &out), ND_INVALID_DEVICE_STATE);
    /* NotifyDisconnect pends; the peer's Disconnect completes it; then both are disconnected. */
    nd_overlapped nov = { .flags = ND_OV_FLAG_NO_PORT };
    CHECK_ST(nd_connector_notify_disconnect(c, &nov), ND_PENDING);
    CHECK_ST(nd_connector_disconnect(pas, &ov), ND_SUCCESS);
    CHECK_ST(wait_ov(&nov), ND_SUCCESS);
    CHECK_ST(nd_connector_notify_disconnect(c, &ov), ND_SUCCESS);            /* already gone */
    CHECK_ST(nd_connector_disconnect(c, &ov), ND_SUCCESS);                   /* passive side: at once */
    CHECK_ST(nd_connector_disconnect(c, &ov), ND_CONNECTION_INVALID);
    CHECK_ST(nd_connector_notify_disconnect(pas, &ov), STATUS_CONNECTION_DISCONNECTED);
    CHECK_ST(nd_connector_close(c), ND_SUCCESS);
    CHECK_ST(nd_connector_close(pas), ND_SUCCESS);
    CHECK_ST(nd_qp_close(qp), ND_SUCCESS);
    CHECK_ST(nd_qp_close(pqp), ND_SUCCESS);

    /* Private data at the limit, with a size probe; read limits swapped and clamped. */
    start_pair(&p, l, lport, pd, info.max_caller_data, 5, 7, &cov);
    len = 0;
    CHECK_ST(nd_connector_get_private_data(p.pas, NULL, &len), ND_BUFFER_OVERFLOW);
    CHECK(len == info.max_caller_data);
    CHECK_ST(nd_connector_get_private_data(p.pas, got, &len), ND_SUCCESS);
    CHECK(memcmp(got, pd, len) == 0);
    CHECK_ST(nd_connector_get_read_limits(p.pas, &in, &out), ND_SUCCESS);
    CHECK(in == 7 && out == 5);                 /* our inbound = the peer's outbound */
    len = sizeof(sin);
    CHECK_ST(nd_connector_get_peer_address(p.pas, (struct sockaddr *)&sin, &len), ND_SUCCESS);
    CHECK_ST(nd_connector_accept(p.pas, p.pqp, 3, 9, pd, info.max_callee_data, &aov), ND_PENDING);
    CHECK_ST(wait_ov(&cov), ND_SUCCESS);
    len = sizeof(got);
    CHECK_ST(nd_connector_get_private_data(p.act, got, &len), ND_SUCCESS);
    CHECK(len == info.max_callee_data && memcmp(got, pd, len) == 0);
    CHECK_ST(nd_connector_get_read_limits(p.act, &in, &out), ND_SUCCESS);
    CHECK(in == 5 && out == 3);                 /* the passive side read 9 clamped to our 5; its IRD 3 */
    CHECK_ST(nd_connector_complete_connect(p.act, &ov), ND_SUCCESS);
    CHECK_ST(wait_ov(&aov), ND_SUCCESS);
    end_pair(&p);                               /* closing connected connectors disconnects */

    /* NdConnReject: the active side rejects after Connect completed. */
    start_pair(&p, l, lport, NULL, 0, 0, 0, &cov);
    CHECK_ST(nd_connector_accept(p.pas, p.pqp, 0, 0, NULL, 0, &aov), ND_PENDING);
    CHECK_ST(wait_ov(&cov), ND_SUCCESS);
    CHECK_ST(nd_connector_reject(p.act, pd, 8), ND_SUCCESS);
    CHECK_ST(wait_ov(&aov), ND_CONNECTION_REFUSED);
    CHECK_ST(nd_connector_complete_connect(p.act, &ov), ND_CONNECTION_ABORTED);
    end_pair(&p);

    /* The passive side rejects: Connect is refused, carries the REJ's data, and may retry. */
    start_pair(&p, l, lport, NULL, 0, 0, 0, &cov);
    CHECK_ST(nd_connector_reject(p.pas, pd + 10, 20), ND_SUCCESS);
    CHECK_ST(nd_connector_reject(p.pas, NULL, 0), ND_CONNECTION_INVALID);
    CHECK_ST(wait_ov(&cov), ND_CONNECTION_REFUSED);
    len = sizeof(got);
    CHECK_ST(nd_connector_get_private_data(p.act, got, &len), ND_SUCCESS);
    CHECK(len == 20 && memcmp(got, pd + 10, 20) == 0);
    end_pair(&p);

    /* A request matched inside nd_port_wait (the IOCP pattern): the listener registers the
     * new connection's socket on the very port it is being dispatched from. */
    nd_connector *taker = new_conn();
    nd_overlapped took = { 0 }, *came = NULL;
    struct sockaddr_in dest = t_ipv4(t_my_ip(), lport);
    CHECK_ST(nd_listener_get_connection_request(l, taker, &took), ND_PENDING);
    p.act = new_conn();
    p.aqp = new_qp();
    bind_any(p.act);
    CHECK_ST(nd_connector_connect(p.act, p.aqp, (struct sockaddr *)&dest, sizeof(dest), 0, 0, NULL, 0, &cov),
             ND_PENDING);
    CHECK_ST(nd_port_wait(port, 10000, &came), ND_SUCCESS);
    CHECK(came == &took && took.status == ND_SUCCESS);
    CHECK_ST(nd_connector_reject(taker, NULL, 0), ND_SUCCESS);
    CHECK_ST(wait_ov(&cov), ND_CONNECTION_REFUSED);
    CHECK_ST(nd_connector_close(taker), ND_SUCCESS);
    CHECK_ST(nd_connector_close(p.act), ND_SUCCESS);
    CHECK_ST(nd_qp_close(p.aqp), ND_SUCCESS);

    /* GetConnectionRequest: FIFO, cancelled in order, and by closing the listener. */
    nd_connector *g1 = new_conn(), *g2 = new_conn();
    nd_overlapped o1 = { 0 }, o2 = { 0 }, *popped;
    CHECK_ST(nd_listener_get_connection_request(l, g1, &o1), ND_PENDING);
    CHECK_ST(nd_listener_get_connection_request(l, g1, &o2), ND_INVALID_DEVICE_STATE);   /* g1 is taken */
    CHECK_ST(nd_listener_get_connection_request(l, g2, &o2), ND_PENDING);
    CHECK_ST(nd_listener_cancel_overlapped_requests(l), ND_SUCCESS);
    CHECK_ST(nd_port_wait(port, 0, &popped), ND_SUCCESS);
    CHECK(popped == &o1 && o1.status == ND_CANCELED);
    CHECK_ST(nd_port_wait(port, 0, &popped), ND_SUCCESS);
    CHECK(popped == &o2 && o2.status == ND_CANCELED);
    CHECK_ST(nd_listener_get_connection_request(l, g1, &o1), ND_PENDING);   /* reusable after cancel */
    CHECK_ST(nd_listener_close(l), ND_SUCCESS);
    CHECK_ST(nd_port_wait(port, 0, &popped), ND_SUCCESS);
    CHECK(popped == &o1 && o1.status == ND_CANCELED);
    CHECK_ST(nd_connector_close(g1), ND_SUCCESS);
    CHECK_ST(nd_connector_close(g2), ND_SUCCESS);

    CHECK_ST(nd_cq_close(cq), ND_SUCCESS);
    CHECK_ST(nd_port_close(port), ND_SUCCESS);
    CHECK_ST(nd_adapter_close(a), ND_SUCCESS);
    puts("connector and listener states ok");
    return 0;
}
