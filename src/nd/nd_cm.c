// SPDX-License-Identifier: MIT
/* ND's entry points for connectors and listeners: the core's door in NTSTATUS. */
#include "nd.h"

ND_ENTRY(adapter_create_connector, (nd_adapter *a, nd_port *port, nd_connector **out), (a, port, out))

ND_ENTRY(connector_bind, (nd_connector *c, const struct sockaddr *addr, uint32_t len), (c, addr, len))

ND_ENTRY(connector_connect,
         (nd_connector *c, nd_qp *qp, const struct sockaddr *dest, uint32_t dest_len, uint32_t ird,
          uint32_t ord, const void *pdata, uint32_t plen, nd_overlapped *ov),
         (c, qp, dest, dest_len, ird, ord, pdata, plen, ov))

ND_ENTRY(connector_complete_connect, (nd_connector *c, nd_overlapped *ov), (c, ov))

ND_ENTRY(connector_accept,
         (nd_connector *c, nd_qp *qp, uint32_t ird, uint32_t ord, const void *pdata, uint32_t plen,
          nd_overlapped *ov),
         (c, qp, ird, ord, pdata, plen, ov))

ND_ENTRY(connector_reject, (nd_connector *c, const void *pdata, uint32_t plen), (c, pdata, plen))

ND_ENTRY(connector_notify_disconnect, (nd_connector *c, nd_overlapped *ov), (c, ov))

ND_ENTRY(connector_disconnect, (nd_connector *c, nd_overlapped *ov), (c, ov))

ND_ENTRY(connector_cancel_overlapped_requests, (nd_connector *c), (c))

ND_ENTRY(connector_get_overlapped_result, (nd_connector *c, nd_overlapped *ov, int wait), (c, ov, wait))

ND_ENTRY(connector_close, (nd_connector *c), (c))

ND_ENTRY(connector_get_read_limits, (nd_connector *c, uint32_t *inbound, uint32_t *outbound),
         (c, inbound, outbound))

ND_ENTRY(connector_get_private_data, (nd_connector *c, void *buf, uint32_t *len), (c, buf, len))

ND_ENTRY(connector_get_local_address, (nd_connector *c, struct sockaddr *addr, uint32_t *len),
         (c, addr, len))

ND_ENTRY(connector_get_peer_address, (nd_connector *c, struct sockaddr *addr, uint32_t *len), (c, addr, len))

ND_ENTRY(adapter_create_listener, (nd_adapter *a, nd_port *port, nd_listener **out), (a, port, out))

ND_ENTRY(listener_bind, (nd_listener *l, const struct sockaddr *addr, uint32_t len), (l, addr, len))

ND_ENTRY(listener_listen, (nd_listener *l, uint32_t backlog), (l, backlog))

ND_ENTRY(listener_get_local_address, (nd_listener *l, struct sockaddr *addr, uint32_t *len), (l, addr, len))

ND_ENTRY(listener_get_connection_request, (nd_listener *l, nd_connector *c, nd_overlapped *ov), (l, c, ov))

ND_ENTRY(listener_cancel_overlapped_requests, (nd_listener *l), (l))

ND_ENTRY(listener_get_overlapped_result, (nd_listener *l, nd_overlapped *ov, int wait), (l, ov, wait))

ND_ENTRY(listener_close, (nd_listener *l), (l))
