// SPDX-License-Identifier: MIT
/*
 * Connectors: ND2's connector state machine, one for every transport. A connection
 * keeps its CM socket (shm's rendezvous socket) and the port polls it (edge-triggered),
 * so that replies, disconnects and a peer's death arrive without any thread of ours; a
 * transport that takes the socket (iwarp) kicks our port source instead. Handshake steps
 * that wait on the peer run against ND_CM_TIMEOUT_MS.
 */
#include "cm_int.h"
#include "env.h"
#include "log.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

void nd_cm_msg_init(struct nd_cm_msg *m, uint16_t type)
{
    memset(m, 0, sizeof(*m));
    m->type = type;
}

#define CM_SPIN_NS (50ull * 1000)   /* how long a connector wait spins (bell or socket) */

static void connector_wait(struct nd_ovobj *obj, nd_overlapped *ov);
static void connector_poll(struct nd_ovobj *obj);
static const struct nd_ovobj_ops connector_ov_ops = { .wait = connector_wait, .poll = connector_poll };

static struct nd_connector *connector_of(struct nd_ovobj *obj)
{
    return (struct nd_connector *)((char *)obj - offsetof(struct nd_connector, ov));
}

static bool connector_valid(const struct nd_connector *c)
{
    return c && c->magic == ND_MAGIC_CONNECTOR;
}

int nd_connector_reserve_if_unset(struct nd_connector *c)
{
    struct sockaddr_storage want = c->local;

    if (nd_sockaddr_port((struct sockaddr *)&c->local))
        return 0;
    c->port_spare = true;           /* ours to give back to the adapter when we go */
    return nd_adapter_reserve_port(c->adapter, (struct sockaddr *)&want, &c->local, &c->port_fd);
}

ND_DOOR int ndc_adapter_create_connector(nd_adapter *a, nd_port *port, nd_connector **out)
{
    struct nd_connector *c;

    if (!nd_adapter_valid(a))
        return -EBADF;
    if (!nd_port_valid(port))
        return ND_EARG(2);
    if (!out)
        return ND_EARG(3);
    c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->adapter = a;
    c->port_fd = c->sock = -1;
    nd_cm_msg_init(&c->msg, 0);
    nd_ovobj_init(&c->ov, port, &connector_ov_ops);
    pthread_mutex_init(&c->lock, NULL);
    nd_adapter_ref(a);
    nd_port_ref(port);
    c->magic = ND_MAGIC_CONNECTOR;
    *out = c;
    return 0;
}

ND_DOOR int ndc_connector_bind(nd_connector *c, const struct sockaddr *addr, uint32_t len)
{
    int st;

    if (!connector_valid(c))
        return -EBADF;
    if (!nd_sockaddr_ok(addr, len))
        return ND_EARG(1);
    pthread_mutex_lock(&c->lock);
    if (c->state != ND_CS_IDLE)
        st = -EADDRINUSE;
    else if ((st = nd_cm_check_local(c->adapter, addr, false)) != 0)
        ;
    else if (nd_sockaddr_port(addr)) {
        if ((st = nd_cm_reserve_port(addr, &c->local, &c->port_fd, false)) == 0)
            c->state = ND_CS_BOUND;
    } else {
        /* Port 0: picked when first needed. Over TCP the connection's own port serves
         * (one port and one descriptor per connection, not two); a reservation is made
         * only for a transport without one, or when the address is asked for first. */
        memcpy(&c->local, addr, nd_sockaddr_len(addr));
        c->state = ND_CS_BOUND;
    }
    pthread_mutex_unlock(&c->lock);
    return st;
}

/* ---- completing pending requests (connector lock held) ---- */

static void finish_kind(struct nd_connector *c, enum nd_conn_req kind, int st, struct nd_ovbatch *b)
{
    nd_overlapped *ov = c->ov.head, *next;

    for (; ov; ov = next) {
        next = ov->internal_next;
        if (ov->internal_reserved == kind) {
            nd_ov_remove(&c->ov, ov);
            nd_ov_finish(ov, st, 0, b);
        }
    }
}

static void unregister_sock(struct nd_connector *c)
{
    if (c->registered) {
        nd_port_del_source(c->ov.port, c->port_source, c->sock);
        c->registered = false;
    }
}

static void close_sock(struct nd_connector *c)
{
    if (c->qp)
        nd_qp_link_cm(c->qp, -1, NULL);     /* before the socket, the source, maybe the port go */
    unregister_sock(c);
    if (c->sock >= 0)
        close(c->sock);
    c->sock = -1;
    c->wire_owned = false;
}

static void deadline_stop(struct nd_connector *c);
static void deadline_start(struct nd_connector *c);
static int redirect(struct nd_connector *c);

/* A Connect failed: back to AddressBound, to be retried (connector lock held). A port
 * the failed connection's socket held is gone with it. */
static void connect_failed(struct nd_connector *c, int why, struct nd_ovbatch *b)
{
    close_sock(c);
    deadline_stop(c);
    c->state = ND_CS_BOUND;
    nd_qp_unref(c->qp);
    c->qp = NULL;
    if (c->port_from_dial)
        nd_sockaddr_set_port(&c->local, 0);
    c->port_from_dial = false;
    if (b)
        finish_kind(c, ND_CR_CONNECT, why, b);
}

/* The connection ended from the other side (DISC, or the socket closed). */
static void peer_disconnected(struct nd_connector *c, struct nd_ovbatch *b)
{
    if (c->qp)
        nd_qp_fail(c->qp, -ECANCELED);
    c->state = ND_CS_PASSIVE_DISC;
    finish_kind(c, ND_CR_NOTIFY_DISC, 0, b);
}

static int attach_qp(struct nd_connector *c, struct nd_qp *qp, bool active);

static void on_message(struct nd_connector *c, struct nd_cm_msg *m, struct nd_ovbatch *b)
{
    switch (c->state) {
    case ND_CS_CONNECTING:
        if (m->type == ND_CM_REP) {
            c->msg = *m;
            c->have_msg = true;
            nd_cm_msg_init(m, 0);
            c->state = ND_CS_REP_RECEIVED;
            finish_kind(c, ND_CR_CONNECT, 0, b);
        } else if (m->type == ND_CM_REJ && m->redirect && redirect(c) == 0) {
            nd_log(ND_LOG_INFO, ND_SUB_CM, "connector %p: redirected to %s", (void *)c, c->wire->name);
        } else if (m->type == ND_CM_REJ) {
            c->msg = *m;
            c->have_msg = true;
            connect_failed(c, -ECONNREFUSED, b);
        }
        break;
    case ND_CS_ACCEPTING:
        if (m->type == ND_CM_RTU && c->wire->attach_at_rtu && attach_qp(c, c->qp, false) != 0) {
            c->state = ND_CS_DISCONNECTED;
            nd_qp_fail(c->qp, -ECANCELED);
            finish_kind(c, ND_CR_ACCEPT, -ECONNABORTED, b);
        } else if (m->type == ND_CM_RTU) {
            c->state = ND_CS_CONNECTED;
            finish_kind(c, ND_CR_ACCEPT, 0, b);
        } else if (m->type == ND_CM_REJ) {
            close_sock(c);
            c->state = ND_CS_DISCONNECTED;
            nd_qp_fail(c->qp, -ECANCELED);
            finish_kind(c, ND_CR_ACCEPT, -ECONNREFUSED, b);
        } else if (m->type == ND_CM_DISC) {
            peer_disconnected(c, b);
            finish_kind(c, ND_CR_ACCEPT, 0, b);
        }
        break;
    case ND_CS_CONNECTED:
        if (m->type == ND_CM_DISC || m->type == ND_CM_REJ)
            peer_disconnected(c, b);
        break;
    case ND_CS_REQ_RECEIVED:
    case ND_CS_REP_RECEIVED:
        if (m->type == ND_CM_DISC || m->type == ND_CM_REJ) {
            c->aborted = true;          /* the peer gave up before we answered */
            close_sock(c);
        }
        break;
    default:
        /* Nothing left to hear on this connection (an orderly close reads as REJ forever). */
        if (m->type == ND_CM_REJ || m->type == ND_CM_DISC)
            close_sock(c);
        break;
    }
}

/* The socket closed under us. */
static void on_eof(struct nd_connector *c, struct nd_ovbatch *b)
{
    close_sock(c);
    switch (c->state) {
    case ND_CS_CONNECTING:
        connect_failed(c, -ECONNREFUSED, b);
        break;
    case ND_CS_ACCEPTING:
        c->state = ND_CS_DISCONNECTED;
        nd_qp_fail(c->qp, -ECANCELED);
        finish_kind(c, ND_CR_ACCEPT, -ECONNABORTED, b);
        break;
    case ND_CS_CONNECTED:
        peer_disconnected(c, b);
        break;
    case ND_CS_REQ_RECEIVED:
    case ND_CS_REP_RECEIVED:
        c->aborted = true;
        break;
    default:
        break;
    }
}

static uint16_t expected_msg(const struct nd_connector *c)
{
    return c->state == ND_CS_CONNECTING ? ND_CM_REP : c->state == ND_CS_ACCEPTING ? ND_CM_RTU : 0;
}

/*
 * The handshake states wait on the peer: CONNECTING for its reply, ACCEPTING for its RTU
 * (CompleteConnect). A peer that never answers must not hold the request forever, so each
 * runs against ND_CM_TIMEOUT_MS; the port ticks its sources while any deadline runs.
 */
static bool awaits_peer(const struct nd_connector *c)
{
    return c->state == ND_CS_CONNECTING || c->state == ND_CS_ACCEPTING;
}

static void deadline_start(struct nd_connector *c)
{
    c->deadline_ns = nd_now_ns() + (uint64_t)nd_env_ms(ND_KNOB_CM_TIMEOUT) * 1000000;
    if (!c->timed)
        nd_port_timed(c->ov.port, 1);
    c->timed = true;
}

static void deadline_stop(struct nd_connector *c)
{
    if (c->timed)
        nd_port_timed(c->ov.port, -1);
    c->timed = false;
}

static void disconnect_locked(struct nd_connector *c, struct nd_ovbatch *b);

static void on_timeout(struct nd_connector *c, struct nd_ovbatch *b)
{
    nd_log(ND_LOG_INFO, ND_SUB_CM, "connector %p: the peer left the handshake unanswered", (void *)c);
    if (c->state == ND_CS_CONNECTING) {
        connect_failed(c, -ETIMEDOUT, b);
    } else {
        /* The QP may be attached already (shm attaches at Accept): tell the peer. */
        disconnect_locked(c, b);
        finish_kind(c, ND_CR_ACCEPT, -ETIMEDOUT, b);
    }
}

static void connector_read(struct nd_connector *c, struct nd_ovbatch *b);

/* Read whatever the peer sent, then check the handshake's deadline (connector lock held). */
static void connector_pump(struct nd_connector *c, struct nd_ovbatch *b)
{
    connector_read(c, b);
    if (c->timed && awaits_peer(c) && nd_now_ns() >= c->deadline_ns)
        on_timeout(c, b);
    if (c->timed && !awaits_peer(c))
        deadline_stop(c);
}

static void connector_read(struct nd_connector *c, struct nd_ovbatch *b)
{
    struct nd_cm_msg m;

    if (c->wire_owned) {
        if (c->qp && atomic_load(&c->qp->peer_left))
            on_eof(c, b);
        return;
    }
    while (c->sock >= 0) {
        int st = c->wire->cm_recv(c->sock, &m, expected_msg(c));

        if (st == -EINPROGRESS)
            break;
        if (st != 0) {
            on_eof(c, b);
            break;
        }
        on_message(c, &m, b);
    }
}

static void connector_on_signal(void *obj, struct nd_ovbatch *b)
{
    struct nd_connector *c = obj;

    pthread_mutex_lock(&c->lock);
    if (c->magic == ND_MAGIC_CONNECTOR)     /* not closed while this call waited for the lock */
        connector_pump(c, b);
    pthread_mutex_unlock(&c->lock);
}

static int register_sock(struct nd_connector *c)
{
    int st = nd_port_add_source(c->ov.port, c->sock, c, connector_on_signal, &c->inflight, &c->port_source);

    c->registered = st == 0;
    return st;
}

/* A message just went to the peer: ring its doorbell if the transport has one and the
 * peer's region is ours to reach (the QP is attached). */
static void ring_peer(struct nd_connector *c, struct nd_qp *qp)
{
    if (qp && c->wire && c->wire->cm_ring)
        c->wire->cm_ring(qp);
}

/* Connect @qp through the connection's transport; it may take the CM socket. */
static int attach_qp(struct nd_connector *c, struct nd_qp *qp, bool active)
{
    int sock = c->sock;
    int st;

    if (!c->wire->attach_takes_socket) {
        /* The socket stays ours, and so does its place in the port's set. */
        st = c->wire->attach(qp, &sock, c->pid, &c->msg, c->ird, c->ord, active);
        if (st == 0) {
            nd_qp_link_cm(qp, c->sock, NULL);
            nd_transport_note_path(c->wire, c->pid);
        }
        return st;
    }
    unregister_sock(c);
    st = c->wire->attach(qp, &sock, c->pid, &c->msg, c->ird, c->ord, active);
    c->wire_owned = sock < 0;
    c->sock = sock;
    if ((c->sock >= 0 || c->wire_owned) && register_sock(c) != 0 && st == 0)
        st = -ENOBUFS;
    if (st == 0 && c->wire_owned && c->registered) {
        struct nd_port_kick k = nd_port_kick_of(c->ov.port, c->port_source);

        nd_qp_link_cm(qp, -1, &k);
    } else if (st == 0) {
        nd_qp_link_cm(qp, c->sock, NULL);
    }
    if (st == 0)
        nd_transport_note_path(c->wire, c->pid);
    return st;
}

/* Read the socket once and hand out what completed (connector lock not held). */
static void connector_pump_once(struct nd_connector *c)
{
    struct nd_ovbatch b;

    nd_ovbatch_init(&b, c->ov.port);
    pthread_mutex_lock(&c->lock);
    connector_pump(c, &b);
    pthread_mutex_unlock(&c->lock);
    nd_port_deliver(&b);
}

static void connector_poll(struct nd_ovobj *obj)
{
    connector_pump_once(connector_of(obj));
}

static void spin_on_bell(struct nd_connector *c, nd_overlapped *ov, struct nd_qp *qp,
                         uint32_t (*bell_of)(struct nd_qp *qp), uint32_t seen)
{
    uint64_t end = nd_now_ns() + CM_SPIN_NS;

    connector_pump_once(c);
    for (uint32_t i = 1; nd_ov_is_pending(ov); i++) {
        uint32_t bell = bell_of(qp);

        if (bell != seen) {
            seen = bell;
            connector_pump_once(c);
        } else if (i % 64 == 0 && nd_now_ns() >= end) {
            break;
        } else {
            nd_cpu_relax();
        }
    }
}

/*
 * Before sleeping, spin a moment on our QP's doorbell, which the peer rings after each
 * message it sends once it has our region (REP, RTU, DISC): each handshake step then
 * costs no wake-up (5-35 us on a VM) when the peer answers quickly. The bell is read
 * before the socket, so a message that lands in between is caught by one or the other.
 * A transport without a bell (iwarp's MPA exchange) is spun on its socket instead, one
 * non-blocking read a turn: a system call each, but a wake-up costs more than fifty.
 */
static void connector_spin(struct nd_connector *c, nd_overlapped *ov)
{
    uint32_t (*bell_of)(struct nd_qp *qp) = NULL;
    struct nd_qp *qp = NULL;
    bool sock_spin = false;
    uint32_t seen = 0;

    if (!nd_spin_enter())
        return;
    pthread_mutex_lock(&c->lock);
    if (c->qp && c->wire && c->wire->cm_bell) {
        qp = c->qp;
        nd_qp_ref(qp);      /* a close on another thread must not free the bell under us */
        bell_of = c->wire->cm_bell;
        seen = bell_of(qp);
    } else {
        sock_spin = c->sock >= 0 && !c->wire_owned;
    }
    pthread_mutex_unlock(&c->lock);
    if (qp) {
        spin_on_bell(c, ov, qp, bell_of, seen);
        nd_qp_unref(qp);
    } else if (sock_spin) {
        for (uint64_t end = nd_now_ns() + CM_SPIN_NS; nd_ov_is_pending(ov) && nd_now_ns() < end;)
            connector_pump_once(c);
    }
    nd_spin_leave();
}

static void connector_wait(struct nd_ovobj *obj, nd_overlapped *ov)
{
    struct nd_connector *c = connector_of(obj);
    struct nd_ovbatch b;
    int wake;

    connector_spin(c, ov);
    if (!nd_ov_is_pending(ov))
        return;
    wake = nd_ovobj_wait_begin(obj);

    /* Whoever polled the QP's CQ now sleeps here: its transport must not wait for the
     * next poll (a disconnect to notice, answers held back). */
    pthread_mutex_lock(&c->lock);
    if (c->qp)
        nd_qp_idle(c->qp);
    pthread_mutex_unlock(&c->lock);

    while (nd_ov_is_pending(ov)) {
        struct pollfd pfd[3] = { { .fd = wake, .events = POLLIN }, { .fd = -1, .events = POLLIN },
                                 { .fd = -1, .events = POLLIN } };

        nd_ovbatch_init(&b, c->ov.port);
        pthread_mutex_lock(&c->lock);
        connector_pump(c, &b);
        pfd[1].fd = c->sock;
        if (c->wire_owned)
            pfd[2].fd = nd_port_kick_fd(c->ov.port);    /* where the transport's news lands */
        pthread_mutex_unlock(&c->lock);
        nd_port_deliver(&b);
        if (!nd_ov_is_pending(ov))
            break;
        /* Another thread's pump may complete our request: its wake ends the poll. */
        if (poll(pfd, 3, 10) <= 0)
            continue;
        if (pfd[0].revents & POLLIN)
            nd_ovobj_wake_drain(obj);
        if (pfd[2].revents & POLLIN) {
            nd_ovbatch_init(&b, c->ov.port);
            nd_port_run_kicked(c->ov.port, &b);
            nd_port_deliver(&b);
        }
    }
    nd_ovobj_wait_end(obj);
}

/* ---- the active side ---- */

/* Dial @dest with the first transport that serves it: shm when its listener is on this
 * host, in this namespace, of our uid; iwarp otherwise. */
static int dial(struct nd_connector *c, const struct sockaddr *dest, const struct nd_transport_ops *after)
{
    const struct nd_transport_ops *const *t = nd_transports;
    int fd = -ENOENT;

    if (after) {
        while (*t && *t != after)
            t++;
        if (*t)
            t++;
    }
    const struct nd_transport_ops *const *first_absent = NULL;

    for (; *t; t++) {
        if (!nd_transport_enabled(*t))
            continue;
        fd = (*t)->cm_dial(dest, (const struct sockaddr *)&c->local, &c->pid);
        if (fd != -ENOENT && fd != -EACCES) {
            c->wire = *t;
            break;
        }
        if (fd == -ENOENT && !first_absent)
            first_absent = t;
    }
    /* first_absent is set only before the transport that connected. A listener opens its
     * endpoints in this list's order, so one that answered by a later transport has its
     * earlier ones open by now: a listener caught between them would
     * otherwise give a same-host peer a TCP connection for good. Ask the first absent one
     * again; the later connection closes before any message went out on it. A transport
     * whose listener answered and could not serve us (-EACCES) is not asked again. */
    if (fd >= 0 && first_absent) {
        pid_t pid = c->pid;
        int again = (*first_absent)->cm_dial(dest, (const struct sockaddr *)&c->local, &pid);

        if (again >= 0) {
            close(fd);
            fd = again;
            c->pid = pid;
            c->wire = *first_absent;
        }
    }
    return fd;
}

static int dial_status(int err)
{
    switch (err) {
    case -ECONNREFUSED: case -ENOENT: case -EACCES: return -ECONNREFUSED;
    case -ETIMEDOUT: return -ETIMEDOUT;
    case -EHOSTUNREACH: return -EHOSTUNREACH;
    case -ENETUNREACH: return -ENETUNREACH;
    default: return -ENOBUFS;
    }
}

/* The connector's port, if Bind left it to us: the dialled socket's own, or reserved. */
static int take_port(struct nd_connector *c, int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);

    if (!c->wire->dial_holds_port)
        return nd_connector_reserve_if_unset(c);
    if (nd_sockaddr_port((struct sockaddr *)&c->local) && !c->port_from_dial)
        return 0;          /* Bind named it, or GetLocalAddress reserved it */
    if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0 || ss.ss_family != c->local.ss_family)
        return -ENOBUFS;
    nd_sockaddr_set_port(&c->local, nd_sockaddr_port((struct sockaddr *)&ss));
    c->port_from_dial = true;
    return 0;
}

/* Dial c->peer with the transports after @after (NULL: all) and send the REQ kept in
 * c->req (connector lock held). */
static int send_request(struct nd_connector *c, struct nd_qp *qp, const struct nd_transport_ops *after)
{
    for (;;) {
        struct nd_cm_msg m;
        int st;
        int fd = dial(c, (struct sockaddr *)&c->peer, after);

        if (fd < 0)
            return dial_status(fd);
        if ((st = take_port(c, fd)) != 0) {
            close(fd);
            return st;
        }
        c->req.src = c->local;
        qp->region_peer = c->pid;   /* who may map the region, if the transport shares it */
        if (c->wire->cm_send(fd, &c->req, qp) == 0) {
            c->sock = fd;
            c->wire_owned = false;
            return register_sock(c);
        }
        /* The listener may have answered and closed before our REQ went out: a redirect
         * sends us on to the next transport, anything else is a refusal. */
        nd_cm_msg_init(&m, 0);
        bool again = c->wire->cm_recv(fd, &m, ND_CM_REP) == 0 && m.type == ND_CM_REJ && m.redirect;
        close(fd);
        if (!again)
            return -ECONNREFUSED;
        after = c->wire;
    }
}

static int start_connect(struct nd_connector *c, struct nd_qp *qp, const struct sockaddr *dest,
                               uint32_t ird, uint32_t ord, const void *pdata, uint32_t plen)
{
    nd_cm_msg_init(&c->req, ND_CM_REQ);
    c->req.ird = c->ird = nd_clamp_u32(ird, nd_caps.max_ird);
    c->req.ord = c->ord = nd_clamp_u32(ord, nd_caps.max_ord);
    c->req.pdata_len = plen;
    if (plen)
        memcpy(c->req.pdata, pdata, plen);
    memcpy(&c->peer, dest, nd_sockaddr_len(dest));
    return send_request(c, qp, NULL);
}

/* The listener asked us to come by another transport (a same-host peer that may not touch
 * our memory): same request, next transport. */
static int redirect(struct nd_connector *c)
{
    const struct nd_transport_ops *from = c->wire;
    int st;

    close_sock(c);
    st = send_request(c, c->qp, from);
    if (st == 0)
        deadline_start(c);
    return st;
}

ND_DOOR int ndc_connector_connect(nd_connector *c, nd_qp *qp, const struct sockaddr *dest, uint32_t dest_len,
                                  uint32_t ird, uint32_t ord, const void *pdata, uint32_t plen,
                                  nd_overlapped *ov)
{
    int st;

    if (!connector_valid(c))
        return -EBADF;
    if (!nd_qp_valid(qp) || qp->adapter != c->adapter)
        return ND_EARG(1);
    if (!nd_sockaddr_ok(dest, dest_len))
        return ND_EARG(2);
    if (plen > nd_caps.max_connect_pdata)
        return -ERANGE;
    if (plen && !pdata)
        return ND_EARG(6);
    if (!ov)
        return ND_EARG(8);
    if (nd_ov_is_pending(ov))
        return -EINVAL;    /* still in use by an earlier request */
    if (nd_sockaddr_is_wildcard(dest))
        return -ENODEV;
    pthread_mutex_lock(&c->lock);
    if (c->state == ND_CS_IDLE)
        st = -EDESTADDRREQ;
    else if (c->state == ND_CS_QUEUED || c->state == ND_CS_DISCONNECTED)
        st = -EBADFD;
    else if (c->state != ND_CS_BOUND || !nd_qp_connectable(qp))
        st = -EISCONN;
    else if ((st = start_connect(c, qp, dest, ird, ord, pdata, plen)) == 0) {
        nd_qp_ref(qp);
        c->qp = qp;
        c->state = ND_CS_CONNECTING;
        deadline_start(c);
        c->have_msg = false;
        nd_ov_start(&c->ov, ov);
        ov->internal_reserved = ND_CR_CONNECT;
        st = -EINPROGRESS;
    } else if (c->sock >= 0) {
        close_sock(c);
    }
    pthread_mutex_unlock(&c->lock);
    return st;
}

ND_DOOR int ndc_connector_complete_connect(nd_connector *c, nd_overlapped *ov)
{
    struct nd_cm_msg rtu;
    int st;

    if (!connector_valid(c))
        return -EBADF;
    if (!ov)
        return ND_EARG(1);
    if (nd_ov_is_pending(ov))
        return -EINVAL;    /* still in use by an earlier request */
    pthread_mutex_lock(&c->lock);
    if (c->state != ND_CS_REP_RECEIVED) {
        st = c->state == ND_CS_DISCONNECTED ? -ECONNABORTED : -ENOTCONN;
    } else if (c->aborted) {
        c->state = ND_CS_DISCONNECTED;
        st = -ECONNABORTED;
    } else {
        /* Our inbound limit is what the peer will read from us, and the reverse. */
        c->ird = nd_clamp_u32(c->ird, c->msg.ord);
        c->ord = nd_clamp_u32(c->ord, c->msg.ird);
        st = attach_qp(c, c->qp, true);
        nd_cm_msg_init(&rtu, ND_CM_RTU);
        if (st == 0)
            st = c->wire->cm_send(c->sock, &rtu, NULL);
        if (st == 0)
            ring_peer(c, c->qp);
        c->state = st == 0 ? ND_CS_CONNECTED : ND_CS_DISCONNECTED;
    }
    pthread_mutex_unlock(&c->lock);
    return st;
}

/* ---- the passive side ---- */

void nd_connector_take_request(struct nd_connector *c, const struct nd_transport_ops *wire, int sock, pid_t pid,
                               struct nd_cm_msg *req, const struct sockaddr_storage *local)
{
    pthread_mutex_lock(&c->lock);
    c->wire = wire;
    c->wire_owned = false;
    c->sock = sock;
    c->pid = pid;
    c->msg = *req;
    c->have_msg = true;
    c->peer = req->src;
    c->local = *local;
    c->state = ND_CS_REQ_RECEIVED;
    /* Anything the peer sent after its REQ is read when the port reports the socket. */
    if (register_sock(c) != 0)
        c->aborted = true;
    pthread_mutex_unlock(&c->lock);
}

ND_DOOR int ndc_connector_accept(nd_connector *c, nd_qp *qp, uint32_t ird, uint32_t ord, const void *pdata,
                                 uint32_t plen, nd_overlapped *ov)
{
    struct nd_cm_msg rep;
    struct nd_ovbatch b;
    int st;

    if (!connector_valid(c))
        return -EBADF;
    if (!nd_qp_valid(qp) || qp->adapter != c->adapter)
        return ND_EARG(1);
    if (plen > nd_caps.max_accept_pdata)
        return -ERANGE;
    if ((plen && !pdata) || !ov || nd_ov_is_pending(ov))
        return -EINVAL;
    pthread_mutex_lock(&c->lock);
    nd_ovbatch_init(&b, c->ov.port);
    if (c->state != ND_CS_REQ_RECEIVED || !nd_qp_connectable(qp)) {
        st = c->state == ND_CS_DISCONNECTED ? -ECONNABORTED : -EISCONN;
    } else if (c->aborted) {
        c->state = ND_CS_DISCONNECTED;
        st = -ECONNABORTED;
    } else {
        bool waits = !c->wire->accept_waits_rtu || c->wire->accept_waits_rtu(&c->msg);

        c->ird = nd_clamp_u32(nd_clamp_u32(ird, nd_caps.max_ird), c->msg.ord);
        c->ord = nd_clamp_u32(nd_clamp_u32(ord, nd_caps.max_ord), c->msg.ird);
        st = c->wire->attach_at_rtu ? 0 : attach_qp(c, qp, false);
        nd_cm_msg_init(&rep, ND_CM_REP);
        rep.ird = c->ird;
        rep.ord = c->ord;
        rep.xport_opts = c->msg.xport_opts;
        rep.pdata_len = plen;
        if (plen)
            memcpy(rep.pdata, pdata, plen);
        rep.src = c->local;
        qp->region_peer = c->pid;
        if (st == 0)
            st = c->wire->cm_send(c->sock, &rep, qp);
        /* No RTU to come: the reply is out, the connection is up. */
        if (st == 0 && !waits && c->wire->attach_at_rtu)
            st = attach_qp(c, qp, false);
        if (st == 0) {
            ring_peer(c, qp);
            nd_qp_ref(qp);
            c->qp = qp;
            c->have_msg = false;
            nd_ov_start(&c->ov, ov);
            ov->internal_reserved = ND_CR_ACCEPT;
            if (waits) {
                c->state = ND_CS_ACCEPTING;
                deadline_start(c);
            } else {
                c->state = ND_CS_CONNECTED;
                finish_kind(c, ND_CR_ACCEPT, 0, &b);
            }
            st = -EINPROGRESS;
        } else {
            c->state = ND_CS_DISCONNECTED;
            st = -ECONNABORTED;
        }
    }
    pthread_mutex_unlock(&c->lock);
    nd_port_deliver(&b);
    return st;
}

ND_DOOR int ndc_connector_reject(nd_connector *c, const void *pdata, uint32_t plen)
{
    struct nd_cm_msg rej;
    int st = 0;

    if (!connector_valid(c))
        return -EBADF;
    if (plen > nd_caps.max_accept_pdata)
        return -ERANGE;
    if (plen && !pdata)
        return ND_EARG(1);
    pthread_mutex_lock(&c->lock);
    if (c->state == ND_CS_REQ_RECEIVED || c->state == ND_CS_REP_RECEIVED) {
        nd_cm_msg_init(&rej, ND_CM_REJ);
        rej.pdata_len = plen;
        rej.from_active = c->state == ND_CS_REP_RECEIVED;
        rej.xport_opts = c->msg.xport_opts;
        if (plen)
            memcpy(rej.pdata, pdata, plen);
        if (c->sock >= 0)
            c->wire->cm_send(c->sock, &rej, NULL);
        close_sock(c);
        c->state = ND_CS_DISCONNECTED;
    } else {
        st = c->state == ND_CS_DISCONNECTED ? -ENOTCONN : -EBADFD;
    }
    pthread_mutex_unlock(&c->lock);
    return st;
}

/* ---- disconnection ---- */

ND_DOOR int ndc_connector_notify_disconnect(nd_connector *c, nd_overlapped *ov)
{
    struct nd_ovbatch b;
    int st;

    if (!connector_valid(c))
        return -EBADF;
    if (!ov)
        return ND_EARG(1);
    if (nd_ov_is_pending(ov))
        return -EINVAL;    /* still in use by an earlier request */
    nd_ovbatch_init(&b, c->ov.port);
    pthread_mutex_lock(&c->lock);
    connector_pump(c, &b);   /* a disconnect may already be waiting in the socket */
    if (c->state == ND_CS_CONNECTED || c->state == ND_CS_ACCEPTING) {
        nd_ov_start(&c->ov, ov);
        ov->internal_reserved = ND_CR_NOTIFY_DISC;
        st = -EINPROGRESS;
    } else if (c->state == ND_CS_PASSIVE_DISC) {
        st = 0;
    } else {
        st = c->state == ND_CS_DISCONNECTED ? -ESHUTDOWN : -EBADFD;
    }
    pthread_mutex_unlock(&c->lock);
    nd_port_deliver(&b);
    return st;
}

/* Tear down (connector lock held): tell the peer, flush our QP, release waiters. */
static void disconnect_locked(struct nd_connector *c, struct nd_ovbatch *b)
{
    struct nd_cm_msg disc;

    /* The queue pair stops first: the peer's posts see it in shared memory at once, before
     * our message can reach it, so a request it posts after our Disconnect is flushed
     * rather than delivered to a queue pair that is going (ndrpingpong's client counts on
     * its last Send coming back canceled). */
    if (c->qp)
        nd_qp_fail(c->qp, -ECANCELED);
    if (c->sock >= 0) {
        nd_cm_msg_init(&disc, ND_CM_DISC);
        if (c->wire->cm_send(c->sock, &disc, NULL) == 0)
            ring_peer(c, c->qp);
    }
    finish_kind(c, ND_CR_NOTIFY_DISC, -ESHUTDOWN, b);
    close_sock(c);
    deadline_stop(c);
    c->state = ND_CS_DISCONNECTED;
}

ND_DOOR int ndc_connector_disconnect(nd_connector *c, nd_overlapped *ov)
{
    struct nd_ovbatch b;
    int st = 0;

    if (!connector_valid(c))
        return -EBADF;
    if (!ov)
        return ND_EARG(1);
    if (nd_ov_is_pending(ov))
        return -EINVAL;    /* still in use by an earlier request */
    nd_ovbatch_init(&b, c->ov.port);
    pthread_mutex_lock(&c->lock);
    if (c->state == ND_CS_CONNECTED || c->state == ND_CS_PASSIVE_DISC)
        disconnect_locked(c, &b);
    else
        st = -ENOTCONN;
    pthread_mutex_unlock(&c->lock);
    nd_port_deliver(&b);
    return st;
}

ND_DOOR int ndc_connector_cancel_overlapped_requests(nd_connector *c)
{
    struct nd_ovbatch b;

    if (!connector_valid(c))
        return -EBADF;
    nd_ovbatch_init(&b, c->ov.port);
    pthread_mutex_lock(&c->lock);
    for (nd_overlapped *ov = nd_ov_take_all(&c->ov), *next; ov; ov = next) {
        next = nd_ov_next(ov);
        if (ov->internal_reserved == ND_CR_CONNECT && c->state == ND_CS_CONNECTING)
            connect_failed(c, -ECANCELED, NULL);   /* @ov itself completes below */
        nd_ov_finish(ov, -ECANCELED, 0, &b);
    }
    pthread_mutex_unlock(&c->lock);
    nd_port_deliver(&b);
    return 0;
}

ND_DOOR int ndc_connector_get_overlapped_result(nd_connector *c, nd_overlapped *ov, int wait)
{
    if (!connector_valid(c))
        return -EBADF;
    return ndc_get_overlapped_result(ov, wait);
}

/* A listener closing or cancelling releases a connector it was filling. */
void nd_connector_unqueue(struct nd_connector *c)
{
    pthread_mutex_lock(&c->lock);
    if (c->state == ND_CS_QUEUED)
        c->state = ND_CS_IDLE;
    pthread_mutex_unlock(&c->lock);
}

bool nd_connector_queue(struct nd_connector *c, struct nd_adapter *a)
{
    bool ok;

    pthread_mutex_lock(&c->lock);
    ok = c->state == ND_CS_IDLE && c->adapter == a;
    if (ok)
        c->state = ND_CS_QUEUED;
    pthread_mutex_unlock(&c->lock);
    return ok;
}

bool nd_connector_valid(const struct nd_connector *c)
{
    return connector_valid(c);
}

ND_DOOR int ndc_connector_close(nd_connector *c)
{
    struct nd_ovbatch b;

    if (!connector_valid(c))
        return -EBADF;
    /* A listener's pending GetConnectionRequest holds this connector: it would fill a
     * freed one. The application cancels that request (or lets it complete) first, as it
     * must for a CQ that queue pairs still use. */
    pthread_mutex_lock(&c->lock);
    if (c->state == ND_CS_QUEUED) {
        pthread_mutex_unlock(&c->lock);
        return -EBUSY;
    }
    pthread_mutex_unlock(&c->lock);
    ndc_connector_cancel_overlapped_requests(c);
    nd_ovbatch_init(&b, c->ov.port);
    pthread_mutex_lock(&c->lock);
    if (c->state == ND_CS_CONNECTED || c->state == ND_CS_ACCEPTING || c->state == ND_CS_PASSIVE_DISC)
        disconnect_locked(c, &b);   /* Release without Disconnect: an implicit one */
    else if (c->state == ND_CS_REQ_RECEIVED || c->state == ND_CS_REP_RECEIVED) {
        struct nd_cm_msg rej;

        nd_cm_msg_init(&rej, ND_CM_REJ);
        rej.from_active = c->state == ND_CS_REP_RECEIVED;
        rej.xport_opts = c->msg.xport_opts;
        if (c->sock >= 0)
            c->wire->cm_send(c->sock, &rej, NULL);
    }
    close_sock(c);
    deadline_stop(c);
    c->magic = ND_MAGIC_DEAD;
    pthread_mutex_unlock(&c->lock);
    nd_port_deliver(&b);
    nd_port_quiesce(c->ov.port, &c->inflight);     /* a port thread may still be on its way in */
    if (c->qp)
        nd_qp_unref(c->qp);
    if (c->port_fd >= 0 && c->port_spare)
        nd_adapter_release_port(c->adapter, c->port_fd, &c->local);
    else if (c->port_fd >= 0)
        close(c->port_fd);
    pthread_mutex_destroy(&c->lock);
    nd_port_unref(c->ov.port);
    nd_adapter_unref(c->adapter);
    nd_ovobj_fini(&c->ov);
    free(c);
    return 0;
}
