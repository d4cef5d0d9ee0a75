/* SPDX-License-Identifier: MIT */
/* Handles, structures, flags and enums of ND2 (nddef.h), with ND's widths on Linux. */
#ifndef NETDIRECT_TYPES_H
#define NETDIRECT_TYPES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <netdirect/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque handles, one per ND2 interface. */
typedef struct nd_adapter nd_adapter;      /* IND2Adapter */
typedef struct nd_port nd_port;            /* overlapped file + I/O completion port */
typedef struct nd_cq nd_cq;                /* IND2CompletionQueue */
typedef struct nd_srq nd_srq;              /* IND2SharedReceiveQueue */
typedef struct nd_mr nd_mr;                /* IND2MemoryRegion */
typedef struct nd_mw nd_mw;                /* IND2MemoryWindow */
typedef struct nd_qp nd_qp;                /* IND2QueuePair */
typedef struct nd_connector nd_connector;  /* IND2Connector */
typedef struct nd_listener nd_listener;    /* IND2Listener */

#define ND_VERSION_1 0x1u
#define ND_VERSION_2 0x20000u

/* ND2_ADAPTER_INFO: field order and widths as in nddef.h (ULONG = uint32_t, SIZE_T = size_t). */
typedef struct nd_adapter_info {
    uint32_t info_version;                /* in: ND_VERSION_2 (ND_VERSION_1 accepted) */
    uint16_t vendor_id;
    uint16_t device_id;
    uint64_t adapter_id;
    size_t max_registration_size;         /* bytes in one nd_mr_register */
    size_t max_window_size;               /* bytes in one window bind */
    uint32_t max_initiator_sge;           /* SGEs per Send/Write */
    uint32_t max_receive_sge;             /* SGEs per Receive */
    uint32_t max_read_sge;                /* SGEs per Read */
    uint32_t max_transfer_length;         /* bytes per request, all SGEs */
    uint32_t max_inline_data_size;        /* inline bytes per request */
    uint32_t max_inbound_read_limit;      /* IRD */
    uint32_t max_outbound_read_limit;     /* ORD */
    uint32_t max_receive_queue_depth;
    uint32_t max_initiator_queue_depth;   /* Send+Bind+Invalidate+Read+Write */
    uint32_t max_shared_receive_queue_depth; /* 0 = no SRQ */
    uint32_t max_completion_queue_depth;
    uint32_t inline_request_threshold;    /* below this, ND_OP_FLAG_INLINE pays */
    uint32_t large_request_threshold;     /* above this, Read/Write beat Send */
    uint32_t max_caller_data;             /* private data bytes in Connect */
    uint32_t max_callee_data;             /* private data bytes in Accept/Reject */
    uint32_t adapter_flags;               /* ND_ADAPTER_FLAG_* */
} nd_adapter_info;

#define ND_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED            0x00000001u
#define ND_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED 0x00000004u
#define ND_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED            0x00000008u
#define ND_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED               0x00000100u
#define ND_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED    0x00010000u

/* CQ notification types (nd_cq_notify). */
#define ND_CQ_NOTIFY_ERRORS    0u
#define ND_CQ_NOTIFY_ANY       1u
#define ND_CQ_NOTIFY_SOLICITED 2u

/* Memory region flags (nd_mr_register). ALLOW_REMOTE_WRITE contains LOCAL_WRITE: test with &. */
#define ND_MR_FLAG_ALLOW_LOCAL_WRITE   0x00000001u
#define ND_MR_FLAG_ALLOW_REMOTE_READ   0x00000002u
#define ND_MR_FLAG_ALLOW_REMOTE_WRITE  0x00000005u
#define ND_MR_FLAG_RDMA_READ_SINK      0x00000008u
#define ND_MR_FLAG_DO_NOT_SECURE_VM    0x80000000u

/* Per-request flags (queue pair operations). */
#define ND_OP_FLAG_SILENT_SUCCESS          0x00000001u
#define ND_OP_FLAG_READ_FENCE              0x00000002u
#define ND_OP_FLAG_SEND_AND_SOLICIT_EVENT  0x00000004u
#define ND_OP_FLAG_ALLOW_READ              0x00000008u
#define ND_OP_FLAG_ALLOW_WRITE             0x00000010u
#define ND_OP_FLAG_INLINE                  0x00000020u

/* ND2_REQUEST_TYPE */
typedef enum nd_request_type {
    ND_REQUEST_TYPE_RECEIVE = 0,
    ND_REQUEST_TYPE_SEND = 1,
    ND_REQUEST_TYPE_BIND = 2,
    ND_REQUEST_TYPE_INVALIDATE = 3,
    ND_REQUEST_TYPE_READ = 4,
    ND_REQUEST_TYPE_WRITE = 5
} nd_request_type;

/* ND2_RESULT. Every field is filled for error and flush completions too. */
typedef struct nd_result {
    nd_status status;
    uint32_t bytes_transferred;     /* meaningful for receives */
    void *qp_context;               /* the context given at QP creation */
    void *request_context;          /* the context given when the request was posted */
    nd_request_type request_type;
} nd_result;

/* ND2_SGE: the layout of struct ibv_sge (u64 address, u32 length, u32 key). */
typedef struct nd_sge {
    void *buffer;
    uint32_t buffer_length;
    uint32_t memory_region_token;   /* nd_mr_get_local_token() */
} nd_sge;

#ifndef __cplusplus
_Static_assert(sizeof(nd_sge) == 16, "nd_sge must have the layout of struct ibv_sge");
_Static_assert(offsetof(nd_sge, buffer_length) == 8, "nd_sge must have the layout of struct ibv_sge");
_Static_assert(offsetof(nd_sge, memory_region_token) == 12, "nd_sge must have the layout of struct ibv_sge");
#else
static_assert(sizeof(nd_sge) == 16, "nd_sge must have the layout of struct ibv_sge");
static_assert(offsetof(nd_sge, buffer_length) == 8, "nd_sge must have the layout of struct ibv_sge");
static_assert(offsetof(nd_sge, memory_region_token) == 12, "nd_sge must have the layout of struct ibv_sge");
#endif

/* SOCKET_ADDRESS / SOCKET_ADDRESS_LIST: the pointers point into the same buffer. */
typedef struct nd_socket_address {
    struct sockaddr *sockaddr;
    int32_t sockaddr_length;
} nd_socket_address;

typedef struct nd_address_list {
    int32_t address_count;
    nd_socket_address address[1];  /* address_count entries; sockaddrs follow */
} nd_address_list;

/*
 * nd_overlapped - ND's OVERLAPPED, owned by the caller. The library owns it from the
 * call that returns ND_PENDING until the completion is delivered (on the port, or
 * through nd_get_overlapped_result). 'status' reads ND_PENDING while in flight.
 */
typedef struct nd_overlapped {
    nd_status status;         /* Internal: ND_PENDING until complete, then the result */
    uint32_t flags;           /* in: ND_OV_FLAG_* */
    uint64_t bytes;           /* InternalHigh: bytes, where an operation reports them */
    void *user_context;       /* free for the caller (an OVERLAPPED is usually embedded) */
    void *internal_next;      /* library linkage while pending; do not touch */
    void *internal_owner;
    uint32_t internal_state;
    uint32_t internal_reserved;
} nd_overlapped;

/* Do not queue the completion to the port; the caller waits with nd_get_overlapped_result
 * (replaces the Win32 "low bit of hEvent" convention, which ndmrlat uses). */
#define ND_OV_FLAG_NO_PORT 0x1u

#define ND_INFINITE (-1)

#ifdef __cplusplus
}
#endif
#endif
