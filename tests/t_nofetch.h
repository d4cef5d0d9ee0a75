/* SPDX-License-Identifier: MIT */
/* A process that cannot fetch descriptors from others, as on a kernel before 5.6. */
#ifndef T_NOFETCH_H
#define T_NOFETCH_H

#include "t_util.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

/* pidfd_getfd (and pidfd_open too when @open_too) fails with @err in this process from now
 * on: ENOSYS as a kernel before 5.6, EPERM as Docker's default seccomp profile. */
static inline void t_forbid_fetch(bool open_too, int err)
{
    long second = open_too ? SYS_pidfd_open : SYS_pidfd_getfd;
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_pidfd_getfd, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)second, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (uint32_t)err),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = { (unsigned short)(sizeof(f) / sizeof(f[0])), f };

    CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0);
}

#endif
