// SPDX-License-Identifier: MIT
/* The adapter's door calls that span several core objects: its query and the creation of
 * ports, CQs and QPs. */
#include "core.h"
#include "qp_int.h"
#include "srq_int.h"

#include <string.h>

ND_DOOR int ndc_adapter_query(nd_adapter *a, nd_adapter_info *info, uint32_t *size)
{
    if (!nd_adapter_valid(a))
        return -EBADF;
    if (!size)
        return ND_EARG(2);
    if (!info || *size < sizeof(*info)) {
        *size = sizeof(*info);
        return -EOVERFLOW;
    }
    if (info->info_version != ND_VERSION_2 && info->info_version != ND_VERSION_1)
        return -EINVAL;
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
    return 0;
}

ND_DOOR int ndc_adapter_query_address_list(nd_adapter *a, nd_address_list *list, uint32_t *size)
{
    if (!nd_adapter_valid(a))
        return -EBADF;
    return nd_addr_list(a->ifindex, list, size);
}

ND_DOOR int ndc_adapter_create_overlapped_file(nd_adapter *a, nd_port **port)
{
    if (!nd_adapter_valid(a))
        return -EBADF;
    return ndc_port_create(port);
}

ND_DOOR int ndc_adapter_create_completion_queue(nd_adapter *a, nd_port *port, uint32_t depth,
                                                uint16_t group, uintptr_t affinity, nd_cq **cq)
{
    if (!nd_adapter_valid(a))
        return -EBADF;
    if (!nd_port_valid(port))
        return ND_EARG(2);
    if (depth == 0 || depth > nd_caps.max_cqe)
        return ND_EARG(3);
    if (!cq)
        return ND_EARG(6);
    return nd_cq_create(a, port, depth, group, affinity, cq);
}

static bool cq_of(nd_adapter *a, const nd_cq *cq)
{
    return cq && cq->magic == ND_MAGIC_CQ && cq->adapter == a;
}

/* The ND argument a size past the device's limits is, for CreateQueuePair (@srq false) and
 * CreateQueuePairWithSrq, whose arguments differ. */
static int limit_status(enum nd_qp_limit l, bool srq)
{
    switch (l) {
    case ND_QPL_OK: return 0;
    case ND_QPL_RQ_DEPTH: return ND_EARG(5);
    case ND_QPL_IQ_DEPTH: return ND_EARG(6);
    case ND_QPL_RQ_SGE: return ND_EARG(7);
    case ND_QPL_IQ_SGE: return srq ? ND_EARG(7) : ND_EARG(8);
    case ND_QPL_INLINE: return srq ? ND_EARG(8) : ND_EARG(9);
    }
    return -EINVAL;
}

/* ND's QP: in INIT, its arguments checked in ND's order (@qp is argument @qp_arg). */
static int create_qp(nd_adapter *a, nd_cq *rcq, nd_cq *icq, nd_srq *srq, bool with_srq, void *context,
                     const struct nd_qp_sizes *sz, nd_qp **qp, int qp_arg)
{
    int st;

    if (!nd_adapter_valid(a))
        return -EBADF;
    if (!cq_of(a, rcq))
        return ND_EARG(2);
    if (!cq_of(a, icq))
        return ND_EARG(3);
    if (with_srq && !nd_srq_valid_of(srq, a))
        return ND_EARG(4);
    if ((st = limit_status(nd_qp_limit_exceeded(sz, with_srq), with_srq)) != 0)
        return st;
    if (!qp)
        return ND_EARG(qp_arg);
    return nd_qp_create(a, rcq, icq, srq, context, sz, ND_QPS_INIT, qp);
}

ND_DOOR int ndc_adapter_create_queue_pair(nd_adapter *a, nd_cq *rcq, nd_cq *icq, void *context,
                                          uint32_t rq_depth, uint32_t iq_depth, uint32_t rq_sge, uint32_t iq_sge,
                                          uint32_t inline_size, nd_qp **qp)
{
    struct nd_qp_sizes sz = { rq_depth, iq_depth, rq_sge, iq_sge, inline_size };

    return create_qp(a, rcq, icq, NULL, false, context, &sz, qp, 10);
}

ND_DOOR int ndc_adapter_create_queue_pair_with_srq(nd_adapter *a, nd_cq *rcq, nd_cq *icq, nd_srq *srq,
                                                   void *context, uint32_t iq_depth, uint32_t iq_sge,
                                                   uint32_t inline_size, nd_qp **qp)
{
    struct nd_qp_sizes sz = { 0, iq_depth, 0, iq_sge, inline_size };

    return create_qp(a, rcq, icq, srq, true, context, &sz, qp, 9);
}
