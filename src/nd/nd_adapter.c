// SPDX-License-Identifier: MIT
/* ND's entry points for adapters, addresses, settings and shared memory: the core's door in NTSTATUS. */
#include "nd.h"

ND_API nd_status nd_open_adapter(uint64_t adapter_id, nd_adapter **out)
{
    return nd_ntstatus(ndc_open_adapter(adapter_id, out));
}

ND_API nd_status nd_open_adapter_by_address(const struct sockaddr *addr, uint32_t addr_len,
                                            nd_adapter **adapter)
{
    return nd_ntstatus(ndc_open_adapter_by_address(addr, addr_len, adapter));
}

ND_API nd_status nd_adapter_close(nd_adapter *a)
{
    return nd_ntstatus(ndc_adapter_close(a));
}

ND_API nd_status nd_query_address_list(nd_address_list *list, uint32_t *size)
{
    return nd_ntstatus(ndc_query_address_list(list, size));
}

ND_API nd_status nd_resolve_address(const struct sockaddr *addr, uint32_t addr_len, uint64_t *adapter_id)
{
    return nd_ntstatus(ndc_resolve_address(addr, addr_len, adapter_id));
}

ND_API uint32_t nd_config_count(void)
{
    return ndc_config_count();
}

ND_API nd_status nd_config_get(uint32_t index, nd_config_knob *knob)
{
    return nd_ntstatus(ndc_config_get(index, knob));
}

ND_API nd_status nd_alloc_memory(size_t size, void **out)
{
    return nd_ntstatus(ndc_alloc_memory(size, out));
}

ND_API nd_status nd_free_memory(void *p)
{
    return nd_ntstatus(ndc_free_memory(p));
}

ND_API nd_status nd_adapter_query(nd_adapter *a, nd_adapter_info *info, uint32_t *size)
{
    return nd_ntstatus(ndc_adapter_query(a, info, size));
}

ND_API nd_status nd_adapter_query_address_list(nd_adapter *a, nd_address_list *list, uint32_t *size)
{
    return nd_ntstatus(ndc_adapter_query_address_list(a, list, size));
}

ND_API nd_status nd_adapter_create_overlapped_file(nd_adapter *a, nd_port **port)
{
    return nd_ntstatus(ndc_adapter_create_overlapped_file(a, port));
}

ND_API nd_status nd_adapter_create_completion_queue(nd_adapter *a, nd_port *port, uint32_t depth,
                                                    uint16_t group, uintptr_t affinity, nd_cq **cq)
{
    return nd_ntstatus(ndc_adapter_create_completion_queue(a, port, depth, group, affinity, cq));
}

ND_API nd_status nd_adapter_create_queue_pair(nd_adapter *a, nd_cq *rcq, nd_cq *icq, void *context,
                                              uint32_t rq_depth, uint32_t iq_depth, uint32_t rq_sge,
                                              uint32_t iq_sge, uint32_t inline_size, nd_qp **qp)
{
    return nd_ntstatus(ndc_adapter_create_queue_pair(a, rcq, icq, context, rq_depth, iq_depth, rq_sge, iq_sge,
                                                     inline_size, qp));
}

ND_API nd_status nd_adapter_create_queue_pair_with_srq(nd_adapter *a, nd_cq *rcq, nd_cq *icq, nd_srq *srq,
                                                       void *context, uint32_t iq_depth, uint32_t iq_sge,
                                                       uint32_t inline_size, nd_qp **qp)
{
    return nd_ntstatus(
        ndc_adapter_create_queue_pair_with_srq(a, rcq, icq, srq, context, iq_depth, iq_sge, inline_size, qp));
}
