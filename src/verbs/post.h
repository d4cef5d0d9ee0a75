/* SPDX-License-Identifier: MIT */
/* Posting on a QP (post.c), and the two helpers the fast path of ibv_post_send (qp.c)
 * inlines from here. */
#ifndef ND_VERBS_POST_H
#define ND_VERBS_POST_H

#include "verbs_int.h"

#include <errno.h>

_Static_assert(IBV_SEND_FENCE << 1 == ND_OP_FLAG_READ_FENCE && IBV_SEND_SOLICITED == ND_OP_FLAG_SEND_AND_SOLICIT_EVENT &&
                   IBV_SEND_INLINE << 2 == ND_OP_FLAG_INLINE && IBV_SEND_SIGNALED >> 1 == ND_OP_FLAG_SILENT_SUCCESS,
               "send_flags moves the verbs bits onto the core's by shifts");

/* The core's flags for a send request's; -1 for one it cannot carry. Shifts, not a test
 * per flag: this runs on every post. */
static inline int64_t vb_send_flags_of(const struct vb_qp *q, unsigned f)
{
    uint32_t silent = ((f & IBV_SEND_SIGNALED) >> 1) ^ ND_OP_FLAG_SILENT_SUCCESS;

    if (f & ~(unsigned)(IBV_SEND_SIGNALED | IBV_SEND_INLINE | IBV_SEND_FENCE | IBV_SEND_SOLICITED))
        return -1;
    return ((f & IBV_SEND_FENCE) << 1) | (f & IBV_SEND_SOLICITED) | ((f & IBV_SEND_INLINE) << 2) |
           (q->sig_all ? 0 : silent);
}

static inline int vb_post_errno(int st)
{
    /* -EOPNOTSUPP: immediate data towards a peer that cannot take it (siw), which
     * siw's own provider refuses with EINVAL too. */
    return st == -EOPNOTSUPP ? EINVAL : nd_errno_of(st);
}

#endif
