// SPDX-License-Identifier: MIT
/*
 * The methods whose transport work belongs to later issues return ND_NOT_SUPPORTED:
 * the connector and the listener. This test
 * pins the current state; it changes as each piece lands.
 */
#include "t_util.h"

int main(void)
{
    nd_adapter *a = t_open_loopback();
    struct sockaddr_in sin = t_ipv4("127.0.0.1", 0);
    struct sockaddr *sa = (struct sockaddr *)&sin;
    nd_port *port;
    nd_cq *cq;
    nd_srq *srq;
    nd_connector *c = NULL;
    nd_listener *l = NULL;
    nd_qp *qp = NULL;   /* no connector exists to connect one */
    nd_overlapped ov = { 0 };
    uint32_t u = 0, v = 0;

    CHECK_ST(nd_port_create(&port), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_completion_queue(a, port, 16, 0, 0, &cq), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_shared_receive_queue(a, port, 16, 1, 0, 0, 0, &srq), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_connector(a, port, &c), ND_NOT_SUPPORTED);
    CHECK_ST(nd_adapter_create_listener(a, port, &l), ND_NOT_SUPPORTED);
    CHECK(c == NULL && l == NULL);

    CHECK_ST(nd_connector_bind(c, sa, sizeof(sin)), ND_NOT_SUPPORTED);
    CHECK_ST(nd_connector_connect(c, qp, sa, sizeof(sin), 0, 0, NULL, 0, &ov), ND_NOT_SUPPORTED);
    CHECK_ST(nd_connector_complete_connect(c, &ov), ND_NOT_SUPPORTED);
    CHECK_ST(nd_connector_accept(c, qp, 0, 0, NULL, 0, &ov), ND_NOT_SUPPORTED);
    CHECK_ST(nd_connector_reject(c, NULL, 0), ND_NOT_SUPPORTED);
    CHECK_ST(nd_connector_get_read_limits(c, &u, &v), ND_NOT_SUPPORTED);
    CHECK_ST(nd_connector_get_private_data(c, NULL, &u), ND_NOT_SUPPORTED);
    CHECK_ST(nd_connector_get_local_address(c, sa, &u), ND_NOT_SUPPORTED);
    CHECK_ST(nd_connector_get_peer_address(c, sa, &u), ND_NOT_SUPPORTED);
    CHECK_ST(nd_connector_notify_disconnect(c, &ov), ND_NOT_SUPPORTED);
    CHECK_ST(nd_connector_disconnect(c, &ov), ND_NOT_SUPPORTED);
    CHECK_ST(nd_connector_cancel_overlapped_requests(c), ND_NOT_SUPPORTED);
    CHECK_ST(nd_connector_get_overlapped_result(c, &ov, 0), ND_NOT_SUPPORTED);
    CHECK_ST(nd_connector_close(c), ND_NOT_SUPPORTED);

    CHECK_ST(nd_listener_bind(l, sa, sizeof(sin)), ND_NOT_SUPPORTED);
    CHECK_ST(nd_listener_listen(l, 0), ND_NOT_SUPPORTED);
    CHECK_ST(nd_listener_get_local_address(l, sa, &u), ND_NOT_SUPPORTED);
    CHECK_ST(nd_listener_get_connection_request(l, c, &ov), ND_NOT_SUPPORTED);
    CHECK_ST(nd_listener_cancel_overlapped_requests(l), ND_NOT_SUPPORTED);
    CHECK_ST(nd_listener_get_overlapped_result(l, &ov, 0), ND_NOT_SUPPORTED);
    CHECK_ST(nd_listener_close(l), ND_NOT_SUPPORTED);

    CHECK_ST(nd_srq_close(srq), ND_SUCCESS);
    CHECK_ST(nd_cq_close(cq), ND_SUCCESS);
    CHECK_ST(nd_port_close(port), ND_SUCCESS);
    CHECK_ST(nd_adapter_close(a), ND_SUCCESS);
    puts("not-yet-supported methods answer ND_NOT_SUPPORTED");
    return 0;
}
