/* SPDX-License-Identifier: MIT */
/* IND2MemoryWindow. Bound and invalidated through the queue pair (nd_qp_bind / nd_qp_invalidate). */
#ifndef NETDIRECT_MW_H
#define NETDIRECT_MW_H

#include <netdirect/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * nd_mw_close - Release. A window still bound is invalidated first (remote access through
 * it ends at once), so a window whose queue pair died can always be released. A Bind or
 * Invalidate of this window still queued on a QP must complete first, as for any buffer.
 */
nd_status nd_mw_close(nd_mw *mw);

/*
 * nd_mw_get_remote_token - the token a peer uses for the window; valid as soon as
 * nd_qp_bind returns. Each bind gives a new token, so tokens of an earlier binding fail.
 */
uint32_t nd_mw_get_remote_token(nd_mw *mw);

#ifdef __cplusplus
}
#endif
#endif
