// SPDX-License-Identifier: MIT
/* ND API: IND2Adapter methods. Argument checks and ND statuses here; mechanics in core/. */
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
    uint32_t version = info->info_version;
    *info = nd_limits;
    info->info_version = version;
    info->adapter_id = a->id;
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
    if (depth == 0 || depth > nd_limits.max_completion_queue_depth)
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
    if (depth == 0 || depth > nd_limits.max_initiator_queue_depth)
        return bad_depth;
    if (sge > nd_limits.max_initiator_sge)
        return bad_sge;
    if (inline_size > nd_limits.max_inline_data_size)
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
    if (rq_depth == 0 || rq_depth > nd_limits.max_receive_queue_depth)
        return ND_INVALID_PARAMETER_5;
    st = check_initiator(iq_depth, iq_sge, inline_size, ND_INVALID_PARAMETER_6,
                         ND_INVALID_PARAMETER_8, ND_INVALID_PARAMETER_9);
    if (st != ND_SUCCESS)
        return st;
    if (rq_sge > nd_limits.max_receive_sge)
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
