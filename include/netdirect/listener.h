/* SPDX-License-Identifier: MIT */
/* IND2Listener. Not yet implemented: every call returns ND_NOT_SUPPORTED. */
#ifndef NETDIRECT_LISTENER_H
#define NETDIRECT_LISTENER_H

#include <netdirect/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* nd_listener_close - Release; pending GetConnectionRequest calls complete ND_CANCELED. */
nd_status nd_listener_close(nd_listener *listener);

/* nd_listener_bind - bind (port 0 assigns one). STATUS_ADDRESS_ALREADY_ASSOCIATED when taken. */
nd_status nd_listener_bind(nd_listener *listener, const struct sockaddr *addr, uint32_t addr_len);

/* nd_listener_listen - start listening; @backlog 0 = no limit. */
nd_status nd_listener_listen(nd_listener *listener, uint32_t backlog);

/* nd_listener_get_local_address - ND_INVALID_DEVICE_STATE when not listening. */
nd_status nd_listener_get_local_address(nd_listener *listener, struct sockaddr *addr, uint32_t *addr_len);

/* nd_listener_get_connection_request - attach the next request to a fresh @connector. ND_PENDING. */
nd_status nd_listener_get_connection_request(nd_listener *listener, nd_connector *connector, nd_overlapped *ov);

/* nd_listener_cancel_overlapped_requests - pending requests complete ND_CANCELED, FIFO. */
nd_status nd_listener_cancel_overlapped_requests(nd_listener *listener);

/* nd_listener_get_overlapped_result - as nd_get_overlapped_result. */
nd_status nd_listener_get_overlapped_result(nd_listener *listener, nd_overlapped *ov, int wait);

#ifdef __cplusplus
}
#endif
#endif
