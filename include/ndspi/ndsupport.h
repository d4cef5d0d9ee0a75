/* SPDX-License-Identifier: MIT */
/*
 * ND's helper library (ndutil): find the provider that serves an address and open its
 * adapter. There is one provider here, netdirect, so the helpers call it directly.
 */
#ifndef NDSPI_NDSUPPORT_H
#define NDSPI_NDSUPPORT_H

#include <ndspi/ndspi.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ND_HELPER_API

/* NdStartup / NdCleanup: reference-counted initialisation; ND_SUCCESS. */
HRESULT ND_HELPER_API NdStartup(VOID);
HRESULT ND_HELPER_API NdCleanup(VOID);
/* NdFlushProviders: the provider list never changes here; does nothing. */
VOID ND_HELPER_API NdFlushProviders(VOID);

#define ND_QUERY_EXCLUDE_EMULATOR_ADDRESSES 0x00000001
#define ND_QUERY_EXCLUDE_NDv1_ADDRESSES 0x00000002
#define ND_QUERY_EXCLUDE_NDv2_ADDRESSES 0x00000004

/*
 * NdQueryAddressList: the addresses netdirect serves (none with
 * ND_QUERY_EXCLUDE_NDv2_ADDRESSES). ND_BUFFER_OVERFLOW with *length set for a probe.
 */
HRESULT ND_HELPER_API NdQueryAddressList(DWORD flags, SOCKET_ADDRESS_LIST *list, SIZE_T *length);
/*
 * NdResolveAddress: the local address (port 0) this host would use to reach @remote.
 * ND_INVALID_ADDRESS when no route leads there; ND_BUFFER_OVERFLOW when *local_length
 * is too small (set to the size needed).
 */
HRESULT ND_HELPER_API NdResolveAddress(const struct sockaddr *remote, SIZE_T remote_length,
                                       struct sockaddr *local, SIZE_T *local_length);
/* NdCheckAddress: ND_SUCCESS when an adapter serves the local @address, else ND_INVALID_ADDRESS. */
HRESULT ND_HELPER_API NdCheckAddress(const struct sockaddr *address, SIZE_T length);
/* NdOpenAdapter: the IND2Adapter serving the local @address (@iid IID_IND2Adapter). */
HRESULT ND_HELPER_API NdOpenAdapter(REFIID iid, const struct sockaddr *address, SIZE_T length,
                                    VOID **adapter);
/* NdOpenV1Adapter: ND v1 is not provided; ND_NOT_SUPPORTED. */
HRESULT ND_HELPER_API NdOpenV1Adapter(const struct sockaddr *address, SIZE_T length,
                                      INDAdapter **adapter);

#ifdef __cplusplus
}
#endif
#endif
