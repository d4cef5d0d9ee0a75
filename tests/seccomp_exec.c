// SPDX-License-Identifier: MIT
/*
 * Runs a command under a seccomp filter that refuses, with EPERM, what container runtimes
 * refuse a process without CAP_SYS_PTRACE (Docker's and Podman's default profiles):
 *   seccomp_exec fetch -- CMD...   pidfd_getfd
 *   seccomp_exec cma -- CMD...     process_vm_readv and process_vm_writev
 *   seccomp_exec all -- CMD...     all three
 * The filter is inherited by every child and survives exec (no_new_privs is set, so no
 * privilege is needed). Exit 2 on bad usage, 1 when the filter cannot be installed.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define DENY(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM)

static int install(bool fetch, bool cma)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        DENY(fetch ? SYS_pidfd_getfd : 0xffffffffu),
        DENY(cma ? SYS_process_vm_readv : 0xffffffffu),
        DENY(cma ? SYS_process_vm_writev : 0xffffffffu),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = { (unsigned short)(sizeof(f) / sizeof(f[0])), f };

    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    bool fetch, cma;

    if (argc < 4 || strcmp(argv[2], "--") != 0) {
        fprintf(stderr, "usage: %s fetch|cma|all -- command [args...]\n", argv[0]);
        return 2;
    }
    fetch = !strcmp(argv[1], "fetch") || !strcmp(argv[1], "all");
    cma = !strcmp(argv[1], "cma") || !strcmp(argv[1], "all");
    if (!fetch && !cma) {
        fprintf(stderr, "%s: unknown rule set %s\n", argv[0], argv[1]);
        return 2;
    }
    if (install(fetch, cma) != 0) {
        perror("seccomp");
        return 1;
    }
    execvp(argv[3], argv + 3);
    perror(argv[3]);
    return 127;
}
