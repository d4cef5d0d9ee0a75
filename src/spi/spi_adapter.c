// SPDX-License-Identifier: MIT
/* IND2Provider and IND2Adapter: the factories, each method one call of the C API. */
#include "spi_com.h"

#include <stdlib.h>

HRESULT spi_query_interface(struct spi_object *o, REFIID riid, void **out, const IID *own,
                            bool overlapped)
{
    if (!out)
        return E_POINTER;
    if (riid && (IsEqualIID(riid, &IID_IUnknown) || IsEqualIID(riid, own) ||
                 (overlapped && IsEqualIID(riid, &IID_IND2Overlapped)))) {
        spi_object_add_ref(o);
        *out = o;
        return S_OK;
    }
    *out = NULL;
    return E_NOINTERFACE;
}

/* --- IND2Provider: one per process, never freed ---------------------------------------- */

static HRESULT provider_query_interface(IND2Provider *This, REFIID riid, void **out)
{
    if (!out)
        return E_POINTER;
    if (riid && (IsEqualIID(riid, &IID_IUnknown) || IsEqualIID(riid, &IID_IND2Provider))) {
        *out = This;
        return S_OK;
    }
    *out = NULL;
    return E_NOINTERFACE;
}

static ULONG provider_add_ref(IND2Provider *This) { (void)This; return 2; }
static ULONG provider_release(IND2Provider *This) { (void)This; return 1; }

static HRESULT provider_query_address_list(IND2Provider *This, SOCKET_ADDRESS_LIST *list, ULONG *len)
{
    (void)This;
    return nd_query_address_list((nd_address_list *)list, len);
}

static HRESULT provider_resolve_address(IND2Provider *This, const struct sockaddr *addr, ULONG len,
                                        UINT64 *adapter_id)
{
    (void)This;
    if (!adapter_id)
        return ND_INVALID_PARAMETER_3;
    return nd_resolve_address(addr, len, adapter_id);
}

static HRESULT provider_open_adapter(IND2Provider *This, REFIID iid, UINT64 adapter_id, VOID **out)
{
    nd_adapter *nd;
    nd_status st;

    (void)This;
    if (!out)
        return ND_INVALID_PARAMETER_3;
    *out = NULL;
    if (!spi_iid_is(iid, &IID_IND2Adapter))
        return E_NOINTERFACE;
    st = nd_open_adapter(adapter_id, &nd);
    return st == ND_SUCCESS ? spi_adapter_wrap(nd, out) : st;
}

static const IND2ProviderVtbl provider_vtbl = {
    .QueryInterface = provider_query_interface,
    .AddRef = provider_add_ref,
    .Release = provider_release,
    .QueryAddressList = provider_query_address_list,
    .ResolveAddress = provider_resolve_address,
    .OpenAdapter = provider_open_adapter,
};

static IND2Provider the_provider = { &provider_vtbl };

HRESULT spi_provider_get(REFIID iid, VOID **out)
{
    if (!out)
        return E_POINTER;
    *out = NULL;
    if (!iid || (!IsEqualIID(iid, &IID_IND2Provider) && !IsEqualIID(iid, &IID_IUnknown)))
        return E_NOINTERFACE;
    *out = &the_provider;
    return S_OK;
}

/* --- IND2Adapter ------------------------------------------------------------------------ */

struct spi_adapter {
    struct spi_object obj;
    nd_adapter *nd;
};

static struct spi_adapter *adapter_of(IND2Adapter *This)
{
    return (struct spi_adapter *)This;
}

static nd_status adapter_close(struct spi_object *o)
{
    struct spi_adapter *a = (struct spi_adapter *)o;
    nd_status st = nd_adapter_close(a->nd);

    if (st != ND_DEVICE_BUSY)
        free(a);
    return st;
}

SPI_UNKNOWN_METHODS(adapter, IND2Adapter, IID_IND2Adapter, false)

static HRESULT adapter_create_overlapped_file(IND2Adapter *This, HANDLE *out)
{
    struct spi_file *f;
    nd_port *port;
    nd_status st;

    if (!out)
        return ND_INVALID_PARAMETER_1;
    *out = NULL;
    st = nd_adapter_create_overlapped_file(adapter_of(This)->nd, &port);
    if (st != ND_SUCCESS)
        return st;
    f = spi_file_create(port);
    if (!f) {
        nd_port_close(port);
        return ND_NO_MEMORY;
    }
    *out = f;
    return ND_SUCCESS;
}

static HRESULT adapter_query(IND2Adapter *This, ND2_ADAPTER_INFO *info, ULONG *len)
{
    return nd_adapter_query(adapter_of(This)->nd, (nd_adapter_info *)info, len);
}

static HRESULT adapter_query_address_list(IND2Adapter *This, SOCKET_ADDRESS_LIST *list, ULONG *len)
{
    return nd_adapter_query_address_list(adapter_of(This)->nd, (nd_address_list *)list, len);
}

/* The port of an overlapped file handle; NULL (which the C API rejects) for anything else. */
static nd_port *port_of(HANDLE file)
{
    struct spi_file *f = spi_file_from_handle(file);

    return f ? f->port : NULL;
}

static HRESULT adapter_create_completion_queue(IND2Adapter *This, REFIID iid, HANDLE file, ULONG depth,
                                               USHORT group, KAFFINITY affinity, VOID **out)
{
    if (!out)
        return ND_INVALID_PARAMETER_6;
    *out = NULL;
    if (!spi_iid_is(iid, &IID_IND2CompletionQueue))
        return E_NOINTERFACE;
    if (!port_of(file))
        return ND_INVALID_PARAMETER_2;
    return spi_cq_create(adapter_of(This)->nd, spi_file_from_handle(file), depth, group, affinity, out);
}

static HRESULT adapter_create_memory_region(IND2Adapter *This, REFIID iid, HANDLE file, VOID **out)
{
    if (!out)
        return ND_INVALID_PARAMETER_3;
    *out = NULL;
    if (!spi_iid_is(iid, &IID_IND2MemoryRegion))
        return E_NOINTERFACE;
    if (!port_of(file))
        return ND_INVALID_PARAMETER_2;
    return spi_mr_create(adapter_of(This)->nd, spi_file_from_handle(file), out);
}

static HRESULT adapter_create_memory_window(IND2Adapter *This, REFIID iid, VOID **out)
{
    if (!out)
        return ND_INVALID_PARAMETER_2;
    *out = NULL;
    if (!spi_iid_is(iid, &IID_IND2MemoryWindow))
        return E_NOINTERFACE;
    return spi_mw_create(adapter_of(This)->nd, out);
}

static HRESULT adapter_create_shared_receive_queue(IND2Adapter *This, REFIID iid, HANDLE file,
                                                   ULONG depth, ULONG max_sge, ULONG threshold,
                                                   USHORT group, KAFFINITY affinity, VOID **out)
{
    if (!out)
        return ND_INVALID_PARAMETER_8;
    *out = NULL;
    if (!spi_iid_is(iid, &IID_IND2SharedReceiveQueue))
        return E_NOINTERFACE;
    if (!port_of(file))
        return ND_INVALID_PARAMETER_2;
    return spi_srq_create(adapter_of(This)->nd, spi_file_from_handle(file), depth, max_sge,
                          threshold, group, affinity, out);
}

static HRESULT adapter_create_queue_pair(IND2Adapter *This, REFIID iid, IUnknown *rcq, IUnknown *icq,
                                         VOID *context, ULONG rq_depth, ULONG iq_depth, ULONG rsge,
                                         ULONG isge, ULONG inline_size, VOID **out)
{
    if (!out)
        return ND_INVALID_PARAMETER_10;
    *out = NULL;
    if (!spi_iid_is(iid, &IID_IND2QueuePair))
        return E_NOINTERFACE;
    return spi_qp_create(adapter_of(This)->nd, rcq, icq, NULL, context, rq_depth, iq_depth, rsge,
                         isge, inline_size, out);
}

static HRESULT adapter_create_queue_pair_with_srq(IND2Adapter *This, REFIID iid, IUnknown *rcq,
                                                  IUnknown *icq, IUnknown *srq, VOID *context,
                                                  ULONG iq_depth, ULONG isge, ULONG inline_size,
                                                  VOID **out)
{
    if (!out)
        return ND_INVALID_PARAMETER_9;
    *out = NULL;
    if (!spi_iid_is(iid, &IID_IND2QueuePair))
        return E_NOINTERFACE;
    if (!srq)
        return ND_INVALID_PARAMETER_4;
    return spi_qp_create(adapter_of(This)->nd, rcq, icq, srq, context, 0, iq_depth, 0, isge,
                         inline_size, out);
}

static HRESULT adapter_create_connector(IND2Adapter *This, REFIID iid, HANDLE file, VOID **out)
{
    if (!out)
        return ND_INVALID_PARAMETER_3;
    *out = NULL;
    if (!spi_iid_is(iid, &IID_IND2Connector))
        return E_NOINTERFACE;
    if (!port_of(file))
        return ND_INVALID_PARAMETER_2;
    return spi_connector_create(adapter_of(This)->nd, spi_file_from_handle(file), out);
}

static HRESULT adapter_create_listener(IND2Adapter *This, REFIID iid, HANDLE file, VOID **out)
{
    if (!out)
        return ND_INVALID_PARAMETER_3;
    *out = NULL;
    if (!spi_iid_is(iid, &IID_IND2Listener))
        return E_NOINTERFACE;
    if (!port_of(file))
        return ND_INVALID_PARAMETER_2;
    return spi_listener_create(adapter_of(This)->nd, spi_file_from_handle(file), out);
}

static const IND2AdapterVtbl adapter_vtbl = {
    SPI_UNKNOWN_VTBL(adapter),
    .CreateOverlappedFile = adapter_create_overlapped_file,
    .Query = adapter_query,
    .QueryAddressList = adapter_query_address_list,
    .CreateCompletionQueue = adapter_create_completion_queue,
    .CreateMemoryRegion = adapter_create_memory_region,
    .CreateMemoryWindow = adapter_create_memory_window,
    .CreateSharedReceiveQueue = adapter_create_shared_receive_queue,
    .CreateQueuePair = adapter_create_queue_pair,
    .CreateQueuePairWithSrq = adapter_create_queue_pair_with_srq,
    .CreateConnector = adapter_create_connector,
    .CreateListener = adapter_create_listener,
};

HRESULT spi_adapter_wrap(nd_adapter *nd, VOID **out)
{
    struct spi_adapter *a = calloc(1, sizeof(*a));

    if (!a) {
        nd_adapter_close(nd);
        return ND_NO_MEMORY;
    }
    spi_object_init(&a->obj, &adapter_vtbl, adapter_close);
    a->nd = nd;
    *out = a;
    return ND_SUCCESS;
}
