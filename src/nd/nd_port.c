// SPDX-License-Identifier: MIT
/* ND's entry points for completion ports and overlapped requests: the core's door in NTSTATUS. */
#include "nd.h"

ND_ENTRY(get_overlapped_result, (nd_overlapped *ov, int wait), (ov, wait))

ND_ENTRY(port_create, (nd_port **out), (out))

ND_ENTRY(port_close, (nd_port *port), (port))

ND_API int nd_port_fd(const nd_port *cport)
{
    return ndc_port_fd(cport);
}

ND_ENTRY(port_wait, (nd_port *port, int timeout_ms, nd_overlapped **out), (port, timeout_ms, out))

ND_API nd_status nd_port_post(nd_port *port, nd_overlapped *ov, nd_status status, uint64_t bytes)
{
    return nd_ntstatus(ndc_port_post(port, ov, nd_core_status_of(status), bytes));
}
