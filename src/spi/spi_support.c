// SPDX-License-Identifier: MIT
/*
 * The interface ids, ndutil's helpers (NdStartup ... NdOpenAdapter) and the provider
 * library's entry points (DllGetClassObject with its class factory).
 */
#define NDSPI_DEFINE_IIDS
#include <ndspi/ndspi.h>
#include "spi_com.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

static uint32_t startups;

SPI_API HRESULT NdStartup(VOID)
{
    __atomic_add_fetch(&startups, 1, __ATOMIC_RELAXED);
    return ND_SUCCESS;
}

SPI_API HRESULT NdCleanup(VOID)
{
    uint32_t n = __atomic_load_n(&startups, __ATOMIC_RELAXED);

    do {
        if (!n)
            return ND_DEVICE_NOT_READY;   /* NdCleanup without NdStartup */
    } while (!__atomic_compare_exchange_n(&startups, &n, n - 1, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    return ND_SUCCESS;
}

SPI_API VOID NdFlushProviders(VOID) {}

static HRESULT size_in(const SIZE_T *len, uint32_t *out)
{
    if (!len)
        return ND_INVALID_PARAMETER_3;
    *out = *len > UINT32_MAX ? UINT32_MAX : (uint32_t)*len;
    return ND_SUCCESS;
}

SPI_API HRESULT NdQueryAddressList(DWORD flags, SOCKET_ADDRESS_LIST *list, SIZE_T *len)
{
    uint32_t size;
    nd_status st = size_in(len, &size);

    if (st != ND_SUCCESS)
        return st;
    if (flags & ND_QUERY_EXCLUDE_NDv2_ADDRESSES) {
        /* netdirect is the only provider and it is an ND v2 one: nothing is left. */
        if (!list || *len < sizeof(INT)) {
            *len = sizeof(SOCKET_ADDRESS_LIST);
            return ND_BUFFER_OVERFLOW;
        }
        list->iAddressCount = 0;
        *len = sizeof(SOCKET_ADDRESS_LIST);
        return ND_SUCCESS;
    }
    st = nd_query_address_list((nd_address_list *)list, &size);
    *len = size;
    return st;
}

static socklen_t family_length(const struct sockaddr *a, SIZE_T len)
{
    if (a->sa_family == AF_INET && len >= sizeof(struct sockaddr_in))
        return sizeof(struct sockaddr_in);
    if (a->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6))
        return sizeof(struct sockaddr_in6);
    return 0;
}

/*
 * The source address the routing table picks for @remote: a connected UDP socket learns
 * it without sending anything.
 */
SPI_API HRESULT NdResolveAddress(const struct sockaddr *remote, SIZE_T remote_len,
                                 struct sockaddr *local, SIZE_T *local_len)
{
    struct sockaddr_storage src;
    socklen_t src_len = sizeof(src), alen;
    int fd, rc;

    if (!remote)
        return ND_INVALID_PARAMETER_1;
    alen = family_length(remote, remote_len);
    if (!alen)
        return remote->sa_family == AF_INET || remote->sa_family == AF_INET6
                   ? ND_INVALID_BUFFER_SIZE : ND_INVALID_ADDRESS;
    if (!local_len)
        return ND_INVALID_PARAMETER_4;
    if (!local || *local_len < alen) {
        *local_len = alen;
        return ND_BUFFER_OVERFLOW;
    }
    fd = socket(remote->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return ND_INSUFFICIENT_RESOURCES;
    {
        struct sockaddr_storage dst;
        memcpy(&dst, remote, alen);
        if (((struct sockaddr_in *)&dst)->sin_port == 0)
            ((struct sockaddr_in *)&dst)->sin_port = htons(9);   /* UDP connect needs a port */
        rc = connect(fd, (struct sockaddr *)&dst, alen);
    }
    if (rc == 0)
        rc = getsockname(fd, (struct sockaddr *)&src, &src_len);
    close(fd);
    if (rc != 0)
        return errno == ENETUNREACH ? ND_NETWORK_UNREACHABLE : ND_INVALID_ADDRESS;
    ((struct sockaddr_in *)&src)->sin_port = 0;   /* sin6_port sits at the same offset */
    memcpy(local, &src, alen);
    *local_len = alen;
    return ND_SUCCESS;
}

SPI_API HRESULT NdCheckAddress(const struct sockaddr *address, SIZE_T len)
{
    uint64_t id;
    nd_status st;

    if (!address)
        return ND_INVALID_PARAMETER_1;
    st = nd_resolve_address(address, len > UINT32_MAX ? UINT32_MAX : (uint32_t)len, &id);
    return st == ND_SUCCESS ? ND_SUCCESS : ND_INVALID_ADDRESS;
}

SPI_API HRESULT NdOpenAdapter(REFIID iid, const struct sockaddr *address, SIZE_T len, VOID **out)
{
    nd_adapter *nd;
    nd_status st;

    if (!out)
        return ND_INVALID_PARAMETER_4;
    *out = NULL;
    if (!iid || !IsEqualIID(iid, &IID_IND2Adapter))
        return E_NOINTERFACE;
    st = nd_open_adapter_by_address(address, len > UINT32_MAX ? UINT32_MAX : (uint32_t)len, &nd);
    return st == ND_SUCCESS ? spi_adapter_wrap(nd, out) : st;
}

SPI_API HRESULT NdOpenV1Adapter(const struct sockaddr *address, SIZE_T len, INDAdapter **out)
{
    (void)address;
    (void)len;
    if (out)
        *out = NULL;
    return ND_NOT_SUPPORTED;
}

/* --- The provider library's class factory ------------------------------------------------- */

static HRESULT factory_query_interface(IClassFactory *This, REFIID riid, void **out)
{
    if (!out)
        return E_POINTER;
    if (riid && (IsEqualIID(riid, &IID_IUnknown) || IsEqualIID(riid, &IID_IClassFactory))) {
        *out = This;
        return S_OK;
    }
    *out = NULL;
    return E_NOINTERFACE;
}

static ULONG factory_add_ref(IClassFactory *This) { (void)This; return 2; }
static ULONG factory_release(IClassFactory *This) { (void)This; return 1; }

static HRESULT factory_create_instance(IClassFactory *This, IUnknown *outer, REFIID riid, void **out)
{
    (void)This;
    if (!out)
        return E_POINTER;
    *out = NULL;
    if (outer)
        return CLASS_E_NOAGGREGATION;
    return spi_provider_get(riid, out);
}

static HRESULT factory_lock_server(IClassFactory *This, BOOL lock)
{
    (void)This;
    (void)lock;
    return S_OK;
}

static const IClassFactoryVtbl factory_vtbl = {
    .QueryInterface = factory_query_interface,
    .AddRef = factory_add_ref,
    .Release = factory_release,
    .CreateInstance = factory_create_instance,
    .LockServer = factory_lock_server,
};

static IClassFactory the_factory = { &factory_vtbl };

SPI_API HRESULT DllGetClassObject(REFCLSID clsid, REFIID iid, void **out)
{
    if (!out)
        return E_POINTER;
    *out = NULL;
    if (!clsid || !IsEqualCLSID(clsid, &CLSID_NetDirectProvider))
        return CLASS_E_CLASSNOTAVAILABLE;
    return factory_query_interface(&the_factory, iid, out);
}

/* The provider and its factory are static; the library can always be unloaded. */
SPI_API HRESULT DllCanUnloadNow(void) { return S_OK; }
