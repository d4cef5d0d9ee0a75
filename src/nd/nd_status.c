// SPDX-License-Identifier: MIT
/* ND's statuses: the one table between the core's status and NTSTATUS, and their names. */
#include "nd.h"

static const struct {
    int core;
    nd_status nt;
} statuses[] = {
    { -EINPROGRESS, ND_PENDING },
    { -ETIME, ND_TIMEOUT },
    { -EOVERFLOW, ND_BUFFER_OVERFLOW },
    { -EBUSY, ND_DEVICE_BUSY },
    { -ENOSPC, ND_NO_MORE_ENTRIES },
    { -EFAULT, ND_ACCESS_VIOLATION },
    { -EBADF, ND_INVALID_HANDLE },
    { -EINVAL, ND_INVALID_PARAMETER },
    { -EBADRQC, ND_INVALID_DEVICE_REQUEST },
    { -EREMOTEIO, STATUS_DATA_ERROR },  /* as mlx4nd2 maps a remote operation error */
    { -ENOMEM, ND_NO_MEMORY },
    { ND_EARG_MIX, ND_INVALID_PARAMETER_MIX },
    { -EMSGSIZE, ND_DATA_OVERRUN },
    { -ENOBUFS, ND_INSUFFICIENT_RESOURCES },
    { -ETIMEDOUT, ND_IO_TIMEOUT },
    { -EOPNOTSUPP, ND_NOT_SUPPORTED },
    { -EIO, ND_INTERNAL_ERROR },
    { -ECANCELED, ND_CANCELED },
    { -EADDRNOTAVAIL, ND_INVALID_ADDRESS },
    { -EBADFD, ND_INVALID_DEVICE_STATE },
    { -ERANGE, ND_INVALID_BUFFER_SIZE },
    { -EMFILE, ND_TOO_MANY_ADDRESSES },
    { -ECONNREFUSED, ND_CONNECTION_REFUSED },
    { -ENOTCONN, ND_CONNECTION_INVALID },
    { -EISCONN, ND_CONNECTION_ACTIVE },
    { -ENETUNREACH, ND_NETWORK_UNREACHABLE },
    { -EHOSTUNREACH, ND_HOST_UNREACHABLE },
    { -ECONNABORTED, ND_CONNECTION_ABORTED },
    { -ESHUTDOWN, STATUS_CONNECTION_DISCONNECTED },
    { -ENODEV, STATUS_BAD_NETWORK_NAME },
    { -EADDRINUSE, STATUS_ADDRESS_ALREADY_ASSOCIATED },
    { -EDESTADDRREQ, STATUS_ADDRESS_NOT_ASSOCIATED },
};

/* The core's own range: errno values and ND_EARG; anything else passes through as it is. */
static bool core_range(int st)
{
    return st < 0 && st >= ND_EARG(ND_EARG_LAST);
}

nd_status nd_ntstatus_of(int st)
{
    if (st == 0 || !core_range(st))
        return (nd_status)st;
    if (nd_err_is_arg(st) && st != ND_EARG_MIX)
        return (nd_status)((uint32_t)ND_INVALID_PARAMETER_1 + (uint32_t)(ND_EARG(1) - st));
    for (size_t i = 0; i < ND_ARRAY_SIZE(statuses); i++)
        if (statuses[i].core == st)
            return statuses[i].nt;
    return ND_UNSUCCESSFUL;     /* an errno no call of the core returns */
}

int nd_core_status_of(nd_status nt)
{
    if (nt == ND_SUCCESS)
        return 0;
    if ((uint32_t)nt >= (uint32_t)ND_INVALID_PARAMETER_1 && (uint32_t)nt <= (uint32_t)ND_INVALID_PARAMETER_10)
        return ND_EARG(1) - (int)((uint32_t)nt - (uint32_t)ND_INVALID_PARAMETER_1);
    for (size_t i = 0; i < ND_ARRAY_SIZE(statuses); i++)
        if (statuses[i].nt == nt)
            return statuses[i].core;
    return core_range(nt) ? -EIO : nt;  /* a value ND never names in the core's range: a failure */
}

/* ND's programs read a request's status in its nd_overlapped themselves: as an NTSTATUS. */
static int32_t ov_shown(int st)
{
    return nd_ntstatus(st);
}

static const struct nd_status_codec ntstatus_codec = { .encode = ov_shown, .decode = nd_core_status_of };

__attribute__((constructor)) static void use_ntstatus_in_requests(void)
{
    nd_use_status_codec(&ntstatus_codec);
}

#define NAME(code) { code, #code }

static const struct {
    nd_status code;
    const char *name;
} names[] = {
    NAME(ND_SUCCESS), NAME(ND_TIMEOUT), NAME(ND_PENDING), NAME(ND_BUFFER_OVERFLOW),
    NAME(ND_DEVICE_BUSY), NAME(ND_NO_MORE_ENTRIES), NAME(ND_UNSUCCESSFUL),
    NAME(ND_ACCESS_VIOLATION), NAME(ND_INVALID_HANDLE), NAME(ND_INVALID_PARAMETER),
    NAME(ND_INVALID_DEVICE_REQUEST), NAME(ND_NO_MEMORY), NAME(ND_INVALID_PARAMETER_MIX),
    NAME(ND_DATA_OVERRUN), NAME(ND_SHARING_VIOLATION), NAME(ND_INSUFFICIENT_RESOURCES),
    NAME(ND_DEVICE_NOT_READY), NAME(ND_IO_TIMEOUT), NAME(ND_NOT_SUPPORTED),
    NAME(ND_INTERNAL_ERROR), NAME(ND_INVALID_PARAMETER_1), NAME(ND_INVALID_PARAMETER_2),
    NAME(ND_INVALID_PARAMETER_3), NAME(ND_INVALID_PARAMETER_4), NAME(ND_INVALID_PARAMETER_5),
    NAME(ND_INVALID_PARAMETER_6), NAME(ND_INVALID_PARAMETER_7), NAME(ND_INVALID_PARAMETER_8),
    NAME(ND_INVALID_PARAMETER_9), NAME(ND_INVALID_PARAMETER_10), NAME(ND_CANCELED),
    NAME(ND_REMOTE_ERROR), NAME(ND_INVALID_ADDRESS), NAME(ND_INVALID_DEVICE_STATE),
    NAME(ND_INVALID_BUFFER_SIZE), NAME(ND_TOO_MANY_ADDRESSES), NAME(ND_ADDRESS_ALREADY_EXISTS),
    NAME(ND_CONNECTION_REFUSED), NAME(ND_CONNECTION_INVALID), NAME(ND_CONNECTION_ACTIVE),
    NAME(ND_NETWORK_UNREACHABLE), NAME(ND_HOST_UNREACHABLE), NAME(ND_CONNECTION_ABORTED),
    NAME(ND_DEVICE_REMOVED), NAME(STATUS_DATA_ERROR), NAME(STATUS_BAD_NETWORK_NAME),
    NAME(STATUS_CONNECTION_DISCONNECTED), NAME(STATUS_ADDRESS_ALREADY_ASSOCIATED),
    NAME(STATUS_ADDRESS_NOT_ASSOCIATED), NAME(STATUS_REQUEST_ABORTED),
    NAME(STATUS_TOO_MANY_COMMANDS),
};

ND_API const char *nd_strerror(nd_status status)
{
    for (size_t i = 0; i < ND_ARRAY_SIZE(names); i++)
        if (names[i].code == status)
            return names[i].name;
    return "ND_UNKNOWN_STATUS";
}

ND_API const char *nd_version_string(void)
{
    return ND_VERSION_STRING;
}
