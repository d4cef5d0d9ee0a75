/* SPDX-License-Identifier: MIT */
/*
 * The Network Direct 2 service provider interface: IND2Provider, IND2Adapter and the
 * objects it creates, as COM interfaces callable from C++ (p->Method(...)) and from C
 * (p->lpVtbl->Method(p, ...)). Method order, parameter types and interface ids are ND's
 * ABI. libnetdirect-spi implements them; the ND v1 interfaces are not provided.
 */
#ifndef NDSPI_NDSPI_H
#define NDSPI_NDSPI_H

#include <ndspi/winsock2.h>
#include <ndspi/unknwn.h>
#include <ndspi/ndstatus.h>
#include <ndspi/nddef.h>

#define NDSPI_OVERLAPPED_METHODS_                                           \
    STDMETHOD(QueryInterface)(THIS_ REFIID riid, void **object) PURE;        \
    STDMETHOD_(ULONG, AddRef)(THIS) PURE;                                    \
    STDMETHOD_(ULONG, Release)(THIS) PURE;                                   \
    STDMETHOD(CancelOverlappedRequests)(THIS) PURE;                          \
    STDMETHOD(GetOverlappedResult)(THIS_ OVERLAPPED *overlapped, BOOL wait) PURE

#define NDSPI_UNKNOWN_METHODS_                                              \
    STDMETHOD(QueryInterface)(THIS_ REFIID riid, void **object) PURE;        \
    STDMETHOD_(ULONG, AddRef)(THIS) PURE;                                    \
    STDMETHOD_(ULONG, Release)(THIS) PURE

#undef INTERFACE
#define INTERFACE IND2Overlapped
DEFINE_GUID(IID_IND2Overlapped, 0xabf72719, 0xb016, 0x4a40, 0xa6, 0xf7, 0x62, 0x27, 0x91, 0xa7, 0x04, 0x4c);
DECLARE_INTERFACE_(IND2Overlapped, IUnknown)
{
    NDSPI_OVERLAPPED_METHODS_;
};
#undef INTERFACE

#define INTERFACE IND2CompletionQueue
DEFINE_GUID(IID_IND2CompletionQueue, 0x20cc445e, 0x64a0, 0x4cbb, 0xaa, 0x75, 0xf6, 0xa7, 0x25, 0x1f, 0xda, 0x9e);
DECLARE_INTERFACE_(IND2CompletionQueue, IND2Overlapped)
{
    NDSPI_OVERLAPPED_METHODS_;
    STDMETHOD(GetNotifyAffinity)(THIS_ USHORT *group, KAFFINITY *affinity) PURE;
    STDMETHOD(Resize)(THIS_ ULONG queue_depth) PURE;
    STDMETHOD(Notify)(THIS_ ULONG type, OVERLAPPED *overlapped) PURE;
    STDMETHOD_(ULONG, GetResults)(THIS_ ND2_RESULT results[], ULONG count) PURE;
};
#undef INTERFACE

#define INTERFACE IND2SharedReceiveQueue
DEFINE_GUID(IID_IND2SharedReceiveQueue, 0xaabd67dc, 0x459a, 0x4db1, 0x82, 0x6b, 0x56, 0xcf, 0xcc, 0x27, 0x88, 0x83);
DECLARE_INTERFACE_(IND2SharedReceiveQueue, IND2Overlapped)
{
    NDSPI_OVERLAPPED_METHODS_;
    STDMETHOD(GetNotifyAffinity)(THIS_ USHORT *group, KAFFINITY *affinity) PURE;
    STDMETHOD(Modify)(THIS_ ULONG queue_depth, ULONG notify_threshold) PURE;
    STDMETHOD(Notify)(THIS_ OVERLAPPED *overlapped) PURE;
    STDMETHOD(Receive)(THIS_ VOID *request_context, const ND2_SGE sge[], ULONG sge_count) PURE;
};
#undef INTERFACE

#define INTERFACE IND2MemoryWindow
DEFINE_GUID(IID_IND2MemoryWindow, 0x070fe1f5, 0x0ab5, 0x4361, 0x88, 0xdb, 0x97, 0x4b, 0xa7, 0x04, 0xd4, 0xb9);
DECLARE_INTERFACE_(IND2MemoryWindow, IUnknown)
{
    NDSPI_UNKNOWN_METHODS_;
    STDMETHOD_(UINT32, GetRemoteToken)(THIS) PURE;
};
#undef INTERFACE

#define INTERFACE IND2MemoryRegion
DEFINE_GUID(IID_IND2MemoryRegion, 0x55dfea2f, 0xbc56, 0x4982, 0x8a, 0x45, 0x03, 0x01, 0xbe, 0x46, 0xc4, 0x13);
DECLARE_INTERFACE_(IND2MemoryRegion, IND2Overlapped)
{
    NDSPI_OVERLAPPED_METHODS_;
    /* Remote rights imply local write (ND_MR_FLAG_ALLOW_REMOTE_WRITE contains it). */
    STDMETHOD(Register)(THIS_ const VOID *buffer, SIZE_T length, ULONG flags,
                        OVERLAPPED *overlapped) PURE;
    STDMETHOD(Deregister)(THIS_ OVERLAPPED *overlapped) PURE;
    STDMETHOD_(UINT32, GetLocalToken)(THIS) PURE;
    STDMETHOD_(UINT32, GetRemoteToken)(THIS) PURE;
};
#undef INTERFACE

#define INTERFACE IND2QueuePair
DEFINE_GUID(IID_IND2QueuePair, 0xeef2f332, 0xb75d, 0x4063, 0xbc, 0xe3, 0x3a, 0x0b, 0xad, 0x2d, 0x02, 0xce);
DECLARE_INTERFACE_(IND2QueuePair, IUnknown)
{
    NDSPI_UNKNOWN_METHODS_;
    STDMETHOD(Flush)(THIS) PURE;
    STDMETHOD(Send)(THIS_ VOID *request_context, const ND2_SGE sge[], ULONG sge_count,
                    ULONG flags) PURE;
    STDMETHOD(Receive)(THIS_ VOID *request_context, const ND2_SGE sge[], ULONG sge_count) PURE;
    /* The window's remote token is IND2MemoryWindow::GetRemoteToken. */
    STDMETHOD(Bind)(THIS_ VOID *request_context, IUnknown *memory_region, IUnknown *memory_window,
                    const VOID *buffer, SIZE_T length, ULONG flags) PURE;
    STDMETHOD(Invalidate)(THIS_ VOID *request_context, IUnknown *memory_window, ULONG flags) PURE;
    STDMETHOD(Read)(THIS_ VOID *request_context, const ND2_SGE sge[], ULONG sge_count,
                    UINT64 remote_address, UINT32 remote_token, ULONG flags) PURE;
    STDMETHOD(Write)(THIS_ VOID *request_context, const ND2_SGE sge[], ULONG sge_count,
                     UINT64 remote_address, UINT32 remote_token, ULONG flags) PURE;
};
#undef INTERFACE

#define INTERFACE IND2Connector
DEFINE_GUID(IID_IND2Connector, 0x7dd615c4, 0x6b4c, 0x4866, 0x95, 0x0c, 0xf3, 0xb1, 0xd2, 0x5a, 0x53, 0x02);
DECLARE_INTERFACE_(IND2Connector, IND2Overlapped)
{
    NDSPI_OVERLAPPED_METHODS_;
    STDMETHOD(Bind)(THIS_ const struct sockaddr *address, ULONG address_length) PURE;
    STDMETHOD(Connect)(THIS_ IUnknown *queue_pair, const struct sockaddr *destination,
                       ULONG destination_length, ULONG inbound_read_limit,
                       ULONG outbound_read_limit, const VOID *private_data,
                       ULONG private_data_length, OVERLAPPED *overlapped) PURE;
    STDMETHOD(CompleteConnect)(THIS_ OVERLAPPED *overlapped) PURE;
    STDMETHOD(Accept)(THIS_ IUnknown *queue_pair, ULONG inbound_read_limit,
                      ULONG outbound_read_limit, const VOID *private_data,
                      ULONG private_data_length, OVERLAPPED *overlapped) PURE;
    STDMETHOD(Reject)(THIS_ const VOID *private_data, ULONG private_data_length) PURE;
    STDMETHOD(GetReadLimits)(THIS_ ULONG *inbound_read_limit, ULONG *outbound_read_limit) PURE;
    STDMETHOD(GetPrivateData)(THIS_ VOID *private_data, ULONG *private_data_length) PURE;
    STDMETHOD(GetLocalAddress)(THIS_ struct sockaddr *address, ULONG *address_length) PURE;
    STDMETHOD(GetPeerAddress)(THIS_ struct sockaddr *address, ULONG *address_length) PURE;
    STDMETHOD(NotifyDisconnect)(THIS_ OVERLAPPED *overlapped) PURE;
    STDMETHOD(Disconnect)(THIS_ OVERLAPPED *overlapped) PURE;
};
#undef INTERFACE

#define INTERFACE IND2Listener
DEFINE_GUID(IID_IND2Listener, 0x65d23d83, 0x3a57, 0x4e02, 0x86, 0xa4, 0x35, 0x01, 0x65, 0xc2, 0xd1, 0x30);
DECLARE_INTERFACE_(IND2Listener, IND2Overlapped)
{
    NDSPI_OVERLAPPED_METHODS_;
    STDMETHOD(Bind)(THIS_ const struct sockaddr *address, ULONG address_length) PURE;
    STDMETHOD(Listen)(THIS_ ULONG backlog) PURE;
    STDMETHOD(GetLocalAddress)(THIS_ struct sockaddr *address, ULONG *address_length) PURE;
    STDMETHOD(GetConnectionRequest)(THIS_ IUnknown *connector, OVERLAPPED *overlapped) PURE;
};
#undef INTERFACE

#define INTERFACE IND2Adapter
DEFINE_GUID(IID_IND2Adapter, 0xd89c798c, 0x4823, 0x4d69, 0x84, 0x6c, 0xdf, 0xdc, 0xcf, 0xf9, 0xe5, 0xf3);
DECLARE_INTERFACE_(IND2Adapter, IUnknown)
{
    NDSPI_UNKNOWN_METHODS_;
    STDMETHOD(CreateOverlappedFile)(THIS_ HANDLE *overlapped_file) PURE;
    STDMETHOD(Query)(THIS_ ND2_ADAPTER_INFO *info, ULONG *info_length) PURE;
    STDMETHOD(QueryAddressList)(THIS_ SOCKET_ADDRESS_LIST *list, ULONG *list_length) PURE;
    STDMETHOD(CreateCompletionQueue)(THIS_ REFIID iid, HANDLE overlapped_file, ULONG queue_depth,
                                     USHORT group, KAFFINITY affinity, VOID **completion_queue) PURE;
    STDMETHOD(CreateMemoryRegion)(THIS_ REFIID iid, HANDLE overlapped_file, VOID **memory_region) PURE;
    STDMETHOD(CreateMemoryWindow)(THIS_ REFIID iid, VOID **memory_window) PURE;
    STDMETHOD(CreateSharedReceiveQueue)(THIS_ REFIID iid, HANDLE overlapped_file, ULONG queue_depth,
                                        ULONG max_request_sge, ULONG notify_threshold,
                                        USHORT group, KAFFINITY affinity,
                                        VOID **shared_receive_queue) PURE;
    STDMETHOD(CreateQueuePair)(THIS_ REFIID iid, IUnknown *receive_completion_queue,
                               IUnknown *initiator_completion_queue, VOID *context,
                               ULONG receive_queue_depth, ULONG initiator_queue_depth,
                               ULONG max_receive_request_sge, ULONG max_initiator_request_sge,
                               ULONG inline_data_size, VOID **queue_pair) PURE;
    STDMETHOD(CreateQueuePairWithSrq)(THIS_ REFIID iid, IUnknown *receive_completion_queue,
                                      IUnknown *initiator_completion_queue,
                                      IUnknown *shared_receive_queue, VOID *context,
                                      ULONG initiator_queue_depth, ULONG max_initiator_request_sge,
                                      ULONG inline_data_size, VOID **queue_pair) PURE;
    STDMETHOD(CreateConnector)(THIS_ REFIID iid, HANDLE overlapped_file, VOID **connector) PURE;
    STDMETHOD(CreateListener)(THIS_ REFIID iid, HANDLE overlapped_file, VOID **listener) PURE;
};
#undef INTERFACE

#define INTERFACE IND2Provider
DEFINE_GUID(IID_IND2Provider, 0x49eae6c1, 0x76c4, 0x46d0, 0x80, 0x03, 0x5c, 0x2e, 0xaa, 0x2c, 0x9a, 0x8e);
DECLARE_INTERFACE_(IND2Provider, IUnknown)
{
    NDSPI_UNKNOWN_METHODS_;
    STDMETHOD(QueryAddressList)(THIS_ SOCKET_ADDRESS_LIST *list, ULONG *list_length) PURE;
    STDMETHOD(ResolveAddress)(THIS_ const struct sockaddr *address, ULONG address_length,
                              UINT64 *adapter_id) PURE;
    STDMETHOD(OpenAdapter)(THIS_ REFIID iid, UINT64 adapter_id, VOID **adapter) PURE;
};
#undef INTERFACE

/*
 * netdirect's provider class. As an ND provider library, libnetdirect-spi exports
 * DllGetClassObject, whose class factory creates IND2Provider for this id.
 */
DEFINE_GUID(CLSID_NetDirectProvider, 0x6e3d2a51, 0x8c4f, 0x4b1a, 0x9d, 0x27, 0x3f, 0x51, 0xc0, 0x8e, 0x7a, 0x14);
STDAPI DllGetClassObject(REFCLSID clsid, REFIID iid, void **object);
STDAPI DllCanUnloadNow(void);

/* ND v1 interfaces are not provided; the name exists for ndsupport.h's NdOpenV1Adapter. */
#ifdef __cplusplus
struct INDAdapter;
#else
typedef struct INDAdapter INDAdapter;
#endif

#endif
