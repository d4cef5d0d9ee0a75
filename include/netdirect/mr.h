/* SPDX-License-Identifier: MIT */
/* IND2MemoryRegion. */
#ifndef NETDIRECT_MR_H
#define NETDIRECT_MR_H

#include <netdirect/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* nd_mr_close - Release; deregisters implicitly. ND_DEVICE_BUSY while a window is bound to it. */
nd_status nd_mr_close(nd_mr *mr);

/*
 * nd_mr_register - Register one buffer with ND_MR_FLAG_* rights.
 * Returns ND_SUCCESS (registration is synchronous here; nothing is queued);
 * ND_INVALID_PARAMETER for buf NULL with len 0 or a len over max_registration_size;
 * ND_INVALID_BUFFER_SIZE for a valid buf with len 0; ND_ACCESS_VIOLATION when the range
 * is not mapped memory (or @buf is NULL); ND_INVALID_PARAMETER_3 for unknown flags;
 * ND_INVALID_DEVICE_STATE when already registered; ND_INSUFFICIENT_RESOURCES when the
 * adapter's token table is full.
 */
nd_status nd_mr_register(nd_mr *mr, const void *buf, size_t len, uint32_t flags, nd_overlapped *ov);

/*
 * nd_mr_deregister - Deregister. Returns ND_SUCCESS; ND_DEVICE_BUSY while a memory
 * window is bound to the region; ND_INVALID_DEVICE_STATE when not registered. A transfer
 * into or out of the region that is under way (ours, or a peer's) is waited for or fails
 * (ND_ACCESS_VIOLATION, and its connection ends): once this returns, nothing touches the
 * memory through this registration again, and it may be freed.
 */
nd_status nd_mr_deregister(nd_mr *mr, nd_overlapped *ov);

/* nd_mr_get_local_token - the token for nd_sge.memory_region_token; 0 when unregistered. */
uint32_t nd_mr_get_local_token(nd_mr *mr);

/* nd_mr_get_remote_token - the opaque token a peer uses to Read/Write; 0 when unregistered. */
uint32_t nd_mr_get_remote_token(nd_mr *mr);

/* nd_mr_cancel_overlapped_requests - pending requests complete ND_CANCELED (none pend today). */
nd_status nd_mr_cancel_overlapped_requests(nd_mr *mr);

/* nd_mr_get_overlapped_result - as nd_get_overlapped_result. */
nd_status nd_mr_get_overlapped_result(nd_mr *mr, nd_overlapped *ov, int wait);

/*
 * nd_alloc_memory - netdirect extension, the role of MPI_Alloc_mem: @size bytes (rounded up
 * to whole pages, zeroed) that same-host peers can map. Reads and Writes against regions
 * registered inside the allocation move with one memcpy in the initiator instead of a
 * cross-memory system call; over iWARP it is ordinary memory. The memory is MAP_SHARED:
 * a fork child shares it rather than copying it. Returns ND_SUCCESS;
 * ND_INVALID_PARAMETER_1 for 0 or more than max_registration_size; ND_INVALID_PARAMETER_2
 * for @out NULL; ND_NO_MEMORY.
 */
nd_status nd_alloc_memory(size_t size, void **out);

/*
 * nd_free_memory - Free what nd_alloc_memory returned. ND_DEVICE_BUSY while a region is
 * registered inside it; ND_INVALID_PARAMETER for any other pointer.
 */
nd_status nd_free_memory(void *p);

#ifdef __cplusplus
}
#endif
#endif
