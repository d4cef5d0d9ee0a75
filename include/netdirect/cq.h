/* SPDX-License-Identifier: MIT */
/* IND2CompletionQueue. */
#ifndef NETDIRECT_CQ_H
#define NETDIRECT_CQ_H

#include <netdirect/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * nd_cq_close - Release. Pending notify requests complete ND_CANCELED on the port.
 * Returns ND_SUCCESS; ND_DEVICE_BUSY while a queue pair still uses the CQ;
 * ND_INVALID_HANDLE for NULL.
 */
nd_status nd_cq_close(nd_cq *cq);

/* nd_cq_get_notify_affinity - the group/affinity hint given at creation. ND_SUCCESS. */
nd_status nd_cq_get_notify_affinity(nd_cq *cq, uint16_t *group, uintptr_t *affinity);

/*
 * nd_cq_resize - Resize without losing completions. Returns ND_SUCCESS;
 * ND_INVALID_PARAMETER_1 for 0 or more than the adapter maximum; ND_BUFFER_OVERFLOW when
 * more completions are queued than @depth (the CQ is unchanged); the CQ's sticky error.
 */
nd_status nd_cq_resize(nd_cq *cq, uint32_t depth);

/*
 * nd_cq_notify - Notify: arm the CQ and request one notification.
 * @type: ND_CQ_NOTIFY_ERRORS, _ANY or _SOLICITED (else ND_INVALID_PARAMETER_1).
 * Returns ND_PENDING (completes once, on the port or via nd_get_overlapped_result, when
 * the event happens or the request is cancelled); ND_SUCCESS when a completion that
 * GetResults has not returned and that has not yet satisfied a notify is already there
 * (nothing is queued then); the sticky error of a broken CQ (ND_BUFFER_OVERFLOW after an
 * overrun, ND_INTERNAL_ERROR). Arming makes no system call. An overrun completes a
 * pending ERRORS notify with ND_BUFFER_OVERFLOW when the application next polls the CQ
 * or its notify (GetOverlappedResult, even without wait); the CQ's queue pairs then enter
 * the error state, and the entries already queued still come out of GetResults.
 */
nd_status nd_cq_notify(nd_cq *cq, uint32_t type, nd_overlapped *ov);

/*
 * nd_cq_get_results - GetResults: copy up to @max completions into @results, oldest
 * first per queue. Never blocks, makes no system call. Returns the number copied; keep
 * calling until it returns less than @max. Returns 0 for NULL arguments.
 */
uint32_t nd_cq_get_results(nd_cq *cq, nd_result *results, uint32_t max);

/*
 * nd_cq_cancel_overlapped_requests - CancelOverlappedRequests: every pending notify of
 * this CQ completes ND_CANCELED, in request order, visible on the port when this returns.
 */
nd_status nd_cq_cancel_overlapped_requests(nd_cq *cq);

/* nd_cq_get_overlapped_result - as nd_get_overlapped_result, for a request of this CQ. */
nd_status nd_cq_get_overlapped_result(nd_cq *cq, nd_overlapped *ov, int wait);

#ifdef __cplusplus
}
#endif
#endif
