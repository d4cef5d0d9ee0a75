/* SPDX-License-Identifier: MIT */
/* IND2QueuePair: data-path posts. Results appear in the CQs; no call here blocks. */
#ifndef NETDIRECT_QP_H
#define NETDIRECT_QP_H

#include <netdirect/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* nd_qp_close - Release; outstanding requests are flushed: their results (ND_CANCELED)
 * stay in the CQs for GetResults, and an armed CQ is signalled. */
nd_status nd_qp_close(nd_qp *qp);

/*
 * nd_qp_flush - Flush: every outstanding request of this QP completes ND_CANCELED;
 * works on an unconnected QP. Returns ND_SUCCESS.
 */
nd_status nd_qp_flush(nd_qp *qp);

/*
 * nd_qp_send - Send @nsge (0 allowed) SGEs. @flags: SILENT_SUCCESS, READ_FENCE,
 * SEND_AND_SOLICIT_EVENT, INLINE (buffers then need no registration).
 * Returns ND_SUCCESS (posted); ND_CONNECTION_INVALID when not connected;
 * ND_NO_MORE_ENTRIES when the initiator queue is full; ND_DATA_OVERRUN for too many SGEs;
 * ND_BUFFER_OVERFLOW for too many bytes; ND_INVALID_PARAMETER_2 for a NULL @sge with
 * @nsge > 0; ND_INVALID_PARAMETER_4 for unknown flags. The count is checked first: no
 * SGE past the QP's limit is read.
 */
nd_status nd_qp_send(nd_qp *qp, void *request_context, const nd_sge *sge, uint32_t nsge, uint32_t flags);

/*
 * nd_qp_receive - Receive, allowed before connecting. Returns ND_SUCCESS; ND_INVALID_PARAMETER_2 (NULL @sge);
 * ND_NO_MORE_ENTRIES; ND_DATA_OVERRUN (SGEs); ND_BUFFER_OVERFLOW (bytes).
 */
nd_status nd_qp_receive(nd_qp *qp, void *request_context, const nd_sge *sge, uint32_t nsge);

/*
 * nd_qp_bind - Bind @mw to [buf, buf+len) inside @mr. @flags: ALLOW_READ and/or
 * ALLOW_WRITE (neither: a window no peer can use), SILENT_SUCCESS, READ_FENCE. Completes through the
 * initiator CQ as ND_REQUEST_TYPE_BIND, in order with sends. Returns ND_SUCCESS;
 * ND_ACCESS_VIOLATION (ALLOW_WRITE on a region without local write, range outside the
 * region); ND_INVALID_PARAMETER_6 (flags); as nd_qp_send for queue/state errors.
 */
nd_status nd_qp_bind(nd_qp *qp, void *request_context, nd_mr *mr, nd_mw *mw, const void *buf,
                     size_t len, uint32_t flags);

/*
 * nd_qp_invalidate - Invalidate @mw (ordered with sends, ND_REQUEST_TYPE_INVALIDATE).
 * An unbound window completes ND_INVALID_DEVICE_REQUEST. Returns as nd_qp_send.
 */
nd_status nd_qp_invalidate(nd_qp *qp, void *request_context, nd_mw *mw, uint32_t flags);

/*
 * nd_qp_read - RDMA Read into the local SGEs from (@remote_address, @remote_token).
 * @flags: SILENT_SUCCESS, READ_FENCE. Zero bytes allowed. Returns as nd_qp_send
 * (ND_INVALID_PARAMETER_6 for flags).
 */
nd_status nd_qp_read(nd_qp *qp, void *request_context, const nd_sge *sge, uint32_t nsge,
                     uint64_t remote_address, uint32_t remote_token, uint32_t flags);

/*
 * nd_qp_write - RDMA Write of the local SGEs to (@remote_address, @remote_token).
 * @flags: SILENT_SUCCESS, READ_FENCE, INLINE. Returns as nd_qp_read.
 */
nd_status nd_qp_write(nd_qp *qp, void *request_context, const nd_sge *sge, uint32_t nsge,
                      uint64_t remote_address, uint32_t remote_token, uint32_t flags);

#ifdef __cplusplus
}
#endif
#endif
