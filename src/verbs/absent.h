// SPDX-License-Identifier: MIT
/*
 * Entry points that exist only so that binaries linked against rdma-core load (the loader
 * resolves every imported name, and Python's extension modules are opened RTLD_NOW), for
 * operations this device never serves: provider-internal calls, vendor (mlx5) direct verbs,
 * rsockets. Each fails as rdma-core does for a device that lacks the operation. They are
 * defined with a prototype of their own, not the header's: only the return convention
 * matters to a caller of a call that does nothing, and on the x86-64 and AArch64 calling
 * conventions arguments a callee ignores are harmless.
 *
 *   ABSENT_PTR(name, err)   returns NULL with errno err
 *   ABSENT_ERR(name, err)   returns err itself (rdma-core's "0 or an errno value" calls)
 *   ABSENT_NEG(name, err)   returns -1 with errno err (descriptor and byte-count calls)
 *   ABSENT_VOID(name)       does nothing
 */
#ifndef ND_VERBS_ABSENT_H
#define ND_VERBS_ABSENT_H

#include <errno.h>

#define ABSENT_EXPORT __attribute__((visibility("default")))

#define ABSENT_PTR(name, err)                                                                                      \
    ABSENT_EXPORT void *name(void);                                                                                \
    ABSENT_EXPORT void *name(void)                                                                                 \
    {                                                                                                              \
        errno = (err);                                                                                             \
        return 0;                                                                                                  \
    }

#define ABSENT_ERR(name, err)                                                                                      \
    ABSENT_EXPORT int name(void);                                                                                  \
    ABSENT_EXPORT int name(void)                                                                                   \
    {                                                                                                              \
        errno = (err);                                                                                             \
        return (err);                                                                                              \
    }

/* long, so that callers of an int, ssize_t or off_t call all read -1. */
#define ABSENT_NEG(name, err)                                                                                      \
    ABSENT_EXPORT long name(void);                                                                                 \
    ABSENT_EXPORT long name(void)                                                                                  \
    {                                                                                                              \
        errno = (err);                                                                                             \
        return -1;                                                                                                 \
    }

#define ABSENT_VOID(name)                                                                                          \
    ABSENT_EXPORT void name(void);                                                                                 \
    ABSENT_EXPORT void name(void)                                                                                  \
    {                                                                                                              \
    }

#endif
