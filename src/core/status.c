// SPDX-License-Identifier: MIT
#include "core.h"

#include <stdio.h>
#include <string.h>

const char *nd_err_name(int st)
{
    static __thread char buf[32];
    const char *name;

    if (st == 0)
        return "success";
    if (nd_err_is_arg(st)) {
        snprintf(buf, sizeof(buf), "invalid argument %d", ND_EARG(0) - st);
        return buf;
    }
    name = st < 0 ? strerrorname_np(-st) : NULL;
    if (name)
        return name;
    snprintf(buf, sizeof(buf), "status %#x", (unsigned)st);
    return buf;
}

int nd_errno_of(int st)
{
    switch (st) {
    case 0: case -EINPROGRESS: return 0;
    case -ENOMEM: case -ENOBUFS: case -ENOSPC: return ENOMEM;
    case -ETIME: case -ETIMEDOUT: return ETIMEDOUT;
    case -EFAULT: case -EBUSY: case -EOPNOTSUPP: case -ECONNREFUSED: case -ENETUNREACH:
    case -EHOSTUNREACH: case -EADDRNOTAVAIL: case -EADDRINUSE: case -EISCONN:
    case -ECONNABORTED: case -ECANCELED:
        return -st;
    default: return EINVAL;
    }
}

enum nd_wc_status nd_wc_status_of(int st, nd_request_type type, bool local)
{
    switch (st) {
    case 0: return ND_WCS_SUCCESS;
    case -ECANCELED: return ND_WCS_FLUSHED;
    default: break;
    }
    if (type == ND_REQUEST_TYPE_BIND)
        return ND_WCS_MW_BIND;
    switch (st) {
    /* A receive's buffer is always its own memory: an RNIC calls it local protection. */
    case -EFAULT:
        return local || type == ND_REQUEST_TYPE_RECEIVE ? ND_WCS_LOC_PROT : ND_WCS_REM_ACCESS;
    case -EMSGSIZE:
    case -EOVERFLOW: return ND_WCS_LOC_LEN;
    case -ETIMEDOUT: return ND_WCS_RNR_RETRY;
    case -ECONNABORTED: return ND_WCS_RETRY_EXC;
    case -EBADRQC: return ND_WCS_REM_INV_REQ;
    case -EREMOTEIO: return ND_WCS_REM_OP;
    case -EOPNOTSUPP: return ND_WCS_LOC_QP_OP;
    default: return ND_WCS_GENERAL;
    }
}
