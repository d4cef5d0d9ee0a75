// SPDX-License-Identifier: MIT
/* ND's entry points for completion queues, queue pairs and shared receive queues: the
 * core's door in NTSTATUS. */
#include "nd.h"

ND_ENTRY(cq_notify, (nd_cq *cq, uint32_t type, nd_overlapped *ov), (cq, type, ov))

ND_ENTRY(cq_cancel_overlapped_requests, (nd_cq *cq), (cq))

ND_ENTRY(cq_get_overlapped_result, (nd_cq *cq, nd_overlapped *ov, int wait), (cq, ov, wait))

ND_ENTRY(cq_resize, (nd_cq *cq, uint32_t depth), (cq, depth))

ND_ENTRY(cq_get_notify_affinity, (nd_cq *cq, uint16_t *group, uintptr_t *affinity), (cq, group, affinity))

ND_ENTRY(cq_close, (nd_cq *cq), (cq))

ND_ENTRY(qp_close, (nd_qp *qp), (qp))

ND_ENTRY(qp_flush, (nd_qp *qp), (qp))

ND_ENTRY(qp_read,
         (nd_qp *qp, void *ctx, const nd_sge *sge, uint32_t nsge, uint64_t raddr, uint32_t rtoken,
          uint32_t flags),
         (qp, ctx, sge, nsge, raddr, rtoken, flags))

ND_ENTRY(qp_write,
         (nd_qp *qp, void *ctx, const nd_sge *sge, uint32_t nsge, uint64_t raddr, uint32_t rtoken,
          uint32_t flags),
         (qp, ctx, sge, nsge, raddr, rtoken, flags))

ND_ENTRY(qp_send, (nd_qp *qp, void *ctx, const nd_sge *sge, uint32_t nsge, uint32_t flags),
         (qp, ctx, sge, nsge, flags))

ND_ENTRY(qp_receive, (nd_qp *qp, void *ctx, const nd_sge *sge, uint32_t nsge), (qp, ctx, sge, nsge))

ND_ENTRY(qp_bind, (nd_qp *qp, void *ctx, nd_mr *mr, nd_mw *mw, const void *buf, size_t len, uint32_t flags),
         (qp, ctx, mr, mw, buf, len, flags))

ND_ENTRY(qp_invalidate, (nd_qp *qp, void *ctx, nd_mw *mw, uint32_t flags), (qp, ctx, mw, flags))

ND_ENTRY(adapter_create_shared_receive_queue,
         (nd_adapter *a, nd_port *port, uint32_t depth, uint32_t max_request_sge, uint32_t notify_threshold,
          uint16_t group, uintptr_t affinity, nd_srq **out),
         (a, port, depth, max_request_sge, notify_threshold, group, affinity, out))

ND_ENTRY(srq_cancel_overlapped_requests, (nd_srq *s), (s))

ND_ENTRY(srq_close, (nd_srq *s), (s))

ND_ENTRY(srq_get_notify_affinity, (nd_srq *s, uint16_t *group, uintptr_t *affinity), (s, group, affinity))

ND_ENTRY(srq_modify, (nd_srq *s, uint32_t depth, uint32_t notify_threshold), (s, depth, notify_threshold))

ND_ENTRY(srq_notify, (nd_srq *s, nd_overlapped *ov), (s, ov))

ND_ENTRY(srq_receive, (nd_srq *s, void *ctx, const nd_sge *sge, uint32_t nsge), (s, ctx, sge, nsge))

ND_ENTRY(srq_get_overlapped_result, (nd_srq *s, nd_overlapped *ov, int wait), (s, ov, wait))

ND_API uint32_t nd_cq_get_results(nd_cq *cq, nd_result *results, uint32_t max)
{
    /* A failed result's status is NTSTATUS already: the core writes it as ND shows it
     * (nd_status_shown), in the failure paths only. */
    return ndc_cq_get_results(cq, results, max);
}
