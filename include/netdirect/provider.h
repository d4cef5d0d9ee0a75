/* SPDX-License-Identifier: MIT */
/* IND2Provider: address discovery and adapter opening (the provider is a singleton). */
#ifndef NETDIRECT_PROVIDER_H
#define NETDIRECT_PROVIDER_H

#include <netdirect/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * nd_query_address_list - IND2Provider::QueryAddressList: every local IPv4/IPv6 address
 * served by some adapter (every address of an interface that is up, loopback included).
 * @list: output buffer, may be NULL when *size is 0 (size probe).
 * @size: in: bytes at @list; out: bytes needed (always written).
 * Returns ND_SUCCESS; ND_BUFFER_OVERFLOW with *size set when @list is NULL or too small
 * (the buffer is then untouched); ND_INVALID_PARAMETER_2 for a NULL @size;
 * ND_NO_MEMORY / ND_INSUFFICIENT_RESOURCES. The list may change between calls.
 */
nd_status nd_query_address_list(nd_address_list *list, uint32_t *size);

/*
 * nd_resolve_address - IND2Provider::ResolveAddress: the adapter that serves a local
 * address (the port is ignored). Several addresses map to one adapter.
 * Returns ND_SUCCESS; ND_INVALID_ADDRESS when no interface of this host has the
 * address; ND_INVALID_PARAMETER_1 for a NULL address or a family other than AF_INET /
 * AF_INET6; ND_INVALID_BUFFER_SIZE when @addr_len is too short for the family.
 */
nd_status nd_resolve_address(const struct sockaddr *addr, uint32_t addr_len, uint64_t *adapter_id);

/*
 * nd_open_adapter - IND2Provider::OpenAdapter. Each call opens a new adapter instance
 * (its own protection domain). Returns ND_SUCCESS; ND_INVALID_PARAMETER for an id no
 * adapter has; ND_NO_MEMORY / ND_INSUFFICIENT_RESOURCES.
 */
nd_status nd_open_adapter(uint64_t adapter_id, nd_adapter **adapter);

/*
 * nd_open_adapter_by_address - ndutil's NdOpenAdapter: nd_resolve_address followed by
 * nd_open_adapter. Returns the statuses of those two calls.
 */
nd_status nd_open_adapter_by_address(const struct sockaddr *addr, uint32_t addr_len,
                                     nd_adapter **adapter);

/* The library version, "major.minor.patch". */
const char *nd_version_string(void);

#ifdef __cplusplus
}
#endif
#endif
