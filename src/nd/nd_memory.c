// SPDX-License-Identifier: MIT
/* ND's entry points for memory regions and windows: the core's door in NTSTATUS. */
#include "nd.h"

/* ND's registrations complete before they return, but take a request as an asynchronous
 * call would: @ov, argument @arg, must be one a call could start. */
static int request_usable(const nd_overlapped *ov, int arg)
{
    if (!ov)
        return ND_EARG(arg);
    return nd_ov_is_pending(ov) ? -EINVAL : 0; /* still in use by an earlier request */
}

ND_ENTRY(adapter_create_memory_region, (nd_adapter *a, nd_port *port, nd_mr **out), (a, port, out))

ND_API nd_status nd_mr_register(nd_mr *mr, const void *buf, size_t len, uint32_t flags, nd_overlapped *ov)
{
    int st = request_usable(ov, 4);

    return nd_ntstatus(st ? st : ndc_mr_register(mr, buf, len, flags));
}

ND_API nd_status nd_mr_deregister(nd_mr *mr, nd_overlapped *ov)
{
    int st = request_usable(ov, 1);

    return nd_ntstatus(st ? st : ndc_mr_deregister(mr));
}

ND_API uint32_t nd_mr_get_local_token(nd_mr *mr)
{
    return ndc_mr_get_local_token(mr);
}

ND_API uint32_t nd_mr_get_remote_token(nd_mr *mr)
{
    return ndc_mr_get_remote_token(mr);
}

ND_ENTRY(mr_cancel_overlapped_requests, (nd_mr *mr), (mr))

ND_ENTRY(mr_get_overlapped_result, (nd_mr *mr, nd_overlapped *ov, int wait), (mr, ov, wait))

ND_ENTRY(mr_close, (nd_mr *mr), (mr))

ND_ENTRY(adapter_create_memory_window, (nd_adapter *a, nd_mw **out), (a, out))

ND_API uint32_t nd_mw_get_remote_token(nd_mw *mw)
{
    return ndc_mw_get_remote_token(mw);
}

ND_ENTRY(mw_close, (nd_mw *mw), (mw))
