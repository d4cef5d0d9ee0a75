// SPDX-License-Identifier: MIT
/* ND API: the IND2Adapter methods whose mechanics span several core objects (query,
 * create_*): argument checks and ND statuses here. ND's other entry points are still
 * defined beside their mechanics in src/core (tests/check_layers.py counts them). */
#include "../core/core.h"
#include "../core/qp_int.h"
#include "../core/srq_int.h"

#include <string.h>

ND_API nd_status nd_adapter_query(nd_adapter *a, nd_adapter_info *info, uint32_t *size)
{
    if (!nd_adapter_valid(a))
        return ND_INVALID_HANDLE;
    if (!size)
        return ND_INVALID_PARAMETER_2;
    if (!info || *size < sizeof(*info)) {
        *size = sizeof(*info);
        return ND_BUFFER_OVERFLOW;
    }
    if (info->info_version != ND_VERSION_2 && info->info_version != ND_VERSION_1)
        return ND_INVALID_PARAMETER;
    *info = (nd_adapter_info){
        .info_version = info->info_version,
        .vendor_id = nd_caps.vendor_id,
        .device_id = nd_caps.device_id,
        .adapter_id = a->id,
        .max_registration_size = (size_t)nd_caps.max_mr_size,
        .max_window_size = (size_t)nd_caps.max_mw_size,
        .max_initiator_sge = nd_caps.max_send_sge,
        .max_receive_sge = nd_caps.max_recv_sge,
        .max_read_sge = nd_caps.max_read_sge,
        .max_transfer_length = nd_caps.max_msg_size,
        .max_inline_data_size = nd_caps.max_inline,
        .max_inbound_read_limit = nd_caps.max_ird,
        .max_outbound_read_limit = nd_caps.max_ord,
        .max_receive_queue_depth = nd_caps.max_recv_wr,
        .max_initiator_queue_depth = nd_caps.max_send_wr,
        .max_shared_receive_queue_depth = nd_caps.max_srq_wr,
        .max_completion_queue_depth = nd_caps.max_cqe,
        .inline_request_threshold = nd_caps.inline_threshold,
        .large_request_threshold = nd_caps.large_threshold,
        .max_caller_data = nd_caps.max_connect_pdata,
        .max_callee_data = nd_caps.max_accept_pdata,
        .adapter_flags = ND_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED | ND_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED |
                         ND_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED | ND_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED,
    };
    *size = sizeof(*info);
    return ND_SUCCESS;
}

ND_API nd_status nd_adapter_query_address_list(nd_adapter *a, nd_address_list *list, uint32_t *size)
{
    if (!nd_adapter_valid(a))
        return ND_INVALID_HANDLE;
    return nd_addr_list(a->ifindex, list, size);
}

ND_API nd_status nd_adapter_create_overlapped_file(nd_adapter *a, nd_port **port)
{
    if (!nd_adapter_valid(a))
        return ND_INVALID_HANDLE;
    return nd_port_create(port);
}

ND_API nd_status nd_adapter_create_completion_queue(nd_adapter *a, nd_port *port, uint32_t depth,
                                                    uint16_t group, uintptr_t affinity, nd_cq **cq)
{
    if (!nd_adapter_valid(a))
        return ND_INVALID_HANDLE;
    if (!nd_port_valid(port))
        return ND_INVALID_PARAMETER_2;
    if (depth == 0 || depth > nd_caps.max_cqe)
        return ND_INVALID_PARAMETER_3;
    if (!cq)
        return ND_INVALID_PARAMETER_6;
    return nd_cq_create(a, port, depth, group, affinity, cq);
}

static bool cq_of(nd_adapter *a, const nd_cq *cq)
{
    return cq && cq->magic == ND_MAGIC_CQ && cq->adapter == a;
}

/* CreateQueuePair's checks, shared with the SRQ variant. */
static nd_status check_initiator(uint32_t depth, uint32_t sge, uint32_t inline_size,
                                 nd_status bad_depth, nd_status bad_sge, nd_status bad_inline)
{
    if (depth == 0 || depth > nd_caps.max_send_wr)
        return bad_depth;
    if (sge > nd_caps.max_send_sge)
        return bad_sge;
    if (inline_size > nd_caps.max_inline)
        return bad_inline;
    return ND_SUCCESS;
}

ND_API nd_status nd_adapter_create_queue_pair(nd_adapter *a, nd_cq *rcq, nd_cq *icq, void *context,
                                              uint32_t rq_depth, uint32_t iq_depth, uint32_t rq_sge,
                                              uint32_t iq_sge, uint32_t inline_size, nd_qp **qp)
{
    nd_status st;

    if (!nd_adapter_valid(a))
        return ND_INVALID_HANDLE;
    if (!cq_of(a, rcq))
        return ND_INVALID_PARAMETER_2;
    if (!cq_of(a, icq))
        return ND_INVALID_PARAMETER_3;
    if (rq_depth == 0 || rq_depth > nd_caps.max_recv_wr)
        return ND_INVALID_PARAMETER_5;
    st = check_initiator(iq_depth, iq_sge, inline_size, ND_INVALID_PARAMETER_6,
                         ND_INVALID_PARAMETER_8, ND_INVALID_PARAMETER_9);
    if (st != ND_SUCCESS)
        return st;
    if (rq_sge > nd_caps.max_recv_sge)
        return ND_INVALID_PARAMETER_7;
    if (!qp)
        return ND_INVALID_PARAMETER_10;
    return nd_qp_create(a, rcq, icq, NULL, context, rq_depth, iq_depth, rq_sge, iq_sge, inline_size, qp);
}

ND_API nd_status nd_adapter_create_queue_pair_with_srq(nd_adapter *a, nd_cq *rcq, nd_cq *icq,
                                                       nd_srq *srq, void *context, uint32_t iq_depth,
                                                       uint32_t iq_sge, uint32_t inline_size, nd_qp **qp)
{
    nd_status st;

    if (!nd_adapter_valid(a))
        return ND_INVALID_HANDLE;
    if (!cq_of(a, rcq))
        return ND_INVALID_PARAMETER_2;
    if (!cq_of(a, icq))
        return ND_INVALID_PARAMETER_3;
    if (!nd_srq_valid_of(srq, a))
        return ND_INVALID_PARAMETER_4;
    st = check_initiator(iq_depth, iq_sge, inline_size, ND_INVALID_PARAMETER_6,
                         ND_INVALID_PARAMETER_7, ND_INVALID_PARAMETER_8);
    if (st != ND_SUCCESS)
        return st;
    if (!qp)
        return ND_INVALID_PARAMETER_9;
    /* The inbound ring holds one entry per receive the SRQ can have outstanding. */
    return nd_qp_create(a, rcq, icq, srq, context, nd_srq_entries(srq), iq_depth, 1, iq_sge, inline_size, qp);
}
