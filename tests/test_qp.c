// SPDX-License-Identifier: MIT
/*
 * Queue pairs without a peer: creation checks, posting statuses, NdReceiveFlushQP (flush an
 * unconnected QP with two receives, then Notify: completes, two ND_CANCELED results with
 * every field filled), requests after the flush complete ND_CANCELED, window binding needs
 * a connection, a post sees every change to the registration its previous post used.
 */
#include "t_util.h"

static nd_port *port;

int main(void)
{
    nd_adapter *a = t_open_loopback();
    static char buf[4096];
    nd_overlapped ov = { 0 }, *got;
    nd_result r[8];
    nd_cq *cq;
    nd_qp *qp;
    nd_mr *mr;
    nd_mw *mw;
    int ctx1, ctx2, ctx3, qpctx;

    CHECK_ST(nd_port_create(&port), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_completion_queue(a, port, 64, 0, 0, &cq), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_memory_region(a, port, &mr), ND_SUCCESS);
    CHECK_ST(nd_mr_register(mr, buf, sizeof(buf), ND_MR_FLAG_ALLOW_LOCAL_WRITE, &ov), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_queue_pair(a, cq, cq, &qpctx, 4, 4, 2, 2, 64, &qp), ND_SUCCESS);

    nd_sge sge[3] = { { buf, 100, nd_mr_get_local_token(mr) }, { buf + 100, 100, nd_mr_get_local_token(mr) },
                      { buf + 200, 100, nd_mr_get_local_token(mr) } };
    nd_sge bad = { buf, 16, nd_mr_get_local_token(mr) ^ 0x10 };
    nd_sge huge[2] = { { buf, 1u << 30, nd_mr_get_local_token(mr) }, { buf, 1, nd_mr_get_local_token(mr) } };

    /* Receive posting statuses. */
    CHECK_ST(nd_qp_receive(qp, NULL, sge, 3), ND_DATA_OVERRUN);
    CHECK_ST(nd_qp_receive(qp, NULL, NULL, 1), ND_INVALID_PARAMETER_2);
    CHECK_ST(nd_qp_receive(qp, NULL, huge, 2), ND_BUFFER_OVERFLOW);
    CHECK_ST(nd_qp_receive(qp, NULL, &bad, 1), ND_ACCESS_VIOLATION);
    /* Initiator requests need a connection. */
    CHECK_ST(nd_qp_send(qp, NULL, sge, 1, 0), ND_CONNECTION_INVALID);
    CHECK_ST(nd_qp_send(qp, NULL, sge, 1, 0x40), ND_INVALID_PARAMETER_4);
    CHECK_ST(nd_qp_send(qp, NULL, sge, 3, 0), ND_DATA_OVERRUN);
    CHECK_ST(nd_qp_send(qp, NULL, sge, 3, ND_OP_FLAG_INLINE), ND_BUFFER_OVERFLOW);   /* 300 > inline 64 */
    CHECK_ST(nd_qp_write(qp, NULL, sge, 1, 0, 0, ND_OP_FLAG_SEND_AND_SOLICIT_EVENT), ND_INVALID_PARAMETER_6);
    CHECK_ST(nd_qp_read(qp, NULL, sge, 1, 0, 0, ND_OP_FLAG_INLINE), ND_INVALID_PARAMETER_6);
    CHECK_ST(nd_qp_read(qp, NULL, sge, 1, 0, 0, 0), ND_CONNECTION_INVALID);
    CHECK_ST(nd_adapter_create_memory_window(a, &mw), ND_SUCCESS);
    CHECK_ST(nd_qp_bind(qp, NULL, mr, mw, buf, 64, 0x40), ND_INVALID_PARAMETER_6);
    CHECK_ST(nd_qp_bind(qp, NULL, mr, mw, buf, 64, 0), ND_CONNECTION_INVALID);   /* no rights: legal */
    CHECK_ST(nd_qp_bind(qp, NULL, mr, mw, buf, 64, ND_OP_FLAG_ALLOW_WRITE), ND_CONNECTION_INVALID);
    CHECK_ST(nd_qp_bind(qp, NULL, mr, mw, buf, sizeof(buf) + 1, ND_OP_FLAG_ALLOW_READ), ND_ACCESS_VIOLATION);
    CHECK_ST(nd_qp_invalidate(qp, NULL, mw, 0), ND_CONNECTION_INVALID);

    /* NdReceiveFlushQP */
    CHECK_ST(nd_qp_receive(qp, &ctx1, sge, 2), ND_SUCCESS);
    CHECK_ST(nd_qp_receive(qp, &ctx2, NULL, 0), ND_SUCCESS);
    CHECK(nd_cq_get_results(cq, r, 8) == 0);
    CHECK_ST(nd_qp_flush(qp), ND_SUCCESS);
    nd_status st = nd_cq_notify(cq, ND_CQ_NOTIFY_ANY, &ov);
    CHECK(st == ND_SUCCESS || st == ND_PENDING);
    if (st == ND_PENDING) {
        CHECK_ST(nd_port_wait(port, 5000, &got), ND_SUCCESS);
        CHECK(got == &ov);
    }
    CHECK(nd_cq_get_results(cq, r, 8) == 2);
    CHECK(r[0].status == ND_CANCELED && r[0].request_context == &ctx1 && r[0].qp_context == &qpctx &&
          r[0].request_type == ND_REQUEST_TYPE_RECEIVE);
    CHECK(r[1].status == ND_CANCELED && r[1].request_context == &ctx2 && r[1].qp_context == &qpctx &&
          r[1].request_type == ND_REQUEST_TYPE_RECEIVE);

    /* After the flush every request completes ND_CANCELED, and the queues recycle. */
    for (int round = 0; round < 20; round++) {
        CHECK_ST(nd_qp_receive(qp, &ctx3, sge, 1), ND_SUCCESS);
        CHECK_ST(nd_qp_send(qp, &ctx1, sge, 1, 0), ND_SUCCESS);
        CHECK_ST(nd_qp_send(qp, &ctx2, sge, 1, ND_OP_FLAG_SILENT_SUCCESS), ND_SUCCESS);   /* failures still complete */
        CHECK(nd_cq_get_results(cq, r, 8) == 3);
        for (int i = 0; i < 3; i++)
            CHECK(r[i].status == ND_CANCELED && r[i].qp_context == &qpctx);
    }
    /* A full queue says so. */
    for (int i = 0; i < 4; i++)
        CHECK_ST(nd_qp_receive(qp, NULL, NULL, 0), ND_SUCCESS);
    CHECK_ST(nd_qp_receive(qp, NULL, NULL, 0), ND_NO_MORE_ENTRIES);
    CHECK(nd_cq_get_results(cq, r, 8) == 4);
    CHECK_ST(nd_qp_receive(qp, NULL, NULL, 0), ND_SUCCESS);
    CHECK(nd_cq_get_results(cq, r, 8) == 1);

    /* A queue pair remembers the registration its last post used (nd_mtab_memo): every
     * change to a registration must be seen by the next post. */
    nd_qp *qp2;
    nd_mr *mr2;
    nd_sge in = { buf + 64, 64, nd_mr_get_local_token(mr) }, past = { buf + 4090, 16, in.memory_region_token };

    CHECK_ST(nd_adapter_create_queue_pair(a, cq, cq, &qpctx, 8, 4, 2, 2, 64, &qp2), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_memory_region(a, port, &mr2), ND_SUCCESS);
    CHECK_ST(nd_mr_register(mr2, buf, 128, 0, &ov), ND_SUCCESS);     /* no local write */
    CHECK_ST(nd_qp_receive(qp2, NULL, &in, 1), ND_SUCCESS);
    CHECK_ST(nd_qp_receive(qp2, NULL, &past, 1), ND_ACCESS_VIOLATION);   /* same token, out of range */
    CHECK_ST(nd_qp_receive(qp2, NULL, &(nd_sge){ buf, 8, nd_mr_get_local_token(mr2) }, 1), ND_ACCESS_VIOLATION);
    CHECK_ST(nd_qp_receive(qp2, NULL, &in, 1), ND_SUCCESS);
    CHECK_ST(nd_mr_deregister(mr, &ov), ND_SUCCESS);
    CHECK_ST(nd_qp_receive(qp2, NULL, &in, 1), ND_ACCESS_VIOLATION);
    CHECK_ST(nd_mr_register(mr, buf, 256, ND_MR_FLAG_ALLOW_LOCAL_WRITE, &ov), ND_SUCCESS);
    CHECK_ST(nd_qp_receive(qp2, NULL, &in, 1), ND_ACCESS_VIOLATION);     /* the old token */
    in.memory_region_token = nd_mr_get_local_token(mr);
    CHECK_ST(nd_qp_receive(qp2, NULL, &in, 1), ND_SUCCESS);
    in.buffer = buf + 250;                                                /* past the new, shorter range */
    CHECK_ST(nd_qp_receive(qp2, NULL, &in, 1), ND_ACCESS_VIOLATION);
    CHECK_ST(nd_qp_close(qp2), ND_SUCCESS);
    CHECK_ST(nd_mr_close(mr2), ND_SUCCESS);

    CHECK_ST(nd_cq_close(cq), ND_DEVICE_BUSY);
    CHECK_ST(nd_qp_close(qp), ND_SUCCESS);
    CHECK_ST(nd_qp_close(NULL), ND_INVALID_HANDLE);
    CHECK_ST(nd_mw_close(mw), ND_SUCCESS);
    CHECK_ST(nd_mr_close(mr), ND_SUCCESS);
    CHECK_ST(nd_cq_close(cq), ND_SUCCESS);
    CHECK_ST(nd_port_close(port), ND_SUCCESS);
    CHECK_ST(nd_adapter_close(a), ND_SUCCESS);
    puts("queue pair (unconnected) ok");
    return 0;
}
