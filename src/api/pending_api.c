// SPDX-License-Identifier: MIT
/*
 * ND API methods whose transport work is not built yet: the connector and the listener. Each returns ND_NOT_SUPPORTED (tests/test_not_supported.c
 * asserts it); no object of these kinds can exist yet.
 */
#include "../core/core.h"

ND_API nd_status nd_adapter_create_connector(nd_adapter *a, nd_port *port, nd_connector **c)
{
    return nd_adapter_valid(a) ? ND_NOT_SUPPORTED : ND_INVALID_HANDLE;
}

ND_API nd_status nd_adapter_create_listener(nd_adapter *a, nd_port *port, nd_listener **l)
{
    return nd_adapter_valid(a) ? ND_NOT_SUPPORTED : ND_INVALID_HANDLE;
}

ND_API nd_status nd_connector_close(nd_connector *c) { return ND_NOT_SUPPORTED; }
ND_API nd_status nd_connector_bind(nd_connector *c, const struct sockaddr *addr, uint32_t len)
{
    return ND_NOT_SUPPORTED;
}
ND_API nd_status nd_connector_connect(nd_connector *c, nd_qp *qp, const struct sockaddr *dest,
                                      uint32_t dest_len, uint32_t ird, uint32_t ord, const void *pdata,
                                      uint32_t plen, nd_overlapped *ov)
{
    return ND_NOT_SUPPORTED;
}
ND_API nd_status nd_connector_complete_connect(nd_connector *c, nd_overlapped *ov)
{
    return ND_NOT_SUPPORTED;
}
ND_API nd_status nd_connector_accept(nd_connector *c, nd_qp *qp, uint32_t ird, uint32_t ord,
                                     const void *pdata, uint32_t plen, nd_overlapped *ov)
{
    return ND_NOT_SUPPORTED;
}
ND_API nd_status nd_connector_reject(nd_connector *c, const void *pdata, uint32_t plen)
{
    return ND_NOT_SUPPORTED;
}
ND_API nd_status nd_connector_get_read_limits(nd_connector *c, uint32_t *ird, uint32_t *ord)
{
    return ND_NOT_SUPPORTED;
}
ND_API nd_status nd_connector_get_private_data(nd_connector *c, void *buf, uint32_t *len)
{
    return ND_NOT_SUPPORTED;
}
ND_API nd_status nd_connector_get_local_address(nd_connector *c, struct sockaddr *addr, uint32_t *len)
{
    return ND_NOT_SUPPORTED;
}
ND_API nd_status nd_connector_get_peer_address(nd_connector *c, struct sockaddr *addr, uint32_t *len)
{
    return ND_NOT_SUPPORTED;
}
ND_API nd_status nd_connector_notify_disconnect(nd_connector *c, nd_overlapped *ov)
{
    return ND_NOT_SUPPORTED;
}
ND_API nd_status nd_connector_disconnect(nd_connector *c, nd_overlapped *ov)
{
    return ND_NOT_SUPPORTED;
}
ND_API nd_status nd_connector_cancel_overlapped_requests(nd_connector *c)
{
    return ND_NOT_SUPPORTED;
}
ND_API nd_status nd_connector_get_overlapped_result(nd_connector *c, nd_overlapped *ov, int wait)
{
    return ND_NOT_SUPPORTED;
}

ND_API nd_status nd_listener_close(nd_listener *l) { return ND_NOT_SUPPORTED; }
ND_API nd_status nd_listener_bind(nd_listener *l, const struct sockaddr *addr, uint32_t len)
{
    return ND_NOT_SUPPORTED;
}
ND_API nd_status nd_listener_listen(nd_listener *l, uint32_t backlog) { return ND_NOT_SUPPORTED; }
ND_API nd_status nd_listener_get_local_address(nd_listener *l, struct sockaddr *addr, uint32_t *len)
{
    return ND_NOT_SUPPORTED;
}
ND_API nd_status nd_listener_get_connection_request(nd_listener *l, nd_connector *c, nd_overlapped *ov)
{
    return ND_NOT_SUPPORTED;
}
ND_API nd_status nd_listener_cancel_overlapped_requests(nd_listener *l) { return ND_NOT_SUPPORTED; }
ND_API nd_status nd_listener_get_overlapped_result(nd_listener *l, nd_overlapped *ov, int wait)
{
    return ND_NOT_SUPPORTED;
}
