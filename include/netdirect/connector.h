/* SPDX-License-Identifier: MIT */
/* IND2Connector: one connection's life. */
#ifndef NETDIRECT_CONNECTOR_H
#define NETDIRECT_CONNECTOR_H

#include <netdirect/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * nd_connector_close - Release; a connected connector disconnects implicitly.
 * ND_DEVICE_BUSY while a listener's GetConnectionRequest is pending on it: cancel that
 * request (nd_listener_cancel_overlapped_requests) or let it complete first.
 */
nd_status nd_connector_close(nd_connector *connector);

/*
 * nd_connector_bind - Bind the local address (port 0 picks an ephemeral port).
 * Returns ND_SUCCESS; STATUS_ADDRESS_ALREADY_ASSOCIATED when already bound;
 * ND_SHARING_VIOLATION (address in use); ND_TOO_MANY_ADDRESSES (no port left);
 * ND_INVALID_ADDRESS (not an address of this adapter).
 */
nd_status nd_connector_bind(nd_connector *connector, const struct sockaddr *addr, uint32_t addr_len);

/*
 * nd_connector_connect - Connect @qp to @dest, offering read limits (clamped) and private
 * data (at most max_caller_data bytes, else ND_INVALID_BUFFER_SIZE). Completes when the
 * peer accepts; then call nd_connector_complete_connect or nd_connector_reject.
 * Returns ND_PENDING; errors ND_CONNECTION_ACTIVE, STATUS_ADDRESS_NOT_ASSOCIATED,
 * STATUS_BAD_NETWORK_NAME; completion statuses ND_CONNECTION_REFUSED, ND_IO_TIMEOUT,
 * ND_NETWORK_UNREACHABLE, ND_HOST_UNREACHABLE (all retryable), ND_CANCELED.
 */
nd_status nd_connector_connect(nd_connector *connector, nd_qp *qp, const struct sockaddr *dest,
                               uint32_t dest_len, uint32_t inbound_read_limit,
                               uint32_t outbound_read_limit, const void *private_data,
                               uint32_t private_data_len, nd_overlapped *ov);

/* nd_connector_complete_connect - the active side's last step. ND_PENDING/ND_SUCCESS; ND_CONNECTION_INVALID. */
nd_status nd_connector_complete_connect(nd_connector *connector, nd_overlapped *ov);

/*
 * nd_connector_accept - the passive side accepts with @qp; completes when the connection
 * is established. ND_CONNECTION_ACTIVE, ND_CONNECTION_ABORTED, ND_INVALID_BUFFER_SIZE,
 * ND_IO_TIMEOUT, ND_CONNECTION_REFUSED.
 */
nd_status nd_connector_accept(nd_connector *connector, nd_qp *qp, uint32_t inbound_read_limit,
                              uint32_t outbound_read_limit, const void *private_data,
                              uint32_t private_data_len, nd_overlapped *ov);

/* nd_connector_reject - synchronous reject with private data. ND_CONNECTION_ABORTED, ND_INVALID_BUFFER_SIZE. */
nd_status nd_connector_reject(nd_connector *connector, const void *private_data, uint32_t private_data_len);

/* nd_connector_get_read_limits - the peer's limits from our point of view, clamped. */
nd_status nd_connector_get_read_limits(nd_connector *connector, uint32_t *inbound_read_limit,
                                       uint32_t *outbound_read_limit);

/* nd_connector_get_private_data - the peer's private data; ND_BUFFER_OVERFLOW with size for a probe. */
nd_status nd_connector_get_private_data(nd_connector *connector, void *buf, uint32_t *len);

/* nd_connector_get_local_address - ND_BUFFER_OVERFLOW / ND_CONNECTION_INVALID. */
nd_status nd_connector_get_local_address(nd_connector *connector, struct sockaddr *addr, uint32_t *addr_len);

/* nd_connector_get_peer_address - connected only. */
nd_status nd_connector_get_peer_address(nd_connector *connector, struct sockaddr *addr, uint32_t *addr_len);

/* nd_connector_notify_disconnect - completes when the connection is torn down. */
nd_status nd_connector_notify_disconnect(nd_connector *connector, nd_overlapped *ov);

/* nd_connector_disconnect - graceful teardown; flushes the QP on both sides. */
nd_status nd_connector_disconnect(nd_connector *connector, nd_overlapped *ov);

/* nd_connector_cancel_overlapped_requests - pending requests complete ND_CANCELED, FIFO. */
nd_status nd_connector_cancel_overlapped_requests(nd_connector *connector);

/* nd_connector_get_overlapped_result - as nd_get_overlapped_result. */
nd_status nd_connector_get_overlapped_result(nd_connector *connector, nd_overlapped *ov, int wait);

#ifdef __cplusplus
}
#endif
#endif
