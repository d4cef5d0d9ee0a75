// SPDX-License-Identifier: MIT
/* ND's entry points for completion queues, queue pairs and shared receive queues: the
 * core's door in NTSTATUS. */
#include "nd.h"

ND_API nd_status nd_cq_notify(nd_cq *cq, uint32_t type, nd_overlapped *ov)
{
    return nd_ntstatus(ndc_cq_notify(cq, type, ov));
}

ND_API nd_status nd_cq_cancel_overlapped_requests(nd_cq *cq)
{
    return nd_ntstatus(ndc_cq_cancel_overlapped_requests(cq));
}

ND_API nd_status nd_cq_get_overlapped_result(nd_cq *cq, nd_overlapped *ov, int wait)
{
    return nd_ntstatus(ndc_cq_get_overlapped_result(cq, ov, wait));
}

ND_API nd_status nd_cq_resize(nd_cq *cq, uint32_t depth)
{
    return nd_ntstatus(ndc_cq_resize(cq, depth));
}

ND_API nd_status nd_cq_get_notify_affinity(nd_cq *cq, uint16_t *group, uintptr_t *affinity)
{
    return nd_ntstatus(ndc_cq_get_notify_affinity(cq, group, affinity));
}

ND_API nd_status nd_cq_close(nd_cq *cq)
{
    return nd_ntstatus(ndc_cq_close(cq));
}

ND_API nd_status nd_qp_close(nd_qp *qp)
{
    return nd_ntstatus(ndc_qp_close(qp));
}

ND_API nd_status nd_qp_flush(nd_qp *qp)
{
    return nd_ntstatus(ndc_qp_flush(qp));
}

ND_API nd_status nd_qp_read(nd_qp *qp, void *ctx, const nd_sge *sge, uint32_t nsge, uint64_t raddr,
                            uint32_t rtoken, uint32_t flags)
{
    return nd_ntstatus(ndc_qp_read(qp, ctx, sge, nsge, raddr, rtoken, flags));
}

ND_API nd_status nd_qp_write(nd_qp *qp, void *ctx, const nd_sge *sge, uint32_t nsge, uint64_t raddr,
                             uint32_t rtoken, uint32_t flags)
{
    return nd_ntstatus(ndc_qp_write(qp, ctx, sge, nsge, raddr, rtoken, flags));
}

ND_API nd_status nd_qp_send(nd_qp *qp, void *ctx, const nd_sge *sge, uint32_t nsge, uint32_t flags)
{
    return nd_ntstatus(ndc_qp_send(qp, ctx, sge, nsge, flags));
}

ND_API nd_status nd_qp_receive(nd_qp *qp, void *ctx, const nd_sge *sge, uint32_t nsge)
{
    return nd_ntstatus(ndc_qp_receive(qp, ctx, sge, nsge));
}

ND_API nd_status nd_qp_bind(nd_qp *qp, void *ctx, nd_mr *mr, nd_mw *mw, const void *buf, size_t len,
                            uint32_t flags)
{
    return nd_ntstatus(ndc_qp_bind(qp, ctx, mr, mw, buf, len, flags));
}

ND_API nd_status nd_qp_invalidate(nd_qp *qp, void *ctx, nd_mw *mw, uint32_t flags)
{
    return nd_ntstatus(ndc_qp_invalidate(qp, ctx, mw, flags));
}

ND_API nd_status nd_adapter_create_shared_receive_queue(nd_adapter *a, nd_port *port, uint32_t depth,
                                                        uint32_t max_request_sge, uint32_t notify_threshold,
                                                        uint16_t group, uintptr_t affinity, nd_srq **out)
{
    return nd_ntstatus(ndc_adapter_create_shared_receive_queue(a, port, depth, max_request_sge,
                                                               notify_threshold, group, affinity, out));
}

ND_API nd_status nd_srq_cancel_overlapped_requests(nd_srq *s)
{
    return nd_ntstatus(ndc_srq_cancel_overlapped_requests(s));
}

ND_API nd_status nd_srq_close(nd_srq *s)
{
    return nd_ntstatus(ndc_srq_close(s));
}

ND_API nd_status nd_srq_get_notify_affinity(nd_srq *s, uint16_t *group, uintptr_t *affinity)
{
    return nd_ntstatus(ndc_srq_get_notify_affinity(s, group, affinity));
}

ND_API nd_status nd_srq_modify(nd_srq *s, uint32_t depth, uint32_t notify_threshold)
{
    return nd_ntstatus(ndc_srq_modify(s, depth, notify_threshold));
}

ND_API nd_status nd_srq_notify(nd_srq *s, nd_overlapped *ov)
{
    return nd_ntstatus(ndc_srq_notify(s, ov));
}

ND_API nd_status nd_srq_receive(nd_srq *s, void *ctx, const nd_sge *sge, uint32_t nsge)
{
    return nd_ntstatus(ndc_srq_receive(s, ctx, sge, nsge));
}

ND_API nd_status nd_srq_get_overlapped_result(nd_srq *s, nd_overlapped *ov, int wait)
{
    return nd_ntstatus(ndc_srq_get_overlapped_result(s, ov, wait));
}

ND_API uint32_t nd_cq_get_results(nd_cq *cq, nd_result *results, uint32_t max)
{
    /* A failed result's status is NTSTATUS already: the core writes it as ND shows it
     * (nd_status_shown), in the failure paths only. */
    return ndc_cq_get_results(cq, results, max);
}
