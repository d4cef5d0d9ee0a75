// SPDX-License-Identifier: MIT
/*
 * Descriptors same-host peers fetch from each other: with pidfd_getfd where it may, else
 * handed over a unix socket (SCM_RIGHTS), where pidfd_getfd is refused: Docker's and
 * Podman's default seccomp profiles without CAP_SYS_PTRACE, kernels before 5.6. Every
 * container allows unix sockets.
 *
 * A process that hands descriptors over answers on an abstract socket named after its
 * pid, from a thread of its own started when first needed (nd_fd_serve). It answers only
 * a process of its own effective uid (SO_PEERCRED), and hands out only descriptors the
 * library published for peers (nd_fd_publish): each request names the descriptor's
 * number, device and inode, which must match what was published and what the number
 * holds now. Nothing in a request is trusted beyond that. Abstract names belong to the
 * network namespace, which shm peers share anyway (their CM rendezvous is one too).
 */
#include "core.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

bool nd_fd_ref_of(int fd, struct nd_fd_ref *ref)
{
    struct stat st;

    if (fd < 0 || fstat(fd, &st) < 0)
        return false;
    *ref = (struct nd_fd_ref){ .fd = fd, .dev = (uint64_t)st.st_dev, .ino = (uint64_t)st.st_ino };
    nd_fd_publish(ref);
    return true;
}

static int fetch_by_pidfd(pid_t pid, int32_t fd)
{
    int pidfd, ours;

    if (fd < 0)
        return -1;
    pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd < 0)
        return -1;
    ours = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);     /* close-on-exec, as the kernel makes it */
    int err = errno;
    close(pidfd);
    errno = err;
    return ours;
}

/* Where pidfd_getfd is refused (a seccomp filter; valgrind, for one, does not know it), a
 * descriptor of our own process (two queue pairs connected to each other) is ours
 * already: a copy; another process hands it over a unix socket (below). The getpid()
 * is asked only then: a system call on every fetch otherwise. */
static int fetch(pid_t pid, const struct nd_fd_ref *ref)
{
    if (nd_fd_fetch_available()) {
        int fd = fetch_by_pidfd(pid, ref->fd);

        /* Refused for this peer alone (it is not dumpable, Yama keeps us out): it serves
         * its descriptors itself when it knows a peer may not reach it (shm_cm.c). */
        if (fd < 0 && (errno == EPERM || errno == EACCES) && ref->fd >= 0)
            fd = nd_fd_fetch_passed(pid, ref);
        return fd;
    }
    if (ref->fd >= 0 && pid == getpid())
        return fcntl(ref->fd, F_DUPFD_CLOEXEC, 0);
    return ref->fd >= 0 ? nd_fd_fetch_passed(pid, ref) : -1;
}

int nd_fd_fetch(pid_t pid, const struct nd_fd_ref *ref)
{
    int fd = fetch(pid, ref);
    struct stat st;

    if (fd >= 0 && (fstat(fd, &st) < 0 || (uint64_t)st.st_dev != ref->dev || (uint64_t)st.st_ino != ref->ino)) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* May this process use pidfd_getfd (Linux 5.6, and no seccomp filter against it)? Asked
 * once, of ourselves. */
static _Atomic int fetch_works = -1;

bool nd_fd_fetch_available(void)
{
    int v = atomic_load_explicit(&fetch_works, memory_order_relaxed);

    if (v < 0) {
        int probe = eventfd(0, EFD_CLOEXEC), copy = probe >= 0 ? fetch_by_pidfd(getpid(), probe) : -1;

        v = copy >= 0;
        if (copy >= 0)
            close(copy);
        if (probe >= 0)
            close(probe);
        atomic_store_explicit(&fetch_works, v, memory_order_relaxed);
    }
    return v;
}

/* Every eventfd is the one anonymous inode: its device and inode name the kind, which is
 * all a request for one can name. */
static struct nd_fd_ref eventfd_kind;
static bool eventfd_kind_known;

static void learn_eventfd_kind(void)
{
    int fd = eventfd(0, EFD_CLOEXEC);
    struct stat st;

    if (fd >= 0 && fstat(fd, &st) == 0) {
        eventfd_kind = (struct nd_fd_ref){ .dev = (uint64_t)st.st_dev, .ino = (uint64_t)st.st_ino };
        eventfd_kind_known = true;
    }
    if (fd >= 0)
        close(fd);
}

static bool eventfd_ref(int32_t num, struct nd_fd_ref *ref)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;

    pthread_once(&once, learn_eventfd_kind);
    *ref = eventfd_kind;
    ref->fd = num;
    return eventfd_kind_known && num >= 0;
}

int nd_fd_fetch_eventfd(pid_t pid, int32_t num)
{
    char path[64], link[32];
    struct nd_fd_ref ref;
    int fd = eventfd_ref(num, &ref) ? fetch(pid, &ref) : -1;
    ssize_t n;

    if (fd < 0)
        return -1;
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    n = readlink(path, link, sizeof(link) - 1);
    if (n < 0 || (size_t)n != strlen("anon_inode:[eventfd]") || memcmp(link, "anon_inode:[eventfd]", (size_t)n)) {
        close(fd);
        return -1;
    }
    return fd;
}

#define FD_PASS_MAGIC 0x6e644650u   /* "ndFP" */
#define FD_PASS_TIMEOUT_MS 2000     /* a peer that does not answer in this long: no descriptor */

struct fd_pass_request {
    uint32_t magic;
    int32_t fd;
    uint64_t dev, ino;
};

static pthread_mutex_t published_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nd_fd_ref *published;
static uint32_t published_count, published_cap;

/* The server's state belongs to one pid: a fork's child starts its own when it needs one. */
static pthread_mutex_t server_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t server_pid;
static int server_sock = -1;

void nd_fd_publish(const struct nd_fd_ref *ref)
{
    pthread_mutex_lock(&published_lock);
    for (uint32_t i = 0; i < published_count; i++)
        if (published[i].fd == ref->fd) {
            published[i] = *ref;
            pthread_mutex_unlock(&published_lock);
            return;
        }
    struct nd_fd_ref *grown = nd_with_room(published, &published_cap, published_count, sizeof(*published));

    if (grown) {
        published = grown;
        published[published_count++] = *ref;
    }
    pthread_mutex_unlock(&published_lock);
}

void nd_fd_unpublish(int fd)
{
    pthread_mutex_lock(&published_lock);
    for (uint32_t i = 0; i < published_count; i++)
        if (published[i].fd == fd) {
            published[i] = published[--published_count];
            break;
        }
    pthread_mutex_unlock(&published_lock);
}

static bool is_published(const struct fd_pass_request *r)
{
    struct stat st;
    bool ok = false;

    if (r->fd < 0 || fstat(r->fd, &st) != 0 || (uint64_t)st.st_dev != r->dev || (uint64_t)st.st_ino != r->ino)
        return false;
    pthread_mutex_lock(&published_lock);
    for (uint32_t i = 0; i < published_count && !ok; i++)
        ok = published[i].fd == r->fd && published[i].dev == r->dev && published[i].ino == r->ino;
    pthread_mutex_unlock(&published_lock);
    return ok;
}

static socklen_t server_name(pid_t pid, struct sockaddr_un *sun)
{
    int n;

    memset(sun, 0, sizeof(*sun));
    sun->sun_family = AF_UNIX;
    n = snprintf(sun->sun_path + 1, sizeof(sun->sun_path) - 1, "netdirect-fds-%d", (int)pid);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

static void set_timeouts(int sock)
{
    struct timeval tv = { .tv_sec = FD_PASS_TIMEOUT_MS / 1000, .tv_usec = FD_PASS_TIMEOUT_MS % 1000 * 1000 };

    setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

int nd_fd_request_grant(const void *bytes, size_t len)
{
    struct fd_pass_request r;

    if (len != sizeof(r))
        return -1;
    memcpy(&r, bytes, sizeof(r));
    return r.magic == FD_PASS_MAGIC && is_published(&r) ? r.fd : -1;
}

/* One request on @conn: the descriptor, or a refusal (a reply without one). */
static void answer(int conn)
{
    struct fd_pass_request r;
    ssize_t n;
    int fd = -1;
    struct ucred cred;
    socklen_t len = sizeof(cred);
    union { char buf[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } ctl;
    uint8_t verdict = 1;
    struct iovec iov = { &verdict, 1 };
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

    set_timeouts(conn);
    if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.uid == geteuid() &&
        (n = recv(conn, &r, sizeof(r), MSG_TRUNC)) >= 0)
        fd = nd_fd_request_grant(&r, (size_t)n);
    if (fd < 0) {
        nd_log(ND_LOG_INFO, ND_SUB_SHM, "descriptor request refused");
        verdict = 0;
    } else {
        struct cmsghdr *c;

        mh.msg_control = ctl.buf;
        mh.msg_controllen = sizeof(ctl.buf);
        c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof(int));
    }
    if (sendmsg(conn, &mh, MSG_NOSIGNAL) < 0)
        nd_log(ND_LOG_DEBUG, ND_SUB_SHM, "descriptor answer: %m");
}

static void *serve_descriptors(void *arg)
{
    int sock = (int)(intptr_t)arg;

    for (;;) {
        int conn = accept4(sock, NULL, NULL, SOCK_CLOEXEC);

        if (conn < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE)
                continue;
            return NULL;
        }
        answer(conn);
        close(conn);
    }
}

static void forget_server_in_child(void)
{
    if (server_sock >= 0)
        close(server_sock);
    server_sock = -1;
    server_pid = 0;
}

int nd_fd_serve(void)
{
    static bool atfork_registered;
    struct sockaddr_un sun;
    pthread_t t;
    int st = 0, sock;

    pthread_mutex_lock(&server_lock);
    if (!atfork_registered)
        atfork_registered = pthread_atfork(NULL, NULL, forget_server_in_child) == 0;
    if (server_pid == getpid()) {
        pthread_mutex_unlock(&server_lock);
        return 0;
    }
    sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (sock < 0 || bind(sock, (struct sockaddr *)&sun, server_name(getpid(), &sun)) != 0 || listen(sock, 64) != 0 ||
        nd_thread_start(&t, serve_descriptors, (void *)(intptr_t)sock, "nd-fd-pass") != 0) {
        st = -errno;
        nd_log(ND_LOG_WARN, ND_SUB_SHM, "cannot hand descriptors to peers: %m");
        if (sock >= 0)
            close(sock);
    } else {
        pthread_detach(t);
        server_sock = sock;
        server_pid = getpid();
        nd_log(ND_LOG_INFO, ND_SUB_SHM, "same-host peers get descriptors over a unix socket (SCM_RIGHTS)");
    }
    pthread_mutex_unlock(&server_lock);
    return st;
}

static int received_fd(struct msghdr *mh)
{
    struct cmsghdr *c = CMSG_FIRSTHDR(mh);
    int fd;

    if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(sizeof(int)))
        return -1;
    memcpy(&fd, CMSG_DATA(c), sizeof(int));
    return fd;
}

int nd_fd_fetch_passed(pid_t pid, const struct nd_fd_ref *ref)
{
    struct fd_pass_request r = { .magic = FD_PASS_MAGIC, .fd = ref->fd, .dev = ref->dev, .ino = ref->ino };
    union { char buf[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } ctl;
    uint8_t verdict = 0;
    struct iovec iov = { &verdict, 1 };
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf) };
    struct sockaddr_un sun;
    int sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0), fd = -1;

    if (sock < 0)
        return -1;
    set_timeouts(sock);
    if (connect(sock, (struct sockaddr *)&sun, server_name(pid, &sun)) == 0 &&
        send(sock, &r, sizeof(r), MSG_NOSIGNAL) == (ssize_t)sizeof(r) &&
        recvmsg(sock, &mh, MSG_CMSG_CLOEXEC) == 1 && !(mh.msg_flags & MSG_CTRUNC))
        fd = received_fd(&mh);
    if (fd >= 0 && verdict != 1) {
        close(fd);
        fd = -1;
    }
    close(sock);
    return fd;
}
