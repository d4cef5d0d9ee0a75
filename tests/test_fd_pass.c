// SPDX-License-Identifier: MIT
/*
 * Descriptors handed over a unix socket (core/fd_share.c), as same-host peers get them
 * where pidfd_getfd is refused. The parent publishes a memfd and serves; a child of the
 * same uid fetches it and sees the parent's bytes through it. Refused, with no
 * descriptor: a number that was never published (the parent's pipe), a published number
 * named with another inode, one unpublished since, a request of the wrong size (the
 * server answers the next one all the same), a pid that serves nothing, and (as root) a
 * child that became another uid.
 */
#include "core/core.h"
#include "t_util.h"

#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOBODY 65534

static void send_garbage(pid_t pid)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    int n = snprintf(sun.sun_path + 1, sizeof(sun.sun_path) - 1, "netdirect-fds-%d", (int)pid);
    int s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    char b;

    CHECK(s >= 0 && connect(s, (struct sockaddr *)&sun, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n)) == 0);
    CHECK(send(s, "abc", 3, 0) == 3);
    CHECK(recv(s, &b, 1, 0) == 1 && b == 0);    /* a refusal, and no descriptor */
    close(s);
}

static void child(pid_t parent, const struct nd_fd_ref *mem, const struct nd_fd_ref *gone, int pipe_fd)
{
    struct nd_fd_ref r = *mem;
    struct stat st;
    int fd = nd_fd_fetch_passed(parent, mem);

    CHECK(fd >= 0 && fstat(fd, &st) == 0 && (uint64_t)st.st_ino == mem->ino);
    char *p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
    CHECK(p != MAP_FAILED && strcmp(p, "published") == 0);
    munmap(p, 4096);
    close(fd);
    CHECK(fstat(pipe_fd, &st) == 0);
    CHECK(nd_fd_fetch_passed(parent, &(struct nd_fd_ref){ .fd = pipe_fd, .dev = st.st_dev, .ino = st.st_ino }) < 0);
    r.ino++;
    CHECK(nd_fd_fetch_passed(parent, &r) < 0);
    CHECK(nd_fd_fetch_passed(parent, gone) < 0);
    send_garbage(parent);
    CHECK((fd = nd_fd_fetch_passed(parent, mem)) >= 0);
    close(fd);
    CHECK(nd_fd_fetch_passed(getpid(), mem) < 0);   /* this child serves nothing */
    _exit(0);
}

static void other_uid_child(pid_t parent, const struct nd_fd_ref *mem)
{
    CHECK(setgroups(0, NULL) == 0 && setgid(NOBODY) == 0 && setuid(NOBODY) == 0);
    CHECK(nd_fd_fetch_passed(parent, mem) < 0);
    _exit(0);
}

static void expect_ok(pid_t pid)
{
    int st;

    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(void)
{
    struct nd_fd_ref mem, gone;
    int pp[2], memfd = memfd_create("netdirect-test", MFD_CLOEXEC), gone_fd = memfd_create("netdirect-gone", 0);
    pid_t pid;

    CHECK(memfd >= 0 && gone_fd >= 0 && pipe(pp) == 0 && ftruncate(memfd, 4096) == 0);
    CHECK(pwrite(memfd, "published", 10, 0) == 10);
    CHECK(nd_fd_ref_of(memfd, &mem) && nd_fd_ref_of(gone_fd, &gone));
    nd_fd_unpublish(gone_fd);
    CHECK(nd_fd_serve() == 0 && nd_fd_serve() == 0);    /* once per process */
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0)
        child(getppid(), &mem, &gone, pp[0]);
    expect_ok(pid);
    puts("same uid: the published memfd handed over; everything else refused");
    if (geteuid() != 0) {
        puts("another uid: not tried (needs root)");
        return 0;
    }
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0)
        other_uid_child(getppid(), &mem);
    expect_ok(pid);
    puts("another uid: refused");
    return 0;
}
