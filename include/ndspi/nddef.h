/* SPDX-License-Identifier: MIT */
/* ND2's structures with their Windows names; the flag values are netdirect's (the same). */
#ifndef NDSPI_NDDEF_H
#define NDSPI_NDDEF_H

#include <ndspi/win32.h>
#include <netdirect/types.h>

#ifndef NDVER
#define NDVER ND_VERSION_2
#endif

typedef struct _ND2_ADAPTER_INFO {
    ULONG InfoVersion;
    UINT16 VendorId;
    UINT16 DeviceId;
    UINT64 AdapterId;
    SIZE_T MaxRegistrationSize;
    SIZE_T MaxWindowSize;
    ULONG MaxInitiatorSge;
    ULONG MaxReceiveSge;
    ULONG MaxReadSge;
    ULONG MaxTransferLength;
    ULONG MaxInlineDataSize;
    ULONG MaxInboundReadLimit;
    ULONG MaxOutboundReadLimit;
    ULONG MaxReceiveQueueDepth;
    ULONG MaxInitiatorQueueDepth;
    ULONG MaxSharedReceiveQueueDepth;
    ULONG MaxCompletionQueueDepth;
    ULONG InlineRequestThreshold;
    ULONG LargeRequestThreshold;
    ULONG MaxCallerData;
    ULONG MaxCalleeData;
    ULONG AdapterFlags;
} ND2_ADAPTER_INFO;

typedef enum _ND2_REQUEST_TYPE {
    Nd2RequestTypeReceive,
    Nd2RequestTypeSend,
    Nd2RequestTypeBind,
    Nd2RequestTypeInvalidate,
    Nd2RequestTypeRead,
    Nd2RequestTypeWrite
} ND2_REQUEST_TYPE;

typedef struct _ND2_RESULT {
    HRESULT Status;
    ULONG BytesTransferred;
    VOID *QueuePairContext;
    VOID *RequestContext;
    ND2_REQUEST_TYPE RequestType;
} ND2_RESULT;

typedef struct _ND2_SGE {
    VOID *Buffer;
    ULONG BufferLength;
    UINT32 MemoryRegionToken;
} ND2_SGE;

/* The library hands these to the C API unconverted. */
#ifdef __cplusplus
#define NDSPI_ASSERT_ static_assert
#else
#define NDSPI_ASSERT_ _Static_assert
#endif
NDSPI_ASSERT_(sizeof(ND2_ADAPTER_INFO) == sizeof(nd_adapter_info), "ND2_ADAPTER_INFO layout");
NDSPI_ASSERT_(sizeof(ND2_RESULT) == sizeof(nd_result), "ND2_RESULT layout");
NDSPI_ASSERT_(offsetof(ND2_RESULT, RequestType) == offsetof(nd_result, request_type), "ND2_RESULT layout");
NDSPI_ASSERT_(sizeof(ND2_SGE) == sizeof(nd_sge), "ND2_SGE layout");
NDSPI_ASSERT_(offsetof(ND2_SGE, MemoryRegionToken) == offsetof(nd_sge, memory_region_token), "ND2_SGE layout");
#undef NDSPI_ASSERT_

#endif
