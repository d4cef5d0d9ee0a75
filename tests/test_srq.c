// SPDX-License-Identifier: MIT
/* SRQ: creation checks, receive posting statuses, Modify, the threshold notify, cancellation. */
#include "t_util.h"
#include <netdirect/netdirect.h>
#include "core/srq_int.h"

#include <sys/mman.h>

/* Play the peer: claim the oldest posted slot through the shared region, then complete it. */
static void *region;
static struct nd_srq_layout lay;
static uint32_t entries;

static bool take(nd_srq *srq, uint32_t bytes, nd_result *r)
{
    struct nd_cqe e = { .type = ND_REQUEST_TYPE_RECEIVE, .bytes = bytes };
    uint32_t slot;
    bool overrun;

    if (nd_srq_claim(region, (uint32_t *)((uint8_t *)region + lay.ring), entries, &slot) != 1)
        return false;
    e.wr_index = slot;
    CHECK(nd_srq_complete(srq, slot, &e, NULL, r, &overrun) == ND_XLATE_OK);
    CHECK(!overrun || bytes > 16);
    return true;
}


int main(void)
{
    nd_adapter *a = t_open_loopback();
    nd_adapter_info info = { .info_version = ND_VERSION_2 };
    uint32_t size = sizeof(info);
    nd_overlapped ov1 = { 0 }, ov2 = { 0 }, *got;
    nd_sge sges[32];
    nd_result res;
    static char buf[64];
    nd_port *port;
    nd_srq *srq;

    CHECK_ST(nd_adapter_query(a, &info, &size), ND_SUCCESS);
    CHECK_ST(nd_port_create(&port), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_shared_receive_queue(a, port, 0, 1, 0, 0, 0, &srq), ND_INVALID_PARAMETER_3);
    CHECK_ST(nd_adapter_create_shared_receive_queue(a, port, info.max_shared_receive_queue_depth + 1, 1, 0, 0, 0,
                                                    &srq), ND_INVALID_PARAMETER_3);
    CHECK_ST(nd_adapter_create_shared_receive_queue(a, port, 8, 0, 0, 0, 0, &srq), ND_INVALID_PARAMETER_4);
    CHECK_ST(nd_adapter_create_shared_receive_queue(a, port, 8, info.max_receive_sge + 1, 0, 0, 0, &srq),
             ND_INVALID_PARAMETER_4);
    CHECK_ST(nd_adapter_create_shared_receive_queue(a, NULL, 8, 1, 0, 0, 0, &srq), ND_INVALID_PARAMETER_2);
    CHECK_ST(nd_adapter_create_shared_receive_queue(a, port, 8, 2, 3, 1, 2, &srq), ND_SUCCESS);

    nd_mr *mr;
    nd_overlapped rov = { 0 };
    CHECK_ST(nd_adapter_create_memory_region(a, port, &mr), ND_SUCCESS);
    CHECK_ST(nd_mr_register(mr, buf, sizeof(buf), ND_MR_FLAG_ALLOW_LOCAL_WRITE, &rov), ND_SUCCESS);
    for (int i = 0; i < 32; i++)
        sges[i] = (nd_sge){ .buffer = buf, .buffer_length = 8, .memory_region_token = nd_mr_get_local_token(mr) };
    nd_sge unreg = { buf, 8, nd_mr_get_local_token(mr) + 1 };
    CHECK_ST(nd_srq_receive(srq, NULL, &unreg, 1), ND_ACCESS_VIOLATION);
    CHECK_ST(nd_srq_receive(srq, NULL, sges, 3), ND_DATA_OVERRUN);     /* more SGEs than max_request_sge */
    CHECK_ST(nd_srq_receive(srq, NULL, NULL, 1), ND_INVALID_PARAMETER_2);
    nd_sge huge[2] = { { buf, 1u << 30, sges[0].memory_region_token }, { buf, 1, sges[0].memory_region_token } };
    CHECK_ST(nd_srq_receive(srq, NULL, huge, 2), ND_BUFFER_OVERFLOW);  /* over max_transfer_length */
    CHECK_ST(nd_srq_receive(srq, (void *)1, NULL, 0), ND_SUCCESS);     /* zero-byte receive */
    for (uintptr_t i = 2; i <= 8; i++)
        CHECK_ST(nd_srq_receive(srq, (void *)i, sges, 2), ND_SUCCESS);
    CHECK_ST(nd_srq_receive(srq, (void *)9, sges, 1), ND_NO_MORE_ENTRIES);
    /* The SRQ remembers the registration its last post used: a deregistration is seen. */
    nd_mr *mr3;
    CHECK_ST(nd_adapter_create_memory_region(a, port, &mr3), ND_SUCCESS);
    CHECK_ST(nd_mr_register(mr3, buf, sizeof(buf), ND_MR_FLAG_ALLOW_LOCAL_WRITE, &rov), ND_SUCCESS);
    nd_sge s3 = { buf, 8, nd_mr_get_local_token(mr3) };
    CHECK_ST(nd_srq_receive(srq, NULL, &s3, 1), ND_NO_MORE_ENTRIES);   /* registered; the queue is full */
    CHECK_ST(nd_mr_deregister(mr3, &rov), ND_SUCCESS);
    CHECK_ST(nd_srq_receive(srq, NULL, &s3, 1), ND_ACCESS_VIOLATION);
    CHECK_ST(nd_mr_close(mr3), ND_SUCCESS);
    struct nd_srq_share share;
    nd_srq_export(srq, &share);
    entries = share.entries;
    nd_srq_layout(share.entries, share.max_sge, &lay);
    region = mmap(NULL, lay.size, PROT_READ | PROT_WRITE, MAP_SHARED, share.region.fd, 0);
    CHECK(region != MAP_FAILED);

    /* Modify: depth below what is posted fails and changes nothing; growing keeps order. */
    CHECK_ST(nd_srq_modify(srq, 7, 0), ND_BUFFER_OVERFLOW);
    CHECK_ST(nd_srq_modify(srq, info.max_shared_receive_queue_depth + 1, 0), ND_INVALID_PARAMETER_1);
    CHECK_ST(nd_srq_modify(srq, 16, 0), ND_SUCCESS);
    CHECK_ST(nd_srq_receive(srq, (void *)9, sges, 1), ND_SUCCESS);

    /* Threshold 3: notifies pend while 3 or more are posted; one event releases all. */
    CHECK_ST(nd_srq_notify(srq, &ov1), ND_PENDING);
    CHECK_ST(nd_srq_notify(srq, &ov2), ND_PENDING);
    for (uintptr_t i = 1; i <= 6; i++) {
        CHECK(take(srq, i == 1 ? 0 : 16, &res));
        CHECK(res.request_context == (void *)i && res.status == ND_SUCCESS);   /* FIFO */
        CHECK(res.bytes_transferred == (i == 1 ? 0u : 16u));
        CHECK_ST(nd_port_wait(port, 0, &got), ND_TIMEOUT);    /* 8..3 posted: not below 3 */
    }
    CHECK(take(srq, 16, &res));                   /* 2 posted now */
    CHECK(res.request_context == (void *)7);
    CHECK_ST(nd_port_wait(port, 0, &got), ND_SUCCESS);
    CHECK(got == &ov1 && ov1.status == ND_SUCCESS);
    CHECK_ST(nd_port_wait(port, 0, &got), ND_SUCCESS);
    CHECK(got == &ov2);
    /* Already below the threshold: a new notify completes at once. */
    CHECK_ST(nd_srq_notify(srq, &ov1), ND_SUCCESS);
    /* Raise the count, lower the threshold to 1, then cancel pending notifies in order. */
    for (uintptr_t i = 10; i < 14; i++)
        CHECK_ST(nd_srq_receive(srq, (void *)i, sges, 1), ND_SUCCESS);
    CHECK_ST(nd_srq_modify(srq, 0, 1), ND_SUCCESS);
    CHECK_ST(nd_srq_notify(srq, &ov1), ND_PENDING);
    CHECK_ST(nd_srq_notify(srq, &ov2), ND_PENDING);
    CHECK_ST(nd_srq_cancel_overlapped_requests(srq), ND_SUCCESS);
    CHECK_ST(nd_port_wait(port, 0, &got), ND_SUCCESS);
    CHECK(got == &ov1 && ov1.status == ND_CANCELED);
    CHECK_ST(nd_port_wait(port, 0, &got), ND_SUCCESS);
    CHECK(got == &ov2 && nd_srq_get_overlapped_result(srq, &ov2, 1) == ND_CANCELED);

    uint16_t group;
    uintptr_t aff;
    CHECK_ST(nd_srq_get_notify_affinity(srq, &group, &aff), ND_SUCCESS);
    CHECK(group == 1 && aff == 2);
    /* Closing cancels a pending notify. */
    CHECK_ST(nd_srq_notify(srq, &ov1), ND_PENDING);
    CHECK_ST(nd_srq_close(srq), ND_SUCCESS);
    CHECK_ST(nd_port_wait(port, 0, &got), ND_SUCCESS);
    CHECK(got == &ov1 && ov1.status == ND_CANCELED);

    /* Threshold 0 disables the event. */
    CHECK_ST(nd_adapter_create_shared_receive_queue(a, port, 4, 1, 0, 0, 0, &srq), ND_SUCCESS);
    CHECK_ST(nd_srq_notify(srq, &ov1), ND_INVALID_DEVICE_STATE);
    CHECK_ST(nd_srq_close(srq), ND_SUCCESS);
    CHECK_ST(nd_mr_close(mr), ND_SUCCESS);
    munmap(region, lay.size);
    CHECK_ST(nd_port_close(port), ND_SUCCESS);
    CHECK_ST(nd_adapter_close(a), ND_SUCCESS);
    puts("srq ok");
    return 0;
}
