/* SPDX-License-Identifier: MIT */
/* IND2SharedReceiveQueue. */
#ifndef NETDIRECT_SRQ_H
#define NETDIRECT_SRQ_H

#include <netdirect/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* nd_srq_close - Release; pending notifies complete ND_CANCELED. ND_DEVICE_BUSY while QPs use it. */
nd_status nd_srq_close(nd_srq *srq);

/* nd_srq_get_notify_affinity - the hint given at creation. ND_SUCCESS. */
nd_status nd_srq_get_notify_affinity(nd_srq *srq, uint16_t *group, uintptr_t *affinity);

/*
 * nd_srq_modify - Modify: 0 leaves a value unchanged. Returns ND_SUCCESS;
 * ND_INVALID_PARAMETER_1 for a depth over the adapter maximum; ND_BUFFER_OVERFLOW when
 * @depth is below the number of receives posted now (nothing changed).
 */
nd_status nd_srq_modify(nd_srq *srq, uint32_t depth, uint32_t notify_threshold);

/*
 * nd_srq_notify - Notify: completes when fewer receives than the threshold are posted
 * (at once, ND_SUCCESS, if that is already so). One event releases every pending notify
 * and disarms (re-arm with another call). Returns ND_PENDING or ND_SUCCESS;
 * ND_INVALID_DEVICE_STATE while the threshold is 0.
 */
nd_status nd_srq_notify(nd_srq *srq, nd_overlapped *ov);

/*
 * nd_srq_receive - Receive: post a receive any attached queue pair may consume.
 * Returns ND_SUCCESS; ND_NO_MORE_ENTRIES when the queue is full; ND_DATA_OVERRUN for more
 * SGEs than max_request_sge; ND_BUFFER_OVERFLOW when the SGEs add up to more than the
 * adapter's max_transfer_length; ND_INVALID_PARAMETER_2 for a NULL @sge with @nsge > 0.
 */
nd_status nd_srq_receive(nd_srq *srq, void *request_context, const nd_sge *sge, uint32_t nsge);

/* nd_srq_cancel_overlapped_requests - pending notifies complete ND_CANCELED, FIFO, synchronously. */
nd_status nd_srq_cancel_overlapped_requests(nd_srq *srq);

/* nd_srq_get_overlapped_result - as nd_get_overlapped_result. */
nd_status nd_srq_get_overlapped_result(nd_srq *srq, nd_overlapped *ov, int wait);

#ifdef __cplusplus
}
#endif
#endif
