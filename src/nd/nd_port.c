// SPDX-License-Identifier: MIT
/* ND's entry points for completion ports and overlapped requests: the core's door in NTSTATUS. */
#include "nd.h"

ND_API nd_status nd_get_overlapped_result(nd_overlapped *ov, int wait)
{
    return nd_ntstatus(ndc_get_overlapped_result(ov, wait));
}

ND_API nd_status nd_port_create(nd_port **out)
{
    return nd_ntstatus(ndc_port_create(out));
}

ND_API nd_status nd_port_close(nd_port *port)
{
    return nd_ntstatus(ndc_port_close(port));
}

ND_API int nd_port_fd(const nd_port *cport)
{
    return ndc_port_fd(cport);
}

ND_API nd_status nd_port_wait(nd_port *port, int timeout_ms, nd_overlapped **out)
{
    return nd_ntstatus(ndc_port_wait(port, timeout_ms, out));
}

ND_API nd_status nd_port_post(nd_port *port, nd_overlapped *ov, nd_status status, uint64_t bytes)
{
    return nd_ntstatus(ndc_port_post(port, ov, nd_core_status_of(status), bytes));
}
