// SPDX-License-Identifier: MIT
/* Status values are ND's NTSTATUS values; nd_strerror names each; severity follows FAILED(). */
#include "t_util.h"

#include <stddef.h>
#if __has_include(<infiniband/verbs.h>)
#include <infiniband/verbs.h>
#define HAVE_IBV_SGE 1
#endif

static const struct {
    nd_status code;
    uint32_t value;
    const char *name;
} expect[] = {
    { ND_SUCCESS, 0x00000000, "ND_SUCCESS" },
    { ND_TIMEOUT, 0x00000102, "ND_TIMEOUT" },
    { ND_PENDING, 0x00000103, "ND_PENDING" },
    { ND_BUFFER_OVERFLOW, 0x80000005, "ND_BUFFER_OVERFLOW" },
    { ND_DEVICE_BUSY, 0x80000011, "ND_DEVICE_BUSY" },
    { ND_NO_MORE_ENTRIES, 0x8000001A, "ND_NO_MORE_ENTRIES" },
    { ND_UNSUCCESSFUL, 0xC0000001, "ND_UNSUCCESSFUL" },
    { ND_ACCESS_VIOLATION, 0xC0000005, "ND_ACCESS_VIOLATION" },
    { ND_INVALID_HANDLE, 0xC0000008, "ND_INVALID_HANDLE" },
    { ND_INVALID_PARAMETER, 0xC000000D, "ND_INVALID_PARAMETER" },
    { ND_INVALID_DEVICE_REQUEST, 0xC0000010, "ND_INVALID_DEVICE_REQUEST" },
    { ND_NO_MEMORY, 0xC0000017, "ND_NO_MEMORY" },
    { ND_INVALID_PARAMETER_MIX, 0xC0000030, "ND_INVALID_PARAMETER_MIX" },
    { ND_DATA_OVERRUN, 0xC000003C, "ND_DATA_OVERRUN" },
    { ND_SHARING_VIOLATION, 0xC0000043, "ND_SHARING_VIOLATION" },
    { ND_INSUFFICIENT_RESOURCES, 0xC000009A, "ND_INSUFFICIENT_RESOURCES" },
    { ND_DEVICE_NOT_READY, 0xC00000A3, "ND_DEVICE_NOT_READY" },
    { ND_IO_TIMEOUT, 0xC00000B5, "ND_IO_TIMEOUT" },
    { ND_NOT_SUPPORTED, 0xC00000BB, "ND_NOT_SUPPORTED" },
    { ND_INTERNAL_ERROR, 0xC00000E5, "ND_INTERNAL_ERROR" },
    { ND_INVALID_PARAMETER_1, 0xC00000EF, "ND_INVALID_PARAMETER_1" },
    { ND_INVALID_PARAMETER_10, 0xC00000F8, "ND_INVALID_PARAMETER_10" },
    { ND_CANCELED, 0xC0000120, "ND_CANCELED" },
    { ND_REMOTE_ERROR, 0xC000013D, "ND_REMOTE_ERROR" },
    { ND_INVALID_ADDRESS, 0xC0000141, "ND_INVALID_ADDRESS" },
    { ND_INVALID_DEVICE_STATE, 0xC0000184, "ND_INVALID_DEVICE_STATE" },
    { ND_INVALID_BUFFER_SIZE, 0xC0000206, "ND_INVALID_BUFFER_SIZE" },
    { ND_TOO_MANY_ADDRESSES, 0xC0000209, "ND_TOO_MANY_ADDRESSES" },
    { ND_ADDRESS_ALREADY_EXISTS, 0xC000020A, "ND_ADDRESS_ALREADY_EXISTS" },
    { ND_CONNECTION_REFUSED, 0xC0000236, "ND_CONNECTION_REFUSED" },
    { ND_CONNECTION_INVALID, 0xC000023A, "ND_CONNECTION_INVALID" },
    { ND_CONNECTION_ACTIVE, 0xC000023B, "ND_CONNECTION_ACTIVE" },
    { ND_NETWORK_UNREACHABLE, 0xC000023C, "ND_NETWORK_UNREACHABLE" },
    { ND_HOST_UNREACHABLE, 0xC000023D, "ND_HOST_UNREACHABLE" },
    { ND_CONNECTION_ABORTED, 0xC0000241, "ND_CONNECTION_ABORTED" },
    { ND_DEVICE_REMOVED, 0xC00002B6, "ND_DEVICE_REMOVED" },
    { STATUS_DATA_ERROR, 0xC000003E, "STATUS_DATA_ERROR" },
    { STATUS_BAD_NETWORK_NAME, 0xC00000CC, "STATUS_BAD_NETWORK_NAME" },
    { STATUS_CONNECTION_DISCONNECTED, 0xC000020C, "STATUS_CONNECTION_DISCONNECTED" },
    { STATUS_ADDRESS_ALREADY_ASSOCIATED, 0xC0000238, "STATUS_ADDRESS_ALREADY_ASSOCIATED" },
    { STATUS_ADDRESS_NOT_ASSOCIATED, 0xC0000239, "STATUS_ADDRESS_NOT_ASSOCIATED" },
    { STATUS_REQUEST_ABORTED, 0xC0000240, "STATUS_REQUEST_ABORTED" },
    { STATUS_TOO_MANY_COMMANDS, 0xC00000C1, "STATUS_TOO_MANY_COMMANDS" },
};

int main(void)
{
    for (size_t i = 0; i < sizeof(expect) / sizeof(expect[0]); i++) {
        CHECK((uint32_t)expect[i].code == expect[i].value);
        if (strcmp(nd_strerror(expect[i].code), expect[i].name)) {
            fprintf(stderr, "nd_strerror(0x%08x) = %s, want %s\n", expect[i].value,
                    nd_strerror(expect[i].code), expect[i].name);
            return 1;
        }
    }
    CHECK(!strcmp(nd_strerror(ND_STATUS_(0x12345678u)), "ND_UNKNOWN_STATUS"));
    /* Warnings are failures; ND_TIMEOUT and ND_PENDING are successes (ND2's NT_SUCCESS rule). */
    CHECK(ND_FAILED(ND_BUFFER_OVERFLOW) && ND_FAILED(ND_DEVICE_BUSY) && ND_FAILED(ND_NO_MORE_ENTRIES));
    CHECK(ND_SUCCEEDED(ND_TIMEOUT) && ND_SUCCEEDED(ND_PENDING) && ND_FAILED(ND_CANCELED));
    CHECK(ND_LOCAL_LENGTH == ND_DATA_OVERRUN && ND_INVALIDATION_ERROR == ND_INVALID_DEVICE_REQUEST);
    /* Flag values of nddef.h. */
    CHECK(ND_MR_FLAG_ALLOW_REMOTE_WRITE == 0x5 && (ND_MR_FLAG_ALLOW_REMOTE_WRITE & ND_MR_FLAG_ALLOW_LOCAL_WRITE));
    CHECK(ND_OP_FLAG_INLINE == 0x20 && ND_CQ_NOTIFY_SOLICITED == 2 && ND_REQUEST_TYPE_WRITE == 5);
    CHECK(ND_VERSION_2 == 0x20000);
    /* ND2_RESULT and ND2_SGE widths on LP64. */
    CHECK(sizeof(nd_sge) == 16 && offsetof(nd_sge, memory_region_token) == 12);
    CHECK(offsetof(nd_result, qp_context) == 8 && offsetof(nd_result, request_type) == 24);
    CHECK(offsetof(nd_adapter_info, adapter_id) == 8 && offsetof(nd_adapter_info, max_initiator_sge) == 32);
#ifdef HAVE_IBV_SGE
    CHECK(sizeof(nd_sge) == sizeof(struct ibv_sge));
    CHECK(offsetof(nd_sge, buffer) == offsetof(struct ibv_sge, addr));
    CHECK(offsetof(nd_sge, buffer_length) == offsetof(struct ibv_sge, length));
    CHECK(offsetof(nd_sge, memory_region_token) == offsetof(struct ibv_sge, lkey));
    puts("nd_sge layout checked against struct ibv_sge");
#endif
    puts("status codes ok");
    return 0;
}
