/* SPDX-License-Identifier: MIT */
/* Status codes: ND's NTSTATUS values, plus the extra codes real providers return. */
#ifndef NETDIRECT_STATUS_H
#define NETDIRECT_STATUS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * nd_status is ND's HRESULT: an NTSTATUS value in an int32_t. Severity lives in the top
 * two bits: success 0x0, warning 0x8, error 0xC. ND_FAILED() is the sign bit, so warnings
 * (ND_BUFFER_OVERFLOW from a size probe, ND_DEVICE_BUSY, ND_NO_MORE_ENTRIES) count as
 * failures while ND_TIMEOUT and ND_PENDING are successes, exactly as on Windows.
 */
typedef int32_t nd_status;

#define ND_STATUS_(v) ((nd_status)(int32_t)(uint32_t)(v))
#define ND_FAILED(s) ((nd_status)(s) < 0)
#define ND_SUCCEEDED(s) ((nd_status)(s) >= 0)

#define ND_SUCCESS                  ND_STATUS_(0x00000000u)
#define ND_TIMEOUT                  ND_STATUS_(0x00000102u)
#define ND_PENDING                  ND_STATUS_(0x00000103u)
#define ND_BUFFER_OVERFLOW          ND_STATUS_(0x80000005u)
#define ND_DEVICE_BUSY              ND_STATUS_(0x80000011u)
#define ND_NO_MORE_ENTRIES          ND_STATUS_(0x8000001Au)
#define ND_UNSUCCESSFUL             ND_STATUS_(0xC0000001u)
#define ND_ACCESS_VIOLATION         ND_STATUS_(0xC0000005u)
#define ND_INVALID_HANDLE           ND_STATUS_(0xC0000008u)
#define ND_INVALID_PARAMETER        ND_STATUS_(0xC000000Du)
#define ND_INVALID_DEVICE_REQUEST   ND_STATUS_(0xC0000010u)
#define ND_NO_MEMORY                ND_STATUS_(0xC0000017u)
#define ND_INVALID_PARAMETER_MIX    ND_STATUS_(0xC0000030u)
#define ND_DATA_OVERRUN             ND_STATUS_(0xC000003Cu)
#define ND_SHARING_VIOLATION        ND_STATUS_(0xC0000043u)
#define ND_INSUFFICIENT_RESOURCES   ND_STATUS_(0xC000009Au)
#define ND_DEVICE_NOT_READY         ND_STATUS_(0xC00000A3u)
#define ND_IO_TIMEOUT               ND_STATUS_(0xC00000B5u)
#define ND_NOT_SUPPORTED            ND_STATUS_(0xC00000BBu)
#define ND_INTERNAL_ERROR           ND_STATUS_(0xC00000E5u)
#define ND_INVALID_PARAMETER_1      ND_STATUS_(0xC00000EFu)
#define ND_INVALID_PARAMETER_2      ND_STATUS_(0xC00000F0u)
#define ND_INVALID_PARAMETER_3      ND_STATUS_(0xC00000F1u)
#define ND_INVALID_PARAMETER_4      ND_STATUS_(0xC00000F2u)
#define ND_INVALID_PARAMETER_5      ND_STATUS_(0xC00000F3u)
#define ND_INVALID_PARAMETER_6      ND_STATUS_(0xC00000F4u)
#define ND_INVALID_PARAMETER_7      ND_STATUS_(0xC00000F5u)
#define ND_INVALID_PARAMETER_8      ND_STATUS_(0xC00000F6u)
#define ND_INVALID_PARAMETER_9      ND_STATUS_(0xC00000F7u)
#define ND_INVALID_PARAMETER_10     ND_STATUS_(0xC00000F8u)
#define ND_CANCELED                 ND_STATUS_(0xC0000120u)
#define ND_REMOTE_ERROR             ND_STATUS_(0xC000013Du)
#define ND_INVALID_ADDRESS          ND_STATUS_(0xC0000141u)
#define ND_INVALID_DEVICE_STATE     ND_STATUS_(0xC0000184u)
#define ND_INVALID_BUFFER_SIZE      ND_STATUS_(0xC0000206u)
#define ND_TOO_MANY_ADDRESSES       ND_STATUS_(0xC0000209u)
#define ND_ADDRESS_ALREADY_EXISTS   ND_STATUS_(0xC000020Au)
#define ND_CONNECTION_REFUSED       ND_STATUS_(0xC0000236u)
#define ND_CONNECTION_INVALID       ND_STATUS_(0xC000023Au)
#define ND_CONNECTION_ACTIVE        ND_STATUS_(0xC000023Bu)
#define ND_NETWORK_UNREACHABLE      ND_STATUS_(0xC000023Cu)
#define ND_HOST_UNREACHABLE         ND_STATUS_(0xC000023Du)
#define ND_CONNECTION_ABORTED       ND_STATUS_(0xC0000241u)
#define ND_DEVICE_REMOVED           ND_STATUS_(0xC00002B6u)

/* Not in ndstatus.h, but returned by real providers and expected by ND's tests. */
#define STATUS_DATA_ERROR                  ND_STATUS_(0xC000003Eu)
#define STATUS_BAD_NETWORK_NAME            ND_STATUS_(0xC00000CCu)
#define STATUS_CONNECTION_DISCONNECTED     ND_STATUS_(0xC000020Cu)
#define STATUS_ADDRESS_ALREADY_ASSOCIATED  ND_STATUS_(0xC0000238u)
#define STATUS_ADDRESS_NOT_ASSOCIATED      ND_STATUS_(0xC0000239u)
#define STATUS_REQUEST_ABORTED             ND_STATUS_(0xC0000240u)
#define STATUS_TOO_MANY_COMMANDS           ND_STATUS_(0xC00000C1u)

/* ND v1 names kept by ndspi.h. */
#define ND_LOCAL_LENGTH        ND_DATA_OVERRUN
#define ND_INVALIDATION_ERROR  ND_INVALID_DEVICE_REQUEST

/*
 * nd_strerror - the symbolic name of a status ("ND_ACCESS_VIOLATION").
 * Returns a static string for every code above and "ND_UNKNOWN_STATUS" for anything
 * else; never NULL, never allocates, thread-safe.
 */
const char *nd_strerror(nd_status status);

#ifdef __cplusplus
}
#endif
#endif
