// SPDX-License-Identifier: MIT
/* nd_adapter_query size probe and versions; creation checks of CQs and QPs; adapter lifetime. */
#include "t_util.h"

int main(void)
{
    nd_adapter *a = t_open_loopback(), *b = t_open_loopback();
    nd_adapter_info info = { .info_version = ND_VERSION_2 }, probe;
    uint32_t size = 0;
    nd_port *port;
    nd_cq *cq, *cq_b, *big;
    nd_qp *qp = NULL;

    /* Size probe with NULL, then too small, then right. */
    CHECK_ST(nd_adapter_query(a, NULL, &size), ND_BUFFER_OVERFLOW);
    CHECK(size == sizeof(nd_adapter_info));
    size = sizeof(info) - 1;
    CHECK_ST(nd_adapter_query(a, &info, &size), ND_BUFFER_OVERFLOW);
    CHECK(size == sizeof(info));
    CHECK_ST(nd_adapter_query(a, &info, NULL), ND_INVALID_PARAMETER_2);
    CHECK_ST(nd_adapter_query(a, &info, &size), ND_SUCCESS);
    CHECK(info.info_version == ND_VERSION_2);
    probe = (nd_adapter_info){ .info_version = ND_VERSION_1 };
    CHECK_ST(nd_adapter_query(a, &probe, &size), ND_SUCCESS);
    CHECK(probe.info_version == ND_VERSION_1 && probe.max_completion_queue_depth == info.max_completion_queue_depth);
    probe.info_version = 7;
    CHECK_ST(nd_adapter_query(a, &probe, &size), ND_INVALID_PARAMETER);
    CHECK_ST(nd_adapter_query(NULL, &info, &size), ND_INVALID_HANDLE);

    /* Limits that make sense together. */
    CHECK(info.max_read_sge <= info.max_initiator_sge);
    CHECK(info.max_receive_queue_depth == info.max_initiator_queue_depth);   /* as ND2 adapters report */
    CHECK(info.max_inline_data_size >= info.inline_request_threshold);
    CHECK(info.max_caller_data + 4 <= 256 && info.max_callee_data + 4 <= 256);
    CHECK(info.max_shared_receive_queue_depth > 0);
    CHECK(info.adapter_flags & ND_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED);
    CHECK(info.adapter_id != 0);

    CHECK_ST(nd_port_create(&port), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_completion_queue(a, port, 0, 0, 0, &cq), ND_INVALID_PARAMETER_3);
    CHECK_ST(nd_adapter_create_completion_queue(a, port, info.max_completion_queue_depth + 1, 0, 0, &cq),
             ND_INVALID_PARAMETER_3);
    CHECK_ST(nd_adapter_create_completion_queue(a, NULL, 16, 0, 0, &cq), ND_INVALID_PARAMETER_2);
    CHECK_ST(nd_adapter_create_completion_queue(a, port, 16, 0, 0, NULL), ND_INVALID_PARAMETER_6);
    CHECK_ST(nd_adapter_create_completion_queue(a, port, info.max_completion_queue_depth, 1, 0x3, &big), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_completion_queue(a, port, 64, 0, 0, &cq), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_completion_queue(b, port, 64, 0, 0, &cq_b), ND_SUCCESS);
    uint16_t group;
    uintptr_t affinity;
    CHECK_ST(nd_cq_get_notify_affinity(big, &group, &affinity), ND_SUCCESS);
    CHECK(group == 1 && affinity == 0x3);

    /* Queue-pair parameter checks, numbered as ND's CreateQueuePair (IID = 1). */
    uint32_t d = info.max_receive_queue_depth, s = info.max_initiator_sge;
    CHECK_ST(nd_adapter_create_queue_pair(a, NULL, cq, 0, d, d, 1, 1, 0, &qp), ND_INVALID_PARAMETER_2);
    CHECK_ST(nd_adapter_create_queue_pair(a, cq, cq_b, 0, d, d, 1, 1, 0, &qp), ND_INVALID_PARAMETER_3);
    CHECK_ST(nd_adapter_create_queue_pair(a, cq, cq, 0, d + 1, d, 1, 1, 0, &qp), ND_INVALID_PARAMETER_5);
    CHECK_ST(nd_adapter_create_queue_pair(a, cq, cq, 0, 0, d, 1, 1, 0, &qp), ND_INVALID_PARAMETER_5);
    CHECK_ST(nd_adapter_create_queue_pair(a, cq, cq, 0, d, d + 1, 1, 1, 0, &qp), ND_INVALID_PARAMETER_6);
    CHECK_ST(nd_adapter_create_queue_pair(a, cq, cq, 0, d, d, info.max_receive_sge + 1, 1, 0, &qp),
             ND_INVALID_PARAMETER_7);
    CHECK_ST(nd_adapter_create_queue_pair(a, cq, cq, 0, d, d, 1, s + 1, 0, &qp), ND_INVALID_PARAMETER_8);
    CHECK_ST(nd_adapter_create_queue_pair(a, cq, cq, 0, d, d, 1, 1, info.max_inline_data_size + 1, &qp),
             ND_INVALID_PARAMETER_9);
    /* Every maximum at once (ndqpmaxall). */
    CHECK_ST(nd_adapter_create_queue_pair(a, cq, cq, 0, d, d, info.max_receive_sge, s,
                                          info.max_inline_data_size, &qp), ND_SUCCESS);
    CHECK_ST(nd_cq_close(cq), ND_DEVICE_BUSY);      /* the QP uses it */
    CHECK_ST(nd_qp_close(qp), ND_SUCCESS);

    /* The adapter outlives its handle while objects use it. */
    CHECK_ST(nd_adapter_close(a), ND_SUCCESS);
    CHECK_ST(nd_cq_resize(cq, 128), ND_SUCCESS);
    CHECK_ST(nd_port_close(port), ND_DEVICE_BUSY);
    CHECK_ST(nd_cq_close(cq), ND_SUCCESS);
    CHECK_ST(nd_cq_close(big), ND_SUCCESS);
    CHECK_ST(nd_cq_close(cq_b), ND_SUCCESS);
    CHECK_ST(nd_port_close(port), ND_SUCCESS);
    CHECK_ST(nd_adapter_close(b), ND_SUCCESS);
    puts("adapter ok");
    return 0;
}
