// SPDX-License-Identifier: MIT
/*
 * nd_info says which same-host path this host allows and why: run under a seccomp filter
 * that refuses pidfd_getfd with EPERM (as Docker's default profile does without
 * CAP_SYS_PTRACE), it reports descriptor fetching refused by a seccomp filter; under one
 * that refuses process_vm_readv/writev, cross-memory attach refused by one, and shm still
 * carrying such connections by the bounce path. Without a
 * filter neither line may blame seccomp.
 * Usage: test_nd_info_paths ND_INFO
 */
#include "t_util.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

/* From now on @a and @b (may be equal) fail EPERM in this process and what it execs. */
static void refuse(long a, long b)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)a, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)b, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = { (unsigned short)(sizeof(f) / sizeof(f[0])), f };

    CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0);
}

/* nd_info's transports section, run with @a and @b refused (0: nothing refused). */
static void run(const char *nd_info, long a, long b, char *out, size_t size)
{
    int p[2], st;
    size_t got = 0;
    ssize_t n;
    pid_t pid;

    CHECK(pipe(p) == 0);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        dup2(p[1], 1);
        close(p[0]);
        if (a)
            refuse(a, b);
        execl(nd_info, nd_info, (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    while (got + 1 < size && (n = read(p[0], out + got, size - 1 - got)) > 0)
        got += (size_t)n;
    out[got] = 0;
    close(p[0]);
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static const char *line_of(const char *out, const char *start)
{
    const char *l = strstr(out, start);

    CHECK(l != NULL);
    return l;
}

static bool line_has(const char *line, const char *what)
{
    const char *end = strchr(line, '\n');
    const char *at = strstr(line, what);

    return at && (!end || at < end);
}

int main(int argc, char **argv)
{
    static char out[1 << 16];

    CHECK(argc == 2);
    run(argv[1], 0, 0, out, sizeof(out));
    CHECK(!line_has(line_of(out, "  descriptor fetching"), "seccomp"));
    CHECK(!line_has(line_of(out, "  cross-memory attach"), "seccomp"));
    run(argv[1], SYS_pidfd_getfd, SYS_pidfd_getfd, out, sizeof(out));
    const char *l = line_of(out, "  descriptor fetching");
    CHECK(line_has(l, "REFUSED") && line_has(l, "seccomp"));
    run(argv[1], SYS_process_vm_readv, SYS_process_vm_writev, out, sizeof(out));
    l = line_of(out, "  cross-memory attach");
    CHECK(line_has(l, "REFUSED") && line_has(l, "seccomp") && strstr(l, "bounce path") != NULL);
    CHECK(!line_has(line_of(out, "  descriptor fetching"), "REFUSED"));
    puts("nd_info names the seccomp filter that refuses descriptor fetching, then cross-memory attach");
    return 0;
}
