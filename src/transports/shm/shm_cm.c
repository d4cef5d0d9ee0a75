// SPDX-License-Identifier: MIT
/* shm rendezvous: abstract unix sockets, CM messages naming descriptors, peer credentials. */
#include "shm.h"
#include "core/log.h"
#include "core/srq_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#define SHM_MAGIC 0x4e44434du
#define SHM_VERSION 7u
#define SHM_FLAG_REDIRECT 1u        /* REJ: come again by another transport */
#define SHM_FLAG_PASS_FDS 2u        /* REQ/REP: the sender cannot use pidfd_getfd: hand it descriptors */

/* The message on the wire: fixed size, little-endian host order (same host). */
struct shm_wire {
    uint32_t magic;
    uint16_t version;
    uint16_t type;
    uint32_t ird, ord, pdata_len;
    struct shm_qp_desc desc;        /* REQ/REP: the sender's queue pair */
    uint32_t flags;                 /* SHM_FLAG_* */
    uint32_t family;
    uint16_t port;
    uint8_t addr[16];
    uint8_t pdata[ND_CM_MAX_PDATA];
};

/* "\0netdirect/<addr>/<port>": abstract names live in the network namespace, like addresses. */
static socklen_t rendezvous_name(const struct sockaddr *sa, struct sockaddr_un *un)
{
    char ip[INET6_ADDRSTRLEN] = "?";
    uint16_t port;
    int n;

    memset(un, 0, sizeof(*un));
    un->sun_family = AF_UNIX;
    if (sa->sa_family == AF_INET) {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, ip, sizeof(ip));
        port = ntohs(((const struct sockaddr_in *)sa)->sin_port);
    } else {
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, ip, sizeof(ip));
        port = ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
    }
    n = snprintf(un->sun_path + 1, sizeof(un->sun_path) - 1, "netdirect/%s/%u", ip, port);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

int shm_listen(const struct sockaddr *addr, int backlog)
{
    struct sockaddr_un un;
    socklen_t len = rendezvous_name(addr, &un);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -errno;
    if (bind(fd, (struct sockaddr *)&un, len) < 0 || listen(fd, backlog > 0 ? backlog : SOMAXCONN) < 0) {
        int e = errno;

        close(fd);
        return -e;
    }
    return fd;
}

static int dial_name(const struct sockaddr *sa)
{
    struct sockaddr_un un;
    socklen_t len = rendezvous_name(sa, &un);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0), e;

    if (fd < 0)
        return -errno;
    if (connect(fd, (struct sockaddr *)&un, len) == 0)
        return fd;
    e = errno;
    close(fd);
    return -e;
}

int shm_dial(const struct sockaddr *dest)
{
    struct sockaddr_storage any;
    int fd = dial_name(dest);

    if (fd >= 0 || (fd != -ECONNREFUSED && fd != -ENOENT))
        return fd;
    /* A listener on the wildcard address serves every local address. */
    memset(&any, 0, sizeof(any));
    any.ss_family = dest->sa_family;
    if (dest->sa_family == AF_INET)
        ((struct sockaddr_in *)&any)->sin_port = ((const struct sockaddr_in *)dest)->sin_port;
    else
        ((struct sockaddr_in6 *)&any)->sin6_port = ((const struct sockaddr_in6 *)dest)->sin6_port;
    return dial_name((struct sockaddr *)&any);
}

int shm_accept(int listen_fd)
{
    int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);

    return fd < 0 ? -errno : fd;
}

bool shm_peer_same_user(int sock, pid_t *pid)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);

    if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
        return false;
    *pid = cred.pid;
    return cred.uid == geteuid();
}

static void encode_addr(struct shm_wire *w, const struct sockaddr_storage *ss)
{
    w->family = ss->ss_family;
    if (ss->ss_family == AF_INET) {
        w->port = ((const struct sockaddr_in *)ss)->sin_port;
        memcpy(w->addr, &((const struct sockaddr_in *)ss)->sin_addr, 4);
    } else if (ss->ss_family == AF_INET6) {
        w->port = ((const struct sockaddr_in6 *)ss)->sin6_port;
        memcpy(w->addr, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
    }
}

static void decode_addr(const struct shm_wire *w, struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof(*ss));
    if (w->family == AF_INET) {
        struct sockaddr_in *sin = (struct sockaddr_in *)ss;

        sin->sin_family = AF_INET;
        sin->sin_port = w->port;
        memcpy(&sin->sin_addr, w->addr, 4);
    } else if (w->family == AF_INET6) {
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

        sin6->sin6_family = AF_INET6;
        sin6->sin6_port = w->port;
        memcpy(&sin6->sin6_addr, w->addr, 16);
    }
}

/* Describe @qp in @w, naming its descriptors (false if the adapter region cannot be named). */
static bool name_descriptors(struct shm_qp_desc *w, struct nd_qp *qp)
{
    if (!nd_adapter_ro_ref(qp->adapter, &w->refs[1]))   /* kept by the adapter */
        return false;
    w->rq_entries = qp->rq_entries;
    w->pd = qp->pd;
    w->recv_pd = nd_qp_recv_pd(qp);
    w->max_sge = qp->ctl->max_sge;
    w->slot_size = qp->slot_size;
    w->arm_slot = qp->rcq->arm_slot;
    w->iarm_slot = qp->icq->arm_slot;
    w->nonce = nd_process_nonce();
    w->rcq_serial = qp->rcq->serial;
    w->icq_serial = qp->icq->serial;
    w->refs[0] = qp->area.ref;
    w->region_off = qp->area.off;
    qp->region_shared = true;
    w->refs[2].fd = qp->rcq->signal_fd;
    w->refs[3].fd = qp->icq->signal_fd;
    w->refs[4].fd = -1;
    if (qp->srq) {
        struct nd_srq_share sf;

        nd_srq_export(qp->srq, &sf);
        w->refs[4] = sf.region;
        w->srq_entries = sf.entries;
        w->srq_max_sge = sf.max_sge;
    }
    return true;
}

/*
 * Whether the listener on @sock may have to be handed our descriptors: it runs under a
 * seccomp filter, which may refuse pidfd_getfd. (A dialer that cannot fetch says so in its
 * REQ, with SHM_FLAG_PASS_FDS, which the listener reads before it fetches; a listener
 * fetches ours before its REP could say so.) Reading /proc/<pid>/status costs tens of
 * microseconds, a good part of a connection's set-up, so the answer is kept a second per
 * listener pid: a pid reused within that second by a filtered listener is what it misses.
 */
#define FILTERED_CACHE 16
#define FILTERED_KEEP_NS 1000000000ull
static pthread_mutex_t filtered_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { pid_t pid; bool filtered; uint64_t seen_ns; } filtered_seen[FILTERED_CACHE];

static bool read_filtered(pid_t pid)
{
    char path[64], line[128];
    bool filtered = true;           /* unknown: serve, which costs a thread at most */
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    if (!(f = fopen(path, "re")))
        return true;
    while (fgets(line, sizeof(line), f))
        if (!strncmp(line, "Seccomp:", 8)) {
            filtered = atoi(line + 8) == 2;
            break;
        }
    fclose(f);
    return filtered;
}

static bool listener_filtered(int sock)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);
    uint64_t now = nd_coarse_ns();
    bool filtered;

    if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
        return true;
    uint32_t slot = (uint32_t)cred.pid % FILTERED_CACHE;

    pthread_mutex_lock(&filtered_lock);
    if (filtered_seen[slot].pid == cred.pid && now - filtered_seen[slot].seen_ns < FILTERED_KEEP_NS) {
        filtered = filtered_seen[slot].filtered;
        pthread_mutex_unlock(&filtered_lock);
        return filtered;
    }
    pthread_mutex_unlock(&filtered_lock);
    filtered = read_filtered(cred.pid);
    pthread_mutex_lock(&filtered_lock);
    filtered_seen[slot].pid = cred.pid;
    filtered_seen[slot].filtered = filtered;
    filtered_seen[slot].seen_ns = now;
    pthread_mutex_unlock(&filtered_lock);
    return filtered;
}

int shm_send(int sock, struct nd_cm_msg *m, struct nd_qp *qp)
{
    struct shm_wire w = { .magic = SHM_MAGIC, .version = SHM_VERSION, .type = m->type, .ird = m->ird,
                          .ord = m->ord, .pdata_len = m->pdata_len,
                          .flags = m->type == ND_CM_REJ && m->redirect ? SHM_FLAG_REDIRECT : 0 };
    ssize_t n;

    memcpy(w.pdata, m->pdata, m->pdata_len);
    encode_addr(&w, &m->src);
    if (qp && !name_descriptors(&w.desc, qp))
        return -ENOBUFS;
    pid_t peer;
    if (qp && shm_peer_same_user(sock, &peer) && !shm_cma_allowed(peer))
        w.desc.flags |= SHM_DESC_NO_CMA;    /* the peer finishes our transfers (its channel) */
    /* Connection messages name descriptors the receiver fetches: with pidfd_getfd where it
     * may, else from our fd_share.c server, which answers before the peer can ask. It may
     * not where we cannot fetch either, where the listener runs under a seccomp filter,
     * where ptrace rules keep us from the peer (most of them, Yama's, keep it from us
     * too) and where we are not dumpable. */
    bool cannot_fetch = qp && !nd_fd_fetch_available();

    if (qp && (cannot_fetch || (w.desc.flags & SHM_DESC_NO_CMA) || prctl(PR_GET_DUMPABLE) == 0 ||
               (m->type == ND_CM_REQ && listener_filtered(sock))) && nd_fd_serve() != 0)
        return -ENOBUFS;
    if (cannot_fetch)
        w.flags |= SHM_FLAG_PASS_FDS;
    do
        n = send(sock, &w, sizeof(w), MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n == (ssize_t)sizeof(w))
        return 0;
    nd_log(ND_LOG_INFO, ND_SUB_SHM, "CM send failed: %m");
    return -ECONNABORTED;
}

/* Descriptors are named, never passed: any a peer sends anyway are closed unread. */
static void drop_passed_fds(struct msghdr *mh)
{
    for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        int fds[16];

        memcpy(fds, CMSG_DATA(c), (n < 16 ? n : 16) * sizeof(int));
        for (size_t k = 0; k < n && k < 16; k++)
            close(fds[k]);
    }
}

int shm_recv(int sock, struct nd_cm_msg *m)
{
    union { char buf[CMSG_SPACE(sizeof(int) * 16)]; struct cmsghdr align; } cbuf;
    struct shm_wire w;
    struct iovec iov = { &w, sizeof(w) };
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf.buf,
                         .msg_controllen = sizeof(cbuf.buf) };
    ssize_t n;

    do
        n = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return -EINPROGRESS;
    nd_cm_msg_init(m, 0);
    if (n < 0 && errno == ECONNRESET) {
        /* A peer that closed with our message unread (a listener that redirected us before
         * it read the REQ) makes the reset come first: what it sent before is still queued. */
        do
            n = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        while (n < 0 && errno == EINTR);
    }
    if (n >= 0)         /* a zero-length record may carry descriptors too */
        drop_passed_fds(&mh);
    if (n <= 0)
        return -ECONNABORTED;
    if (n != (ssize_t)sizeof(w) || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || w.magic != SHM_MAGIC ||
        w.version != SHM_VERSION || w.type < ND_CM_REQ || w.type > ND_CM_DISC || w.pdata_len > ND_CM_MAX_PDATA) {
        nd_log(ND_LOG_WARN, ND_SUB_SHM, "malformed CM message from peer (%zd bytes)", n);
        return -ECONNABORTED;
    }
    m->type = w.type;
    m->ird = w.ird;
    m->ord = w.ord;
    m->pdata_len = w.pdata_len;
    memcpy(m->pdata, w.pdata, w.pdata_len);
    decode_addr(&w, &m->src);
    m->redirect = w.type == ND_CM_REJ && (w.flags & SHM_FLAG_REDIRECT);
    /* A peer that cannot fetch at all, or not from us (it may not reach our memory), is
     * handed our descriptors. */
    if ((w.type == ND_CM_REQ || w.type == ND_CM_REP) &&
        ((w.flags & SHM_FLAG_PASS_FDS) || (w.desc.flags & SHM_DESC_NO_CMA)) && nd_fd_serve() != 0)
        return -ECONNABORTED;
    if (w.type != ND_CM_REQ && w.type != ND_CM_REP) {
        w.desc = (struct shm_qp_desc){ 0 };
        for (int i = 0; i < SHM_NREFS; i++)
            w.desc.refs[i].fd = -1;
    } else if (!w.desc.srq_entries) {
        w.desc.refs[4].fd = -1;
    }
    shm_desc_put(m, &w.desc);
    return 0;
}

/* ---- the transport's connection operations ---- */

int shm_cm_listen(const struct sockaddr *addr, int port_fd, int backlog)
{
    return shm_listen(addr, backlog);
}

/*
 * May we move bytes in and out of @pid's memory with process_vm_readv/writev? Ptrace rules
 * decide: Yama's ptrace_scope 1 allows only descendants, a non-dumpable process refuses
 * everyone, LSMs may say no. The probe asks for one byte at address 0: with access it
 * fails EFAULT, without it EPERM; nothing is read either way.
 */
bool shm_cma_allowed(pid_t pid)
{
    char b;
    struct iovec local = { &b, 1 }, remote = { NULL, 1 };

    return process_vm_readv(pid, &local, 1, &remote, 1, 0) < 0 && errno == EFAULT;
}

/* /proc says it: a zombie, dead, no entry, or PF_EXITING, set from the start of exit
 * before its memory goes. */
bool shm_peer_exiting(pid_t pid)
{
    char path[64], buf[256], *p;
    ssize_t n;
    int fd;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return errno == ENOENT;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return true;
    buf[n] = 0;
    p = strrchr(buf, ')');          /* the command name may hold anything */
    if (!p || p[1] != ' ')
        return false;
    char state = p[2];
    unsigned long flags = 0;

    /* After the state: ppid pgrp session tty_nr tpgid, then the task's flags, whose
     * PF_EXITING (0x4) is set from the start of exit, before its memory goes. */
    if (sscanf(p + 3, "%*d %*d %*d %*d %*d %lu", &flags) != 1)
        flags = 0;
    return state == 'Z' || state == 'X' || state == 'x' || (flags & 0x4);
}

/* Only peers of our uid get a shared-memory connection; others are turned away here and
 * reach the listener over TCP (iwarp) instead. A peer whose memory we may not reach (or
 * that may not reach ours) is still ours: its transfers go by a bounce channel
 * (shm_bounce.c), which the connection messages ask for (SHM_DESC_NO_CMA). */
int shm_cm_accept(int listen_fd, pid_t *pid)
{
    for (;;) {
        int fd = shm_accept(listen_fd);

        if (fd < 0)
            return -1;
        if (shm_peer_same_user(fd, pid))
            return fd;
        close(fd);
    }
}

int shm_cm_dial(const struct sockaddr *dest, const struct sockaddr *local, pid_t *pid)
{
    int fd = shm_dial(dest);

    if (fd == -ECONNREFUSED || fd == -ENOENT)
        return -ENOENT;     /* nobody serves @dest on this host in this namespace */
    if (fd >= 0 && !shm_peer_same_user(fd, pid)) {
        close(fd);          /* another user's listener: not by shm */
        return -EACCES;
    }
    return fd;
}

int shm_cm_recv(int sock, struct nd_cm_msg *m, uint16_t expect)
{
    return shm_recv(sock, m);
}
