// SPDX-License-Identifier: MIT
/*
 * Listeners: bind (reserving the port in the TCP port space), listen on the rendezvous,
 * and hand each incoming request to the oldest pending GetConnectionRequest (FIFO).
 */
#include "cm_int.h"
#include "env.h"
#include "log.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

enum { LS_IDLE, LS_BOUND, LS_LISTENING };

struct incoming {
    const struct nd_transport_ops *wire;
    int sock;
    pid_t pid;
    struct nd_cm_msg req;
    uint64_t deadline_ns;           /* waiting for the REQ: give up then */
    uint32_t source;                /* waiting: the port watches sock as this source */
};

struct gcr {
    nd_overlapped *ov;
    struct nd_connector *c;
};

struct nd_listener {
    uint32_t magic;
    struct nd_adapter *adapter;
    struct nd_ovobj ov;
    pthread_mutex_t lock;
    int state;
    struct sockaddr_storage addr;
    int port_fd;
    struct endpoint {               /* one per transport we listen with */
        const struct nd_transport_ops *wire;
        int fd;
        uint32_t port_source;
    } ep[4];
    uint32_t nep;
    uint32_t backlog;
    struct incoming *in;            /* requests read, oldest first */
    uint32_t nin, capin;
    struct incoming *wait;          /* connections whose REQ has not come yet */
    uint32_t nwait, capwait;
    struct gcr *g;
    uint32_t ng, capg;
    nd_request_fn req_fn;           /* a front end takes requests itself (rdma_cm) */
    void *req_ctx;
    _Atomic uint32_t inflight;      /* port calls of our sources running or waiting for the lock */
};

static void listener_wait(struct nd_ovobj *obj, nd_overlapped *ov);
static void listener_on_signal(void *obj, struct nd_ovbatch *b);
static void listener_poll(struct nd_ovobj *obj);
static const struct nd_ovobj_ops listener_ov_ops = { .wait = listener_wait, .poll = listener_poll };

static bool listener_valid(const struct nd_listener *l)
{
    return l && l->magic == ND_MAGIC_LISTENER;
}

ND_DOOR int ndc_adapter_create_listener(nd_adapter *a, nd_port *port, nd_listener **out)
{
    struct nd_listener *l;

    if (!nd_adapter_valid(a))
        return -EBADF;
    if (!nd_port_valid(port))
        return ND_EARG(2);
    if (!out)
        return ND_EARG(3);
    l = calloc(1, sizeof(*l));
    if (!l)
        return -ENOMEM;
    l->adapter = a;
    l->port_fd = -1;
    nd_ovobj_init(&l->ov, port, &listener_ov_ops);
    pthread_mutex_init(&l->lock, NULL);
    nd_adapter_ref(a);
    nd_port_ref(port);
    l->magic = ND_MAGIC_LISTENER;
    *out = l;
    return 0;
}

ND_DOOR int ndc_listener_bind(nd_listener *l, const struct sockaddr *addr, uint32_t len)
{
    int st;

    if (!listener_valid(l))
        return -EBADF;
    if (!nd_sockaddr_ok(addr, len))
        return ND_EARG(1);
    pthread_mutex_lock(&l->lock);
    if (l->state != LS_IDLE)
        st = -EADDRINUSE;
    else if ((st = nd_cm_check_local(l->adapter, addr, true)) == 0 &&
             (st = nd_cm_reserve_port(addr, &l->addr, &l->port_fd, true)) == 0)
        l->state = LS_BOUND;
    pthread_mutex_unlock(&l->lock);
    return st;
}

static void reject_and_close(const struct nd_transport_ops *wire, int sock)
{
    struct nd_cm_msg rej;

    nd_cm_msg_init(&rej, ND_CM_REJ);
    wire->cm_send(sock, &rej, NULL);
    close(sock);
}

/*
 * An accepted connection must send its REQ first; the dialer sends it right after the
 * connect, so it is usually there already. One that is not waits in l->wait, its socket
 * watched by the port, until the REQ comes or ND_CM_TIMEOUT_MS passes: a peer that
 * connects and says nothing costs one descriptor for a while, never a stalled listener.
 */
#define WAIT_MAX 256u               /* silent connections kept at once; the oldest goes first */
#define REQ_GRACE_MS 1              /* how long accepting waits for a REQ before deferring it */

static void queue_request(struct nd_listener *l, struct incoming *in)
{
    struct incoming *in_room = l->backlog && l->nin >= l->backlog
                               ? NULL : nd_with_room(l->in, &l->capin, l->nin, sizeof(*l->in));

    if (!in_room) {
        reject_and_close(in->wire, in->sock);     /* over the backlog: -ECONNREFUSED at the peer */
        return;
    }
    l->in = in_room;
    l->in[l->nin++] = *in;
}

/* 0: @in holds its REQ. -EINPROGRESS: not yet. Anything else: drop it. */
static int read_request(struct incoming *in)
{
    int st = in->wire->cm_recv(in->sock, &in->req, ND_CM_REQ);

    if (st == 0 && in->req.type != ND_CM_REQ)
        st = -ECONNABORTED;
    return st;
}

/* Take connection @i off the waiting list (the port stops watching it); it is returned. */
static struct incoming unwait(struct nd_listener *l, uint32_t i)
{
    struct incoming in = l->wait[i];

    nd_port_del_source(l->ov.port, in.source, in.sock);
    memmove(&l->wait[i], &l->wait[i + 1], (--l->nwait - i) * sizeof(*l->wait));
    if (!l->nwait)
        nd_port_timed(l->ov.port, -1);
    return in;
}

static void drop_waiting(struct nd_listener *l, uint32_t i)
{
    close(unwait(l, i).sock);
}

static void start_waiting(struct nd_listener *l, struct incoming *in)
{
    if (l->nwait == WAIT_MAX)
        drop_waiting(l, 0);
    struct incoming *room = nd_with_room(l->wait, &l->capwait, l->nwait, sizeof(*l->wait));

    if (room)
        l->wait = room;
    if (!room || nd_port_add_source(l->ov.port, in->sock, l, listener_on_signal, &l->inflight, &in->source) != 0) {
        close(in->sock);
        return;
    }
    in->deadline_ns = nd_now_ns() + (uint64_t)nd_env_ms(ND_KNOB_CM_TIMEOUT) * 1000000;
    if (!l->nwait)
        nd_port_timed(l->ov.port, 1);       /* the port ticks us until the deadline */
    l->wait[l->nwait++] = *in;
}

static void check_waiting(struct nd_listener *l)
{
    uint64_t now = nd_now_ns();

    for (uint32_t i = 0; i < l->nwait;) {
        int st = read_request(&l->wait[i]);

        if (st == 0) {
            struct incoming in = unwait(l, i);

            queue_request(l, &in);
        } else if (st != -EINPROGRESS || now >= l->wait[i].deadline_ns) {
            drop_waiting(l, i);
        } else {
            i++;
        }
    }
}

static void accept_all(struct nd_listener *l)
{
    for (uint32_t e = 0; e < l->nep; e++) {
        for (;;) {
            struct incoming in = { .wire = l->ep[e].wire };
            int sock = in.wire->cm_accept(l->ep[e].fd, &in.pid);
            int st;

            if (sock < 0)
                break;
            in.sock = sock;
            nd_cm_msg_init(&in.req, 0);
            st = read_request(&in);
            if (st == -EINPROGRESS && poll(&(struct pollfd){ .fd = sock, .events = POLLIN }, 1, REQ_GRACE_MS) > 0)
                st = read_request(&in);     /* the REQ was a moment behind the connect */
            if (st == 0)
                queue_request(l, &in);
            else if (st == -EINPROGRESS)
                start_waiting(l, &in);
            else
                close(sock);
        }
    }
    check_waiting(l);
}

/* Pair queued requests with pending GetConnectionRequest calls, oldest first. */
static void match(struct nd_listener *l, struct nd_ovbatch *b)
{
    while (l->nin && l->ng) {
        struct incoming in = l->in[0];
        struct gcr g = l->g[0];

        memmove(l->in, l->in + 1, --l->nin * sizeof(*l->in));
        memmove(l->g, l->g + 1, --l->ng * sizeof(*l->g));
        nd_connector_take_request(g.c, in.wire, in.sock, in.pid, &in.req, &l->addr);
        nd_ov_remove(&l->ov, g.ov);
        nd_ov_finish(g.ov, 0, 0, b);
    }
}

static void listener_pump(struct nd_listener *l, struct nd_ovbatch *b)
{
    if (l->state == LS_LISTENING)
        accept_all(l);
    match(l, b);
}

static void listener_on_signal(void *obj, struct nd_ovbatch *b)
{
    struct nd_listener *l = obj;
    nd_request_fn fn = NULL;
    void *ctx = NULL;

    pthread_mutex_lock(&l->lock);
    if (l->magic == ND_MAGIC_LISTENER) {    /* not closed while this call waited for the lock */
        listener_pump(l, b);
        if (l->nin && l->req_fn) {
            fn = l->req_fn;
            ctx = l->req_ctx;
        }
    }
    pthread_mutex_unlock(&l->lock);
    /* Unlocked: it takes the requests. Close quiesces the port's calls of this source
     * before it frees, so the listener outlives the call. */
    if (fn)
        fn(ctx);
}

static void listener_poll(struct nd_ovobj *obj)
{
    struct nd_listener *l = (struct nd_listener *)((char *)obj - offsetof(struct nd_listener, ov));
    struct nd_ovbatch b;

    nd_ovbatch_init(&b, l->ov.port);
    listener_on_signal(l, &b);
    nd_port_deliver(&b);
}

static void listener_wait(struct nd_ovobj *obj, nd_overlapped *ov)
{
    struct nd_listener *l = (struct nd_listener *)((char *)obj - offsetof(struct nd_listener, ov));
    struct nd_ovbatch b;
    int wake = nd_ovobj_wait_begin(obj);

    while (nd_ov_is_pending(ov)) {
        struct pollfd pfd[ND_ARRAY_SIZE(l->ep) + 16 + 1];
        uint32_t n = 0;

        nd_ovbatch_init(&b, l->ov.port);
        pthread_mutex_lock(&l->lock);
        listener_pump(l, &b);
        for (; n < l->nep; n++)
            pfd[n] = (struct pollfd){ .fd = l->ep[n].fd, .events = POLLIN };
        /* The first silent connections too (the rest are seen at the next round). */
        for (uint32_t i = 0; i < l->nwait && n < ND_ARRAY_SIZE(pfd) - 1; i++) {
            int queued = 0;

            /* Not one holding part of a REQ: it would read as ready at once, again and again. */
            if (ioctl(l->wait[i].sock, FIONREAD, &queued) == 0 && queued == 0)
                pfd[n++] = (struct pollfd){ .fd = l->wait[i].sock, .events = POLLIN };
        }
        pthread_mutex_unlock(&l->lock);
        nd_port_deliver(&b);
        if (!nd_ov_is_pending(ov))
            break;
        /* Another thread's pump may complete our request: its wake ends the poll. */
        pfd[n++] = (struct pollfd){ .fd = wake, .events = POLLIN };
        if (poll(pfd, n, 10) > 0 && (pfd[n - 1].revents & POLLIN))
            nd_ovobj_wake_drain(obj);
    }
    nd_ovobj_wait_end(obj);
}

static void close_endpoints(struct nd_listener *l)
{
    for (uint32_t i = 0; i < l->nep; i++) {
        nd_port_del_source(l->ov.port, l->ep[i].port_source, l->ep[i].fd);
        close(l->ep[i].fd);
    }
    l->nep = 0;
}

/*
 * The reservation socket holds the port against other listeners only once it listens (it
 * is bound with SO_REUSEADDR, which lets a second bound-only socket share the port). When
 * no TCP transport listened on it (shm alone), listen here: a stray TCP peer then waits in
 * a backlog nobody accepts, and its MPA exchange times out.
 */
static int hold_port(struct nd_listener *l)
{
    int on = 0;
    socklen_t len = sizeof(on);

    if (getsockopt(l->port_fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) == 0 && on)
        return 0;
    if (listen(l->port_fd, 1) == 0)
        return 0;
    close_endpoints(l);
    return errno == EADDRINUSE ? -EADDRINUSE : -ENOBUFS;
}

/* Listen with every enabled transport: shm's rendezvous and iwarp's TCP port. */
static int open_endpoints(struct nd_listener *l, uint32_t backlog)
{
    for (const struct nd_transport_ops *const *t = nd_transports; *t; t++) {
        struct endpoint *ep = &l->ep[l->nep];
        int st;

        if (!nd_transport_enabled(*t))
            continue;
        ep->wire = *t;
        ep->fd = (*t)->cm_listen((struct sockaddr *)&l->addr, l->port_fd, (int)(backlog ? backlog : SOMAXCONN));
        if (ep->fd < 0) {
            close_endpoints(l);
            return ep->fd == -EADDRINUSE ? -EADDRINUSE : -ENOBUFS;
        }
        st = nd_port_add_source(l->ov.port, ep->fd, l, listener_on_signal, &l->inflight, &ep->port_source);
        if (st != 0) {
            close(ep->fd);
            close_endpoints(l);
            return st;
        }
        l->nep++;
    }
    return hold_port(l);
}

ND_DOOR int ndc_listener_listen(nd_listener *l, uint32_t backlog)
{
    int st = 0;

    if (!listener_valid(l))
        return -EBADF;
    pthread_mutex_lock(&l->lock);
    if (l->state != LS_BOUND) {
        st = -EBADFD;
    } else if ((st = open_endpoints(l, backlog)) == 0) {
        l->backlog = backlog;
        l->state = LS_LISTENING;
    }
    pthread_mutex_unlock(&l->lock);
    return st;
}

ND_DOOR int ndc_listener_get_local_address(nd_listener *l, struct sockaddr *addr, uint32_t *len)
{
    int st;

    if (!listener_valid(l))
        return -EBADF;
    if (!len)
        return ND_EARG(2);
    pthread_mutex_lock(&l->lock);
    if (l->state != LS_LISTENING) {
        st = -EBADFD;
    } else {
        uint32_t need = nd_sockaddr_len((struct sockaddr *)&l->addr);

        st = !addr || *len < need ? -EOVERFLOW : 0;
        if (st == 0)
            memcpy(addr, &l->addr, need);
        *len = need;
    }
    pthread_mutex_unlock(&l->lock);
    return st;
}

ND_DOOR int ndc_listener_get_connection_request(nd_listener *l, nd_connector *c, nd_overlapped *ov)
{
    struct nd_ovbatch b;
    int st = -EINPROGRESS;
    struct gcr *g_room;

    if (!listener_valid(l))
        return -EBADF;
    if (!nd_connector_valid(c))
        return ND_EARG(1);
    if (!ov)
        return ND_EARG(2);
    if (nd_ov_is_pending(ov))
        return -EINVAL;    /* still in use by an earlier request */
    nd_ovbatch_init(&b, l->ov.port);
    pthread_mutex_lock(&l->lock);
    if (l->state != LS_LISTENING) {
        st = -EBADFD;
    } else if (!nd_connector_queue(c, l->adapter)) {
        st = -EBADFD;
    } else if (!(g_room = nd_with_room(l->g, &l->capg, l->ng, sizeof(*l->g)))) {
        nd_connector_unqueue(c);
        st = -ENOMEM;
    } else {
        l->g = g_room;
        l->g[l->ng++] = (struct gcr){ ov, c };
        nd_ov_start(&l->ov, ov);
        ov->internal_reserved = ND_CR_GET_REQUEST;
        match(l, &b);       /* a request may be waiting already */
    }
    pthread_mutex_unlock(&l->lock);
    nd_port_deliver(&b);
    return st;
}

ND_DOOR void ndc_listener_notify_requests(nd_listener *l, nd_request_fn fn, void *ctx)
{
    if (!listener_valid(l))
        return;
    pthread_mutex_lock(&l->lock);
    l->req_fn = fn;
    l->req_ctx = ctx;
    pthread_mutex_unlock(&l->lock);
}

ND_DOOR int ndc_listener_take_request(nd_listener *l, nd_connector **out)
{
    struct sockaddr_storage local;
    struct incoming in;
    nd_connector *c;
    int st;

    if (!l || !out)
        return -EBADF;
    /* The magic under the lock: the request callback may run while close, on another
     * thread, marks the listener dead (close then waits for the callback to return). */
    pthread_mutex_lock(&l->lock);
    if (l->magic != ND_MAGIC_LISTENER || !l->nin) {
        st = l->magic != ND_MAGIC_LISTENER ? -EBADF : -EINPROGRESS;
        pthread_mutex_unlock(&l->lock);
        return st;
    }
    in = l->in[0];
    memmove(l->in, l->in + 1, --l->nin * sizeof(*l->in));
    local = l->addr;
    pthread_mutex_unlock(&l->lock);
    /* The connector is made unlocked: it registers with the port, which may be serving
     * this listener's source right now. */
    st = ndc_adapter_create_connector(l->adapter, l->ov.port, &c);
    if (st != 0) {
        reject_and_close(in.wire, in.sock);     /* the peer hears a refusal */
        return st;
    }
    nd_connector_take_request(c, in.wire, in.sock, in.pid, &in.req, &local);
    *out = c;
    return 0;
}

static void cancel_all(struct nd_listener *l, struct nd_ovbatch *b)
{
    for (uint32_t i = 0; i < l->ng; i++)
        nd_connector_unqueue(l->g[i].c);
    l->ng = 0;
    for (nd_overlapped *ov = nd_ov_take_all(&l->ov), *next; ov; ov = next) {
        next = nd_ov_next(ov);
        nd_ov_finish(ov, -ECANCELED, 0, b);
    }
}

ND_DOOR int ndc_listener_cancel_overlapped_requests(nd_listener *l)
{
    struct nd_ovbatch b;

    if (!listener_valid(l))
        return -EBADF;
    nd_ovbatch_init(&b, l->ov.port);
    pthread_mutex_lock(&l->lock);
    cancel_all(l, &b);
    pthread_mutex_unlock(&l->lock);
    nd_port_deliver(&b);
    return 0;
}

ND_DOOR int ndc_listener_get_overlapped_result(nd_listener *l, nd_overlapped *ov, int wait)
{
    if (!listener_valid(l))
        return -EBADF;
    return ndc_get_overlapped_result(ov, wait);
}

ND_DOOR int ndc_listener_close(nd_listener *l)
{
    struct nd_ovbatch b;

    if (!listener_valid(l))
        return -EBADF;
    nd_ovbatch_init(&b, l->ov.port);
    pthread_mutex_lock(&l->lock);
    cancel_all(l, &b);
    close_endpoints(l);
    for (uint32_t i = 0; i < l->nin; i++) {
        reject_and_close(l->in[i].wire, l->in[i].sock);
    }
    while (l->nwait)
        drop_waiting(l, l->nwait - 1);
    if (l->port_fd >= 0)
        close(l->port_fd);
    l->magic = ND_MAGIC_DEAD;
    pthread_mutex_unlock(&l->lock);
    nd_port_deliver(&b);
    nd_port_quiesce(l->ov.port, &l->inflight);     /* a port thread may still be on its way in */
    free(l->in);
    free(l->wait);
    free(l->g);
    pthread_mutex_destroy(&l->lock);
    nd_port_unref(l->ov.port);
    nd_adapter_unref(l->adapter);
    nd_ovobj_fini(&l->ov);
    free(l);
    return 0;
}
