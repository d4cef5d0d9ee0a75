/* SPDX-License-Identifier: MIT */
/* IND2Adapter: limits, and the factory of every other object. */
#ifndef NETDIRECT_ADAPTER_H
#define NETDIRECT_ADAPTER_H

#include <netdirect/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Parameter numbers in ND_INVALID_PARAMETER_n follow ND's method signatures, which start
 * with the interface id (REFIID) that the C API leaves out: in CreateCompletionQueue the
 * depth is parameter 3, in CreateQueuePair the receive CQ is 2 and the inline size 9.
 */

/*
 * nd_adapter_close - Release. Objects created from the adapter keep it alive until they
 * are closed. Returns ND_SUCCESS; ND_INVALID_HANDLE for NULL.
 */
nd_status nd_adapter_close(nd_adapter *adapter);

/*
 * nd_adapter_create_overlapped_file - CreateOverlappedFile: a new completion port
 * (equivalent to nd_port_create). Returns as nd_port_create.
 */
nd_status nd_adapter_create_overlapped_file(nd_adapter *adapter, nd_port **port);

/*
 * nd_adapter_query - Query. @info->info_version must be ND_VERSION_2 (or ND_VERSION_1).
 * @size: in: bytes at @info; out: sizeof(nd_adapter_info).
 * Returns ND_SUCCESS; ND_BUFFER_OVERFLOW when @info is NULL or *size is too small (size
 * probe); ND_INVALID_PARAMETER for an unknown info_version; ND_INVALID_PARAMETER_2 for a
 * NULL @size. The limits can be used all at once (a QP with every maximum is creatable).
 */
nd_status nd_adapter_query(nd_adapter *adapter, nd_adapter_info *info, uint32_t *size);

/* nd_adapter_query_address_list - as nd_query_address_list, for this adapter's addresses. */
nd_status nd_adapter_query_address_list(nd_adapter *adapter, nd_address_list *list, uint32_t *size);

/*
 * nd_adapter_create_completion_queue - CreateCompletionQueue.
 * @depth: 1..max_completion_queue_depth, else ND_INVALID_PARAMETER_3.
 * @group, @affinity: notification processor hint; accepted and reported back.
 * Returns ND_SUCCESS; ND_INVALID_PARAMETER_2 for a NULL port; ND_NO_MEMORY;
 * ND_INSUFFICIENT_RESOURCES (file descriptors or CQ slots exhausted).
 */
nd_status nd_adapter_create_completion_queue(nd_adapter *adapter, nd_port *port, uint32_t depth,
                                             uint16_t group, uintptr_t affinity, nd_cq **cq);

/* nd_adapter_create_memory_region - CreateMemoryRegion: an empty MR; see nd_mr_register. */
nd_status nd_adapter_create_memory_region(nd_adapter *adapter, nd_port *port, nd_mr **mr);

/* nd_adapter_create_memory_window - CreateMemoryWindow: a window in the invalid state. */
nd_status nd_adapter_create_memory_window(nd_adapter *adapter, nd_mw **mw);

/*
 * nd_adapter_create_shared_receive_queue - CreateSharedReceiveQueue.
 * @depth: 1..max_shared_receive_queue_depth (else ND_INVALID_PARAMETER_3);
 * @max_request_sge: 1..max_receive_sge (else ND_INVALID_PARAMETER_4);
 * @notify_threshold: nd_srq_notify completes when fewer receives than this are posted;
 * 0 disables. Returns ND_SUCCESS; ND_INVALID_PARAMETER_2 (port); ND_NO_MEMORY.
 */
nd_status nd_adapter_create_shared_receive_queue(nd_adapter *adapter, nd_port *port, uint32_t depth,
                                                 uint32_t max_request_sge, uint32_t notify_threshold,
                                                 uint16_t group, uintptr_t affinity, nd_srq **srq);

/*
 * nd_adapter_create_queue_pair - CreateQueuePair (reliable connected).
 * @receive_cq, @initiator_cq: may be the same CQ; from this adapter.
 * @context: returned as nd_result.qp_context.
 * Returns ND_SUCCESS; ND_INVALID_PARAMETER_2.._9 naming the bad argument (depth 0 or over
 * the adapter maximum, SGE count, inline size); ND_NO_MEMORY; ND_INSUFFICIENT_RESOURCES;
 * ND_NOT_SUPPORTED while no transport is built in.
 */
nd_status nd_adapter_create_queue_pair(nd_adapter *adapter, nd_cq *receive_cq, nd_cq *initiator_cq,
                                       void *context, uint32_t receive_queue_depth,
                                       uint32_t initiator_queue_depth, uint32_t max_receive_request_sge,
                                       uint32_t max_initiator_request_sge, uint32_t inline_data_size,
                                       nd_qp **qp);

/*
 * nd_adapter_create_queue_pair_with_srq - CreateQueuePairWithSrq: receives come from @srq.
 * Returns as nd_adapter_create_queue_pair (the SRQ is parameter 4).
 */
nd_status nd_adapter_create_queue_pair_with_srq(nd_adapter *adapter, nd_cq *receive_cq,
                                                nd_cq *initiator_cq, nd_srq *srq, void *context,
                                                uint32_t initiator_queue_depth,
                                                uint32_t max_initiator_request_sge,
                                                uint32_t inline_data_size, nd_qp **qp);

/* nd_adapter_create_connector - CreateConnector. ND_NOT_SUPPORTED until the CM lands. */
nd_status nd_adapter_create_connector(nd_adapter *adapter, nd_port *port, nd_connector **connector);

/* nd_adapter_create_listener - CreateListener. ND_NOT_SUPPORTED until the CM lands. */
nd_status nd_adapter_create_listener(nd_adapter *adapter, nd_port *port, nd_listener **listener);

#ifdef __cplusplus
}
#endif
#endif
