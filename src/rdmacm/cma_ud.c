// SPDX-License-Identifier: MIT
/*
 * UD ids (RDMA_PS_UDP, RDMA_PS_IPOIB). Where InfiniBand's CM resolves a UD service with a
 * SIDR request and reply, a UD id here exchanges the same two messages as UDP datagrams on
 * the port the id is bound to (the rdma_cm UDP port space is the host's UDP one): the
 * request carries the caller's private data; the reply the accepting side's QP number,
 * Q_Key and private data, or a rejection. The active side's ESTABLISHED then names the
 * peer's address handle, QP number and Q_Key (rdma_ud_param); the passive side gets no
 * event after rdma_accept, as in rdma-core. A request unanswered is sent again every
 * SIDR_RETRY_MS, SIDR_TRIES times in all, then UNREACHABLE (-ETIMEDOUT).
 *
 * One thread (started with the first UD listener or request) waits on every socket that
 * expects a message. rdma_destroy_id takes the id off its list and waits until the thread
 * is not handling it, so the thread never sees a destroyed id.
 */
#include "cma_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define SIDR_MAGIC 0x4e445352u      /* "NDSR" */
#define SIDR_VERSION 1u
#define SIDR_REQ 1u
#define SIDR_REP 2u
#define SIDR_REJ 3u
/* Private data room, as rdma_cm gives it on InfiniBand (SIDR's, less rdma_cm's header). */
#define SIDR_REQ_PDATA 180u
#define SIDR_REP_PDATA 136u
#define SIDR_RETRY_MS 1000
#define SIDR_TRIES 4
#define SIDR_WATCH_MAX 256
#define SIDR_RECENT 64              /* requests a listener remembers, to ignore their repeats */

struct sidr_msg {
    uint32_t magic;
    uint8_t version, type, pdata_len, reserved;
    uint32_t req_id;
    uint32_t qpn;
    uint32_t qkey;
    uint8_t pdata[SIDR_REQ_PDATA];
};

struct cm_ud {
    bool listening;                 /* a listener: requests come to its socket */
    bool requesting;                /* an active id whose request awaits its reply */
    uint32_t req_id;
    struct sidr_msg req;            /* the request, as sent again */
    int tries;
    uint64_t next_ns;               /* when it goes again */
    /* A request's id (passive side): whom the reply goes to, and the request it answers. */
    struct sockaddr_storage peer;
    uint32_t peer_req_id;
    /* A listener's recent requests (peer address, request id). */
    struct {
        struct sockaddr_storage from;
        uint32_t req_id;
    } recent[SIDR_RECENT];
    uint32_t recent_next;
};

static struct {
    pthread_mutex_t lock;
    pthread_cond_t idle;
    bool started;
    int wake[2];
    struct cm_id *watch[SIDR_WATCH_MAX];
    uint32_t nwatch;
    struct cm_id *busy;             /* being handled on the thread */
} sidr = { .lock = PTHREAD_MUTEX_INITIALIZER, .idle = PTHREAD_COND_INITIALIZER, .wake = { -1, -1 } };

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct cm_ud *ud_of(struct cm_id *id)
{
    if (!id->ud)
        id->ud = calloc(1, sizeof(*id->ud));
    return id->ud;
}

/* The UDP socket of @addr (port 0: a free one), as the id's; the id's source address. */
int cm_ud_bind(struct cm_id *id, const struct sockaddr *addr)
{
    struct sockaddr_storage *src = &id->id.route.addr.src_storage;
    socklen_t len = sizeof(*src);
    int fd = socket(addr->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0), one = 1;

    if (fd < 0)
        return cm_fail(errno);
    if (addr->sa_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    if (bind(fd, addr, cm_sa_len(addr)) < 0 || getsockname(fd, (struct sockaddr *)src, &len) < 0) {
        int e = errno;

        close(fd);
        return cm_fail(e == EADDRINUSE ? EADDRINUSE : e);
    }
    id->ud_sock = fd;
    id->bound = true;
    cm_attach_device(id);
    return 0;
}

int cm_ud_resolve_addr(struct cm_id *id, const struct sockaddr *dst)
{
    struct rdma_cm_id *cid = &id->id;
    struct sockaddr_storage from;
    int err = 0;

    if (!id->bound) {
        if (cm_route_source(dst, &from) < 0)
            return cm_fail(errno);
        if (cm_ud_bind(id, (struct sockaddr *)&from) < 0)
            err = errno;
    }
    memcpy(&cid->route.addr.dst_storage, dst, cm_sa_len(dst));
    cm_attach_device(id);
    cm_queue_event(id, err ? RDMA_CM_EVENT_ADDR_ERROR : RDMA_CM_EVENT_ADDR_RESOLVED, -err, NULL, 0);
    return cm_sync_status(id);
}

/* RESET to RTS with the port space's Q_Key, as librdmacm readies a UD QP. */
int cm_ud_init_qp(struct ibv_qp *qp)
{
    struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1, .qkey = RDMA_UDP_QKEY };
    int err = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);

    if (!err) {
        a.qp_state = IBV_QPS_RTR;
        err = ibv_modify_qp(qp, &a, IBV_QP_STATE);
    }
    if (!err) {
        a.qp_state = IBV_QPS_RTS;
        a.sq_psn = 0;
        err = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
    }
    return err ? cm_fail(err) : 0;
}

/* ---- the thread ---- */

static void wake_thread(void)
{
    char c = 0;

    if (write(sidr.wake[1], &c, 1) < 0) {
        /* Full: a wake-up is already pending. */
    }
}

static void *sidr_main(void *arg);

/* Have the thread watch @id's socket (sidr.lock held). */
static int watch_locked(struct cm_id *id)
{
    if (!sidr.started) {
        pthread_t t;

        if (pipe2(sidr.wake, O_CLOEXEC | O_NONBLOCK) < 0)
            return -errno;
        if (ndv_thread_start(&t, sidr_main, NULL, "nd-sidr") != 0) {
            close(sidr.wake[0]);
            close(sidr.wake[1]);
            return -EAGAIN;
        }
        sidr.started = true;
    }
    for (uint32_t i = 0; i < sidr.nwatch; i++)
        if (sidr.watch[i] == id)
            return 0;
    if (sidr.nwatch == SIDR_WATCH_MAX)
        return -ENOBUFS;
    sidr.watch[sidr.nwatch++] = id;
    wake_thread();
    return 0;
}

static int watch(struct cm_id *id)
{
    pthread_mutex_lock(&sidr.lock);
    int st = watch_locked(id);
    pthread_mutex_unlock(&sidr.lock);
    return st;
}

static void unwatch_locked(struct cm_id *id)
{
    for (uint32_t i = 0; i < sidr.nwatch; i++)
        if (sidr.watch[i] == id) {
            sidr.watch[i] = sidr.watch[--sidr.nwatch];
            break;
        }
}

void cm_ud_forget(struct cm_id *id)
{
    pthread_mutex_lock(&sidr.lock);
    unwatch_locked(id);
    while (sidr.busy == id)
        pthread_cond_wait(&sidr.idle, &sidr.lock);
    pthread_mutex_unlock(&sidr.lock);
    if (id->ud_sock >= 0)
        close(id->ud_sock);
    id->ud_sock = -1;
    free(id->ud);
    id->ud = NULL;
}

static int send_msg(int fd, const struct sidr_msg *m, const struct sockaddr *to)
{
    size_t len = offsetof(struct sidr_msg, pdata) + m->pdata_len;

    return sendto(fd, m, len, MSG_NOSIGNAL, to, cm_sa_len(to)) == (ssize_t)len ? 0 : -errno;
}

static bool msg_ok(const struct sidr_msg *m, ssize_t len)
{
    return len >= (ssize_t)offsetof(struct sidr_msg, pdata) && ntohl(m->magic) == SIDR_MAGIC &&
           m->version == SIDR_VERSION && (size_t)len >= offsetof(struct sidr_msg, pdata) + m->pdata_len &&
           m->pdata_len <= SIDR_REQ_PDATA;
}

/* ---- the active side ---- */

/* The port's GID of the address @sa (IPv4-mapped for IPv4). */
static void gid_of(const struct sockaddr *sa, union ibv_gid *gid)
{
    memset(gid, 0, sizeof(*gid));
    if (sa->sa_family == AF_INET) {
        gid->raw[10] = gid->raw[11] = 0xff;
        memcpy(gid->raw + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    } else {
        memcpy(gid->raw, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
    }
}

/* The index of @local's GID in the port's table (0 when not found: the first). */
static uint8_t sgid_index(struct ibv_context *ctx, const struct sockaddr *local)
{
    struct ibv_port_attr pa;
    union ibv_gid want, g;

    gid_of(local, &want);
    if (ibv_query_port(ctx, 1, &pa) != 0)
        return 0;
    for (int i = 0; i < pa.gid_tbl_len && i < 256; i++)
        if (ibv_query_gid(ctx, 1, i, &g) == 0 && !memcmp(&g, &want, sizeof(g)))
            return (uint8_t)i;
    return 0;
}

void cm_ah_attr(struct cm_id *id, struct ibv_ah_attr *ah)
{
    struct rdma_cm_id *cid = &id->id;

    memset(ah, 0, sizeof(*ah));
    ah->is_global = 1;
    ah->port_num = 1;
    gid_of(&cid->route.addr.dst_addr, &ah->grh.dgid);
    ah->grh.sgid_index = sgid_index(cid->verbs, &cid->route.addr.src_addr);
    ah->grh.hop_limit = 64;
}

/* rdma_init_qp_attr of a UD id: the steps rdma_create_qp takes (cm_ud_init_qp). */
int cm_ud_init_qp_attr(struct ibv_qp_attr *attr, int *mask)
{
    switch (attr->qp_state) {
    case IBV_QPS_INIT:
        attr->port_num = 1;
        attr->qkey = RDMA_UDP_QKEY;
        *mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
        return 0;
    case IBV_QPS_RTR:
        *mask = IBV_QP_STATE;
        return 0;
    case IBV_QPS_RTS:
        *mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
        return 0;
    default:
        return cm_fail(EINVAL);
    }
}

static void on_reply(struct cm_id *id, const struct sidr_msg *m)
{
    struct rdma_ud_param ud = { 0 };

    id->ud->requesting = false;
    if (m->type == SIDR_REJ) {
        cm_queue_event(id, RDMA_CM_EVENT_UNREACHABLE, -ECONNREFUSED, m->pdata, m->pdata_len);
        return;
    }
    cm_ah_attr(id, &ud.ah_attr);
    ud.qp_num = ntohl(m->qpn);
    ud.qkey = ntohl(m->qkey);
    cm_queue_ud_event(id, RDMA_CM_EVENT_ESTABLISHED, 0, m->pdata, m->pdata_len, &ud);
}

int cm_ud_connect(struct cm_id *id, const struct rdma_conn_param *p)
{
    struct cm_ud *ud = ud_of(id);
    struct rdma_cm_event *ev;
    uint8_t plen = p && p->private_data ? p->private_data_len : 0;
    int st;

    if (!ud || id->ud_sock < 0 || ud->requesting || ud->listening)
        return cm_fail(EINVAL);
    if (plen > SIDR_REQ_PDATA)
        return cm_fail(EINVAL);
    if (getrandom(&ud->req_id, sizeof(ud->req_id), 0) != sizeof(ud->req_id))
        ud->req_id = (uint32_t)now_ns();
    memset(&ud->req, 0, sizeof(ud->req));
    ud->req = (struct sidr_msg){ .magic = htonl(SIDR_MAGIC), .version = SIDR_VERSION, .type = SIDR_REQ,
                                 .pdata_len = plen, .req_id = ud->req_id };
    if (plen)
        memcpy(ud->req.pdata, p->private_data, plen);
    ud->tries = 1;
    ud->next_ns = now_ns() + SIDR_RETRY_MS * 1000000ull;
    ud->requesting = true;
    st = send_msg(id->ud_sock, &ud->req, &id->id.route.addr.dst_addr);
    if (st == 0)
        st = watch(id);
    if (st != 0) {
        ud->requesting = false;
        return cm_fail(-st);
    }
    if (!id->own_channel)
        return 0;
    int rc = cm_wait_event(id, &ev);

    if (rc < 0)
        return -1;
    int status = ev->status;
    rdma_ack_cm_event(ev);
    return rc == RDMA_CM_EVENT_ESTABLISHED ? 0 : cm_fail(status ? -status : ECONNREFUSED);
}

/* A request unanswered for its retry time goes again, or the id gives up. true: done. */
static bool retry_due(struct cm_id *id, uint64_t now)
{
    struct cm_ud *ud = id->ud;

    if (!ud->requesting || now < ud->next_ns)
        return false;
    if (ud->tries >= SIDR_TRIES) {
        ud->requesting = false;
        cm_queue_event(id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL, 0);
        return true;
    }
    ud->tries++;
    ud->next_ns = now + SIDR_RETRY_MS * 1000000ull;
    send_msg(id->ud_sock, &ud->req, &id->id.route.addr.dst_addr);
    return false;
}

/* ---- the passive side ---- */

int cm_ud_listen(struct cm_id *id)
{
    struct cm_ud *ud = ud_of(id);
    int st;

    if (!ud || id->ud_sock < 0 || ud->requesting)
        return cm_fail(EINVAL);
    ud->listening = true;
    st = watch(id);
    return st ? cm_fail(-st) : 0;
}

static bool seen_before(struct cm_ud *ud, const struct sockaddr_storage *from, uint32_t req_id)
{
    for (uint32_t i = 0; i < SIDR_RECENT; i++)
        if (ud->recent[i].req_id == req_id && !memcmp(&ud->recent[i].from, from, sizeof(*from)))
            return true;
    ud->recent[ud->recent_next].from = *from;
    ud->recent[ud->recent_next].req_id = req_id;
    ud->recent_next = (ud->recent_next + 1) % SIDR_RECENT;
    return false;
}

static void on_request(struct cm_id *l, const struct sidr_msg *m, const struct sockaddr_storage *from)
{
    struct cm_id *child;
    struct rdma_cm_id *c;

    if (m->type != SIDR_REQ || seen_before(l->ud, from, m->req_id))
        return;
    child = cm_id_new(l->id.channel, l->id.context, l->id.ps);
    if (!child || !ud_of(child)) {
        if (child)
            rdma_destroy_id(&child->id);
        return;                     /* no memory: the requester tries again */
    }
    c = &child->id;
    c->qp_type = IBV_QPT_UD;
    /* The listener's address and port; a wildcard listener's, the address the requester's
     * datagrams reach it by. sin_port and sin6_port lie at the same offset. */
    c->route.addr.src_storage = l->id.route.addr.src_storage;
    if (cm_route_source((const struct sockaddr *)from, &c->route.addr.src_storage) == 0)
        c->route.addr.src_sin.sin_port = l->id.route.addr.src_sin.sin_port;
    c->route.addr.dst_storage = *from;
    c->verbs = l->id.verbs;
    c->pd = l->id.pd;
    cm_attach_device(child);
    child->bound = true;
    child->ud->peer = *from;
    child->ud->peer_req_id = m->req_id;
    cm_queue_request(l, child, m->pdata, m->pdata_len);
}

static int reply(struct cm_id *id, uint8_t type, uint32_t qpn, const void *pdata, uint8_t len)
{
    struct cm_ud *ud = id->ud;
    struct sidr_msg m = { .magic = htonl(SIDR_MAGIC), .version = SIDR_VERSION, .type = type, .pdata_len = len,
                          .qpn = htonl(qpn), .qkey = htonl(RDMA_UDP_QKEY) };
    int fd, st;

    if (!ud || ud->listening || ud->requesting || !ud->peer.ss_family || len > SIDR_REP_PDATA)
        return cm_fail(EINVAL);
    m.req_id = ud->peer_req_id;
    if (len)
        memcpy(m.pdata, pdata, len);
    fd = socket(ud->peer.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return cm_fail(errno);
    st = send_msg(fd, &m, (const struct sockaddr *)&ud->peer);
    close(fd);
    return st ? cm_fail(-st) : 0;
}

int cm_ud_accept(struct cm_id *id, const struct rdma_conn_param *p)
{
    uint32_t qpn = id->id.qp ? id->id.qp->qp_num : p ? p->qp_num : 0;

    if (!qpn)
        return cm_fail(EINVAL);     /* no QP to name */
    return reply(id, SIDR_REP, qpn, p ? p->private_data : NULL, p && p->private_data ? p->private_data_len : 0);
}

int cm_ud_reject(struct cm_id *id, const void *pdata, uint8_t len)
{
    return reply(id, SIDR_REJ, 0, pdata, pdata ? len : 0);
}

/* ---- the thread's work ---- */

/* Read what came to @id's socket; true when the id needs no more watching. */
static bool serve(struct cm_id *id, bool readable, uint64_t now)
{
    struct cm_ud *ud = id->ud;
    struct sidr_msg m;

    while (readable && ud) {
        struct sockaddr_storage from;
        socklen_t flen = sizeof(from);
        ssize_t n = recvfrom(id->ud_sock, &m, sizeof(m), MSG_DONTWAIT, (struct sockaddr *)&from, &flen);

        if (n < 0)
            break;
        if (!msg_ok(&m, n))
            continue;               /* not ours: ignored */
        if (ud->listening) {
            on_request(id, &m, &from);
        } else if (ud->requesting && (m.type == SIDR_REP || m.type == SIDR_REJ) && m.req_id == ud->req_id) {
            on_reply(id, &m);
            return true;
        }
    }
    return ud && !ud->listening && (retry_due(id, now) || !ud->requesting);
}

static int next_timeout_ms(uint64_t now)
{
    int t = -1;

    for (uint32_t i = 0; i < sidr.nwatch; i++) {
        const struct cm_ud *ud = sidr.watch[i]->ud;

        if (ud && ud->requesting) {
            int ms = ud->next_ns > now ? (int)((ud->next_ns - now) / 1000000 + 1) : 0;

            t = t < 0 || ms < t ? ms : t;
        }
    }
    return t;
}

static bool still_watched(struct cm_id *id)
{
    for (uint32_t i = 0; i < sidr.nwatch; i++)
        if (sidr.watch[i] == id)
            return true;
    return false;
}

static void *sidr_main(void *arg)
{
    static struct pollfd pfd[SIDR_WATCH_MAX + 1];
    static struct cm_id *ids[SIDR_WATCH_MAX];

    (void)arg;
    for (;;) {
        uint32_t n;
        int timeout;
        char buf[64];

        pthread_mutex_lock(&sidr.lock);
        n = sidr.nwatch;
        for (uint32_t i = 0; i < n; i++) {
            ids[i] = sidr.watch[i];
            pfd[i + 1] = (struct pollfd){ .fd = ids[i]->ud_sock, .events = POLLIN };
        }
        timeout = next_timeout_ms(now_ns());
        pthread_mutex_unlock(&sidr.lock);
        pfd[0] = (struct pollfd){ .fd = sidr.wake[0], .events = POLLIN };
        if (poll(pfd, n + 1, timeout) < 0)
            continue;
        if (pfd[0].revents & POLLIN)
            while (read(sidr.wake[0], buf, sizeof(buf)) > 0)
                ;
        uint64_t now = now_ns();

        for (uint32_t i = 0; i < n; i++) {
            pthread_mutex_lock(&sidr.lock);
            if (!still_watched(ids[i])) {
                pthread_mutex_unlock(&sidr.lock);
                continue;
            }
            sidr.busy = ids[i];
            pthread_mutex_unlock(&sidr.lock);
            bool done = serve(ids[i], pfd[i + 1].revents & POLLIN, now);

            pthread_mutex_lock(&sidr.lock);
            if (done)
                unwatch_locked(ids[i]);
            sidr.busy = NULL;
            pthread_cond_broadcast(&sidr.idle);
            pthread_mutex_unlock(&sidr.lock);
        }
    }
    return NULL;
}
