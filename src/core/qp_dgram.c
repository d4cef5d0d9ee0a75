// SPDX-License-Identifier: MIT
/* Datagram queue pairs (UD): created on the datagram transport, which they keep for life. */
#include "qp_int.h"
#include "transport.h"
#include "transports/udp/udp.h"

int nd_qp_create_datagram(struct nd_adapter *a, struct nd_cq *rcq, struct nd_cq *icq, void *context,
                          const struct nd_qp_sizes *sizes, uint32_t max_msg, struct nd_qp **out, uint32_t *qpn)
{
    struct nd_qp *qp;
    uint16_t port;
    int st;

    st = nd_qp_create_kind(a, rcq, icq, NULL, context, sizes, ND_QPS_RESET, true, &qp);
    if (st != 0)
        return st;
    qp->dgram_max = max_msg;
    st = udp_open(qp, &port);
    if (st != 0) {
        ndc_qp_close(qp);
        return st;
    }
    *qpn = ND_DGRAM_QPN(port);
    *out = qp;
    return 0;
}

void nd_qp_set_qkey(nd_qp *qp, uint32_t qkey)
{
    atomic_store_explicit(&qp->qkey, qkey, memory_order_relaxed);
}
