// SPDX-License-Identifier: MIT
/* ND's entry points for adapters, addresses, settings and shared memory: the core's door in NTSTATUS. */
#include "nd.h"

ND_ENTRY(open_adapter, (uint64_t adapter_id, nd_adapter **out), (adapter_id, out))

ND_ENTRY(open_adapter_by_address, (const struct sockaddr *addr, uint32_t addr_len, nd_adapter **adapter),
         (addr, addr_len, adapter))

ND_ENTRY(adapter_close, (nd_adapter *a), (a))

ND_ENTRY(query_address_list, (nd_address_list *list, uint32_t *size), (list, size))

ND_ENTRY(resolve_address, (const struct sockaddr *addr, uint32_t addr_len, uint64_t *adapter_id),
         (addr, addr_len, adapter_id))

ND_API uint32_t nd_config_count(void)
{
    return ndc_config_count();
}

ND_ENTRY(config_get, (uint32_t index, nd_config_knob *knob), (index, knob))

ND_ENTRY(alloc_memory, (size_t size, void **out), (size, out))

ND_ENTRY(free_memory, (void *p), (p))

ND_ENTRY(adapter_query, (nd_adapter *a, nd_adapter_info *info, uint32_t *size), (a, info, size))

ND_ENTRY(adapter_query_address_list, (nd_adapter *a, nd_address_list *list, uint32_t *size), (a, list, size))

ND_ENTRY(adapter_create_overlapped_file, (nd_adapter *a, nd_port **port), (a, port))

ND_ENTRY(adapter_create_completion_queue,
         (nd_adapter *a, nd_port *port, uint32_t depth, uint16_t group, uintptr_t affinity, nd_cq **cq),
         (a, port, depth, group, affinity, cq))

ND_ENTRY(adapter_create_queue_pair,
         (nd_adapter *a, nd_cq *rcq, nd_cq *icq, void *context, uint32_t rq_depth, uint32_t iq_depth,
          uint32_t rq_sge, uint32_t iq_sge, uint32_t inline_size, nd_qp **qp),
         (a, rcq, icq, context, rq_depth, iq_depth, rq_sge, iq_sge, inline_size, qp))

ND_API nd_status nd_adapter_create_queue_pair_with_srq(nd_adapter *a, nd_cq *rcq, nd_cq *icq, nd_srq *srq,
                                                       void *context, uint32_t iq_depth, uint32_t iq_sge,
                                                       uint32_t inline_size, nd_qp **qp)
{
    return nd_ntstatus(
        ndc_adapter_create_queue_pair_with_srq(a, rcq, icq, srq, context, iq_depth, iq_sge, inline_size, qp));
}
