// SPDX-License-Identifier: MIT
/* ND's entry points for connectors and listeners: the core's door in NTSTATUS. */
#include "nd.h"

ND_API nd_status nd_adapter_create_connector(nd_adapter *a, nd_port *port, nd_connector **out)
{
    return nd_ntstatus(ndc_adapter_create_connector(a, port, out));
}

ND_API nd_status nd_connector_bind(nd_connector *c, const struct sockaddr *addr, uint32_t len)
{
    return nd_ntstatus(ndc_connector_bind(c, addr, len));
}

ND_API nd_status nd_connector_connect(nd_connector *c, nd_qp *qp, const struct sockaddr *dest,
                                      uint32_t dest_len, uint32_t ird, uint32_t ord, const void *pdata,
                                      uint32_t plen, nd_overlapped *ov)
{
    return nd_ntstatus(ndc_connector_connect(c, qp, dest, dest_len, ird, ord, pdata, plen, ov));
}

ND_API nd_status nd_connector_complete_connect(nd_connector *c, nd_overlapped *ov)
{
    return nd_ntstatus(ndc_connector_complete_connect(c, ov));
}

ND_API nd_status nd_connector_accept(nd_connector *c, nd_qp *qp, uint32_t ird, uint32_t ord,
                                     const void *pdata, uint32_t plen, nd_overlapped *ov)
{
    return nd_ntstatus(ndc_connector_accept(c, qp, ird, ord, pdata, plen, ov));
}

ND_API nd_status nd_connector_reject(nd_connector *c, const void *pdata, uint32_t plen)
{
    return nd_ntstatus(ndc_connector_reject(c, pdata, plen));
}

ND_API nd_status nd_connector_notify_disconnect(nd_connector *c, nd_overlapped *ov)
{
    return nd_ntstatus(ndc_connector_notify_disconnect(c, ov));
}

ND_API nd_status nd_connector_disconnect(nd_connector *c, nd_overlapped *ov)
{
    return nd_ntstatus(ndc_connector_disconnect(c, ov));
}

ND_API nd_status nd_connector_cancel_overlapped_requests(nd_connector *c)
{
    return nd_ntstatus(ndc_connector_cancel_overlapped_requests(c));
}

ND_API nd_status nd_connector_get_overlapped_result(nd_connector *c, nd_overlapped *ov, int wait)
{
    return nd_ntstatus(ndc_connector_get_overlapped_result(c, ov, wait));
}

ND_API nd_status nd_connector_close(nd_connector *c)
{
    return nd_ntstatus(ndc_connector_close(c));
}

ND_API nd_status nd_connector_get_read_limits(nd_connector *c, uint32_t *inbound, uint32_t *outbound)
{
    return nd_ntstatus(ndc_connector_get_read_limits(c, inbound, outbound));
}

ND_API nd_status nd_connector_get_private_data(nd_connector *c, void *buf, uint32_t *len)
{
    return nd_ntstatus(ndc_connector_get_private_data(c, buf, len));
}

ND_API nd_status nd_connector_get_local_address(nd_connector *c, struct sockaddr *addr, uint32_t *len)
{
    return nd_ntstatus(ndc_connector_get_local_address(c, addr, len));
}

ND_API nd_status nd_connector_get_peer_address(nd_connector *c, struct sockaddr *addr, uint32_t *len)
{
    return nd_ntstatus(ndc_connector_get_peer_address(c, addr, len));
}

ND_API nd_status nd_adapter_create_listener(nd_adapter *a, nd_port *port, nd_listener **out)
{
    return nd_ntstatus(ndc_adapter_create_listener(a, port, out));
}

ND_API nd_status nd_listener_bind(nd_listener *l, const struct sockaddr *addr, uint32_t len)
{
    return nd_ntstatus(ndc_listener_bind(l, addr, len));
}

ND_API nd_status nd_listener_listen(nd_listener *l, uint32_t backlog)
{
    return nd_ntstatus(ndc_listener_listen(l, backlog));
}

ND_API nd_status nd_listener_get_local_address(nd_listener *l, struct sockaddr *addr, uint32_t *len)
{
    return nd_ntstatus(ndc_listener_get_local_address(l, addr, len));
}

ND_API nd_status nd_listener_get_connection_request(nd_listener *l, nd_connector *c, nd_overlapped *ov)
{
    return nd_ntstatus(ndc_listener_get_connection_request(l, c, ov));
}

ND_API nd_status nd_listener_cancel_overlapped_requests(nd_listener *l)
{
    return nd_ntstatus(ndc_listener_cancel_overlapped_requests(l));
}

ND_API nd_status nd_listener_get_overlapped_result(nd_listener *l, nd_overlapped *ov, int wait)
{
    return nd_ntstatus(ndc_listener_get_overlapped_result(l, ov, wait));
}

ND_API nd_status nd_listener_close(nd_listener *l)
{
    return nd_ntstatus(ndc_listener_close(l));
}
