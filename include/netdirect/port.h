/* SPDX-License-Identifier: MIT */
/* The completion port: ND's overlapped file bound to an I/O completion port, as one object. */
#ifndef NETDIRECT_PORT_H
#define NETDIRECT_PORT_H

#include <netdirect/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * nd_port_create - a new completion port (CreateIoCompletionPort + an overlapped file).
 * Objects created on a port deliver the completions of their ND_PENDING requests to it.
 * Returns ND_SUCCESS; ND_INVALID_PARAMETER_1 for NULL; ND_INSUFFICIENT_RESOURCES when
 * file descriptors run out; ND_NO_MEMORY.
 */
nd_status nd_port_create(nd_port **port);

/*
 * nd_port_close - close the port. Returns ND_SUCCESS, or ND_DEVICE_BUSY while objects
 * created on it are still open (close them first); ND_INVALID_HANDLE for NULL.
 */
nd_status nd_port_close(nd_port *port);

/*
 * nd_port_fd - a file descriptor that polls readable (poll/epoll/select/io_uring) when
 * nd_port_wait(port, 0, ...) may return a completion. Owned by the port; do not close
 * it or read from it. Returns -1 for a NULL port.
 */
int nd_port_fd(const nd_port *port);

/*
 * nd_port_wait - GetQueuedCompletionStatus: dequeue the oldest completed request.
 * @timeout_ms: 0 polls, ND_INFINITE waits forever.
 * Returns ND_SUCCESS with *ov set (read (*ov)->status for the request's result; ND
 * requires a call of nd_get_overlapped_result, which then returns at once);
 * ND_TIMEOUT when nothing completed in time (*ov untouched); ND_INVALID_PARAMETER_1/_3;
 * ND_CANCELED when another thread closes the port while this one waits (as closing an
 * IOCP wakes its waiters). Completions come out in the order they were completed (FIFO).
 */
nd_status nd_port_wait(nd_port *port, int timeout_ms, nd_overlapped **ov);

/*
 * nd_port_post - PostQueuedCompletionStatus: queue @ov with @status and @bytes as if a
 * request had completed. Returns ND_SUCCESS; ND_INVALID_PARAMETER_1/_2.
 */
nd_status nd_port_post(nd_port *port, nd_overlapped *ov, nd_status status, uint64_t bytes);

/*
 * nd_get_overlapped_result - IND2Overlapped::GetOverlappedResult for any object.
 * @wait: nonzero blocks until the request completes (driving the object's progress);
 * zero moves the object's progress once without blocking (a peer's disconnect, a CQ
 * event, an incoming connection), then returns ND_PENDING if still in flight.
 * Returns the request's final status (ND_SUCCESS, ND_CANCELED, or its error), or
 * ND_PENDING; ND_INVALID_PARAMETER_1 for NULL. A completion that was also queued to the
 * port stays queued.
 */
nd_status nd_get_overlapped_result(nd_overlapped *ov, int wait);

#ifdef __cplusplus
}
#endif
#endif
