// SPDX-License-Identifier: MIT
/*
 * Addresses, queue pairs and connections of rdma_cm ids, over the core's connectors and
 * listeners.
 *
 * Active side: rdma_resolve_addr picks the local address the route leaves by and binds a
 * connector to it; rdma_connect connects the id's QP; when the peer accepts, the CM thread
 * completes the connection (rdma_cm sends the RTU itself) and queues ESTABLISHED with the
 * peer's private data. Passive side: each request that joins a listener's queue in the
 * core is taken on the CM thread and becomes a new id and a CONNECT_REQUEST.
 * rdma_accept completes with ESTABLISHED once the active side completed. Either side's
 * disconnect, or the peer's, gives DISCONNECTED once, and the QP goes to ERR (flushed).
 */
#include "cma_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* A request the CM thread posted while rdma_destroy_id was draining the id may have missed
 * its cancel. destroying is set under the id lock before that cancel, so reading it under
 * the lock after the post tells which: false, the drain's cancel comes later and takes the
 * request; true, it may have come already, and the request is cancelled again here. */
static void cancel_if_destroying(struct cm_id *id, enum cm_op_kind kind)
{
    bool destroying;
    nd_connector *conn;

    pthread_mutex_lock(&id->lock);
    destroying = id->destroying;
    conn = id->conn;
    pthread_mutex_unlock(&id->lock);
    if (!destroying)
        return;
    if (conn)
        ndc_connector_cancel_overlapped_requests(conn);
}

static void handle(struct cm_id *id, enum cm_op_kind kind, int st);

/* After the core took @kind's request: pending, it completes on the CM port; done at once
 * (the core queues nothing then), it is handled here. */
static int start(struct cm_id *id, enum cm_op_kind kind, int st)
{
    if (st == -EINPROGRESS) {
        cancel_if_destroying(id, kind);
        return 0;
    }
    cm_op_taken(id, kind);
    if (st == 0) {
        handle(id, kind, 0);
        cm_op_done(id);
        return 0;
    }
    cm_op_done(id);
    return cm_fail(ndv_status_errno(st));
}

static const struct cm_engine conn_engine;

/* The CM's port, the CM thread knowing what to do with what completes there. */
static nd_port *conn_port(void)
{
    cm_engine_set(&conn_engine);
    return cm_port();
}

/* A UD id's step: the engine is set first, so that rdma_destroy_id releases what it makes. */
static struct cm_id *ud_step(struct cm_id *id)
{
    cm_engine_set(&conn_engine);
    return id;
}

static int new_connector(struct cm_id *id)
{
    return id->conn ? 0 : ndc_adapter_create_connector(ndv_context_adapter(cm_context()), conn_port(), &id->conn);
}

/* Whether an interface other than loopback is up with an address (IPv6 link-local aside). */
static bool host_has_network(void)
{
    struct ifaddrs *ifs, *i;
    bool found = false;

    if (getifaddrs(&ifs) < 0)
        return true;
    for (i = ifs; i && !found; i = i->ifa_next) {
        if (!i->ifa_addr || !(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK))
            continue;
        if (i->ifa_addr->sa_family == AF_INET)
            found = true;
        else if (i->ifa_addr->sa_family == AF_INET6)
            found = !IN6_IS_ADDR_LINKLOCAL(&((const struct sockaddr_in6 *)i->ifa_addr)->sin6_addr);
    }
    freeifaddrs(ifs);
    return found;
}

static bool is_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;

        return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
    }
    return ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24 == 127;
}

/*
 * Whether binding @sa puts an id on the device. The kernel's rdma_cm attaches a device at
 * bind only for an address of the interface an RDMA device is on: a wildcard address
 * leaves the id without one, and so does loopback unless the device is on lo (kernel rxe
 * and siw on eth0 both measured so). nd0 is on every interface, lo included only when the
 * host (or network namespace) has no other: programs rely on the difference, libfabric's
 * verbs provider above all, which advertises the device's interface addresses to its
 * peers when its "localhost" probe finds no device, and 127.0.0.1 when it finds one.
 */
static bool binds_device(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET6 ? IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)sa)->sin6_addr)
                                  : ((const struct sockaddr_in *)sa)->sin_addr.s_addr == htonl(INADDR_ANY))
        return false;
    return !is_loopback(sa) || !host_has_network();
}

/*
 * Bind @addr as the kernel binds an rdma_cm id: an address no interface has is
 * EADDRNOTAVAIL, port 0 takes a free port now, and the port is the id's until the core's
 * listener or connector takes it over (release_port, just before). A socket bound to it
 * holds it meanwhile: without SO_REUSEADDR when the port was chosen here, so that no other
 * bind shares it; with it for a port the caller named, which a connection may have left
 * in TIME_WAIT, as the core's listener binds.
 */
static int hold_port(struct cm_id *id, const struct sockaddr *addr)
{
    struct sockaddr_storage *src = &id->id.route.addr.src_storage;
    int fd = socket(addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    socklen_t len = sizeof(*src);

    if (fd < 0)
        return -1;
    if (addr->sa_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    if (addr->sa_family == AF_INET6 ? ((const struct sockaddr_in6 *)addr)->sin6_port
                                    : ((const struct sockaddr_in *)addr)->sin_port)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, addr, cm_sa_len(addr)) < 0 || getsockname(fd, (struct sockaddr *)src, &len) < 0) {
        int e = errno;

        close(fd);
        return cm_fail(e);
    }
    id->port_hold = fd;
    return 0;
}

static void release_port(struct cm_id *id)
{
    if (id->port_hold >= 0)
        close(id->port_hold);
    id->port_hold = -1;
}

CM_API int rdma_bind_addr(struct rdma_cm_id *cid, struct sockaddr *addr)
{
    struct cm_id *id = (struct cm_id *)cid;

    if (!cid || !addr || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
        return cm_fail(EINVAL);
    if (id->bound)
        return cm_fail(EINVAL);
    if (cm_is_ud(id) ? cm_ud_bind(ud_step(id), addr) < 0 : hold_port(id, addr) < 0)
        return -1;
    id->bound = true;
    if (binds_device(addr))
        cm_attach_device(id);
    return 0;
}

CM_API int rdma_resolve_addr(struct rdma_cm_id *cid, struct sockaddr *src, struct sockaddr *dst, int timeout_ms)
{
    struct cm_id *id = (struct cm_id *)cid;
    struct sockaddr_storage from;
    int st;

    (void)timeout_ms;
    if (!cid || !dst || (dst->sa_family != AF_INET && dst->sa_family != AF_INET6))
        return cm_fail(EINVAL);
    /* A source binds an id not bound yet, as rdma_bind_addr; a bound id keeps its binding
     * whatever source is given (the kernel binds only an idle id). */
    if (!id->bound && src && rdma_bind_addr(cid, src) < 0)
        return -1;
    if (cm_is_ud(id))
        return cm_ud_resolve_addr(ud_step(id), dst);
    if (id->bound)
        from = cid->route.addr.src_storage;
    else if (cm_route_source(dst, &from) < 0)
        return -1;                  /* ENETUNREACH and the like, from connect */
    memcpy(&cid->route.addr.dst_storage, dst, cm_sa_len(dst));
    release_port(id);
    st = new_connector(id);
    if (st == 0)
        st = ndc_connector_bind(id->conn, (struct sockaddr *)&from, cm_sa_len((struct sockaddr *)&from));
    if (st != 0) {
        cm_queue_event(id, RDMA_CM_EVENT_ADDR_ERROR, -ndv_status_errno(st), NULL, 0);
    } else {
        uint32_t len = sizeof(cid->route.addr.src_storage);

        ndc_connector_get_local_address(id->conn, &cid->route.addr.src_addr, &len);
        id->bound = true;
        cm_attach_device(id);
        cm_queue_event(id, RDMA_CM_EVENT_ADDR_RESOLVED, 0, NULL, 0);
    }
    return cm_sync_status(id);
}

CM_API int rdma_resolve_route(struct rdma_cm_id *cid, int timeout_ms)
{
    struct cm_id *id = (struct cm_id *)cid;
    struct rdma_cm_event *ev;

    (void)timeout_ms;
    if (!cid || (!id->conn && id->ud_sock < 0))
        return cm_fail(EINVAL);
    cm_queue_event(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, NULL, 0);
    if (!id->own_channel)
        return 0;
    if (cm_wait_event(id, &ev) < 0)
        return -1;
    rdma_ack_cm_event(ev);
    return 0;
}

/* ---- queue pairs ---- */

static int make_cqs(struct cm_id *id, struct ibv_qp_init_attr *attr)
{
    struct rdma_cm_id *c = &id->id;
    int depth_s = attr->cap.max_send_wr ? (int)attr->cap.max_send_wr : 1;
    int depth_r = attr->cap.max_recv_wr ? (int)attr->cap.max_recv_wr : 1;

    c->send_cq_channel = ibv_create_comp_channel(c->verbs);
    c->recv_cq_channel = ibv_create_comp_channel(c->verbs);
    if (c->send_cq_channel && c->recv_cq_channel) {
        c->send_cq = ibv_create_cq(c->verbs, depth_s, c, c->send_cq_channel, 0);
        c->recv_cq = ibv_create_cq(c->verbs, depth_r, c, c->recv_cq_channel, 0);
    }
    if (!c->send_cq || !c->recv_cq)
        return -1;
    attr->send_cq = c->send_cq;
    attr->recv_cq = c->recv_cq;
    id->own_cqs = true;
    return 0;
}

static void free_cqs(struct cm_id *id)
{
    struct rdma_cm_id *c = &id->id;

    if (!id->own_cqs)
        return;
    if (c->send_cq)
        ibv_destroy_cq(c->send_cq);
    if (c->recv_cq)
        ibv_destroy_cq(c->recv_cq);
    if (c->send_cq_channel)
        ibv_destroy_comp_channel(c->send_cq_channel);
    if (c->recv_cq_channel)
        ibv_destroy_comp_channel(c->recv_cq_channel);
    c->send_cq = c->recv_cq = NULL;
    c->send_cq_channel = c->recv_cq_channel = NULL;
    id->own_cqs = false;
}

/* The id's QP, made by ibv_create_qp_ex from @ax (its PD the id's where it names none);
 * the capabilities granted go back in @ax. */
static int create_qp(struct cm_id *id, struct ibv_qp_init_attr_ex *ax)
{
    struct rdma_cm_id *cid = &id->id;
    struct ibv_qp_init_attr_ex a;
    struct ibv_qp *qp;

    if (!(ax->comp_mask & IBV_QP_INIT_ATTR_PD) || !ax->pd)
        ax->pd = cid->pd;
    ax->comp_mask |= IBV_QP_INIT_ATTR_PD;
    if (!ax->pd || ax->pd->context != cid->verbs || cid->qp)
        return cm_fail(EINVAL);
    a = *ax;
    if (!a.srq)
        a.srq = cid->srq;           /* rdma_create_srq's */
    if (!a.qp_type)
        a.qp_type = cid->qp_type;   /* left 0 (rdma_create_ep's callers): the id's, RC */
    /* ibv_qp_init_attr is the head of ibv_qp_init_attr_ex (ibv_create_qp_ex casts so). */
    if ((!a.send_cq || !a.recv_cq) && make_cqs(id, (struct ibv_qp_init_attr *)&a) < 0) {
        free_cqs(id);
        return -1;
    }
    qp = ibv_create_qp_ex(cid->verbs, &a);
    if (!qp) {
        int e = errno;

        free_cqs(id);
        return cm_fail(e);
    }
    if (qp->qp_type == IBV_QPT_UD) {
        /* Ready to send and receive at once, with the port space's Q_Key (librdmacm's way). */
        if (cm_ud_init_qp(qp) < 0) {
            int e = errno;

            ibv_destroy_qp(qp);
            free_cqs(id);
            return cm_fail(e);
        }
    } else {
        ndv_qp_cm_state(qp, IBV_QPS_INIT, 0, 0);
    }
    if (id->ack_timeout >= 0)
        ndv_qp_cm_timeout(qp, (uint8_t)id->ack_timeout);
    ax->cap = a.cap;
    cid->qp = qp;
    cid->pd = a.pd;
    return 0;
}

CM_API int rdma_create_qp(struct rdma_cm_id *cid, struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
    struct ibv_qp_init_attr_ex ax;
    int rc;

    if (!cid || !attr)
        return cm_fail(EINVAL);
    ax = (struct ibv_qp_init_attr_ex){ .qp_context = attr->qp_context, .send_cq = attr->send_cq,
                                       .recv_cq = attr->recv_cq, .srq = attr->srq, .cap = attr->cap,
                                       .qp_type = attr->qp_type, .sq_sig_all = attr->sq_sig_all,
                                       .comp_mask = pd ? IBV_QP_INIT_ATTR_PD : 0, .pd = pd };
    rc = create_qp((struct cm_id *)cid, &ax);
    if (rc == 0)
        attr->cap = ax.cap;
    return rc;
}

CM_API int rdma_create_qp_ex(struct rdma_cm_id *cid, struct ibv_qp_init_attr_ex *ex)
{
    if (!cid || !ex)
        return cm_fail(EINVAL);
    return create_qp((struct cm_id *)cid, ex);
}

CM_API void rdma_destroy_qp(struct rdma_cm_id *cid)
{
    struct cm_id *id = (struct cm_id *)cid;
    struct ibv_qp *qp;

    if (!cid || !cid->qp)
        return;
    /* Cleared first, under the lock: the CM thread looks at the QP only there. */
    pthread_mutex_lock(&id->lock);
    qp = cid->qp;
    cid->qp = NULL;
    pthread_mutex_unlock(&id->lock);
    ibv_destroy_qp(qp);
    free_cqs(id);
}

/* ---- connections ---- */

/* How long a Connect nothing listens for yet is dialled again (ND_RDMACM_REFUSED_WAIT). */
static uint32_t refused_wait_ms(void)
{
    char *end;
    unsigned long v = strtoul(ndv_env(ND_KNOB_RDMACM_REFUSED_WAIT), &end, 10);

    return *end || v > 10000 ? 250 : (uint32_t)v;
}

/* A Connect refused because nothing listens on the port yet is dialled again for a short
 * while. Programs written for hardware CMs (perftest -R) connect the moment a handshake over
 * another connection ends, while their server is still between that handshake and its
 * rdma_listen; a kernel CM's address and route resolution is slow enough to hide the race
 * there, ours is not. A refusal by a listener (Reject) is not retried: it is a REJ, not a
 * dial that found no one. */
static int dial(struct cm_id *id, const struct rdma_conn_param *p)
{
    uint32_t waited = 0, step = 1, limit = refused_wait_ms();
    struct rdma_cm_id *cid = &id->id;

    for (;;) {
        int st = ndc_connector_connect(id->conn, ndv_qp_core(cm_conn_qp(id)), &cid->route.addr.dst_addr,
                                            cm_sa_len(&cid->route.addr.dst_addr), id->ird, id->ord,
                                            p ? p->private_data : NULL, p ? p->private_data_len : 0,
                                            &id->op[CM_OP_CONNECT].ov);

        if (st != -ECONNREFUSED || waited >= limit)
            return st;
        usleep(step * 1000);
        waited += step;
        step = step < 32 ? step * 2 : step;
    }
}

/*
 * An application-managed QP: with no QP of the CM's, rdma_conn_param's qp_num names one of
 * the application's (as the kernel's iWARP CM takes it), held for the id. One in RESET is
 * moved to INIT for the connection, as the CM does its own; the application moves it on
 * as it likes (rdma_init_qp_attr).
 */
/* The connection moved its QP on: the CM's own, or the application's while it has not
 * begun to destroy it (ndv_qp_cm_state_held). */
static void conn_qp_state(struct cm_id *id, enum ibv_qp_state state, uint32_t ird, uint32_t ord)
{
    if (id->id.qp || id->carrier_qp)
        ndv_qp_cm_state(cm_conn_qp(id), state, ird, ord);
    else if (id->ext_qp)
        ndv_qp_cm_state_held(id->ext_qp, state, ird, ord);
}

/* The CM's own QP for a connection that carries none of the application's (carrier_qp). */
static int make_carrier(struct cm_id *id)
{
    struct ibv_qp_init_attr a = { .qp_type = IBV_QPT_RC, .cap = { 1, 1, 1, 1, 0 } };

    if (id->carrier_qp)
        return 0;
    id->carrier_cq = ibv_create_cq(id->id.verbs, 2, NULL, NULL, 0);
    if (!id->carrier_cq)
        return -1;
    a.send_cq = a.recv_cq = id->carrier_cq;
    id->carrier_qp = ibv_create_qp(cm_default_pd(), &a);
    if (!id->carrier_qp) {
        int e = errno;

        ibv_destroy_cq(id->carrier_cq);
        id->carrier_cq = NULL;
        return cm_fail(e);
    }
    ndv_qp_cm_state(id->carrier_qp, IBV_QPS_INIT, 0, 0);
    return 0;
}

static void carrier_destroy(struct cm_id *id)
{
    if (id->carrier_qp)
        ibv_destroy_qp(id->carrier_qp);
    if (id->carrier_cq)
        ibv_destroy_cq(id->carrier_cq);
    id->carrier_qp = NULL;
    id->carrier_cq = NULL;
}

static int bind_ext_qp(struct cm_id *id, const struct rdma_conn_param *p)
{
    if (id->id.qp || id->carrier_qp)
        return 0;
    if (!p || !p->qp_num || !id->id.verbs)
        return cm_fail(EINVAL);     /* resolve first; an iWARP-style connection needs its QP */
    if (id->ext_qp && id->ext_qp->qp_num == p->qp_num)
        return 0;
    struct ibv_qp *qp = ndv_qp_find(id->id.verbs, p->qp_num);

    /* On RoCE the CM only names the QP to the peer (the kernel's IB CM never touches an
     * application's QP): a UD QP's number (UCX's dummy, whose connection only carries
     * private data) gets a carrier. iWARP's CM connects the QP itself and needs an RC
     * one; a number naming no QP at all is refused, as a mistake. */
    if (!qp && ND_DGRAM_IS_QPN(p->qp_num) && !cm_iwarp(id) && !id->ext_qp)
        return make_carrier(id);
    if (!qp)
        return cm_fail(EINVAL);
    if (qp->qp_type != IBV_QPT_RC || id->ext_qp) {
        ndv_qp_release(qp);
        return cm_fail(EINVAL);
    }
    if (qp->state == IBV_QPS_RESET)
        ndv_qp_cm_state_held(qp, IBV_QPS_INIT, 0, 0);
    id->ext_qp = qp;
    return 0;
}

CM_API int rdma_connect(struct rdma_cm_id *cid, struct rdma_conn_param *p)
{
    struct cm_id *id = (struct cm_id *)cid;
    struct rdma_cm_event *ev;
    int st;
    int rc;

    if (cid && cm_is_ud(id))
        return cm_ud_connect(ud_step(id), p);
    if (!cid || !id->conn || bind_ext_qp(id, p) < 0)
        return -1;
    /* The core clamps both to the device's limits (max_qp_rd_atom). No parameters ask for
     * the device's limits, as in rdma-core (RDMA_MAX_RESP_RES / RDMA_MAX_INIT_DEPTH). */
    id->ird = p ? p->responder_resources : RDMA_MAX_RESP_RES;
    id->ord = p ? p->initiator_depth : RDMA_MAX_INIT_DEPTH;
    ndv_qp_rnr_retry(cm_conn_qp(id), p ? p->rnr_retry_count : 7);     /* rdma-core's default: 7 */
    cm_op_begin(id, CM_OP_CONNECT);
    st = dial(id, p);
    if (st == -ECONNREFUSED) {
        /* As the kernel's iWARP CM: rdma_connect succeeds, REJECTED (-ECONNREFUSED) follows. */
        cm_op_taken(id, CM_OP_CONNECT);
        handle(id, CM_OP_CONNECT, st);
        cm_op_done(id);
        rc = 0;
    } else {
        rc = start(id, CM_OP_CONNECT, st);
    }
    if (rc < 0 || !id->own_channel)
        return rc;
    rc = cm_wait_event(id, &ev);
    if (rc < 0)
        return -1;
    int status = ev->status;
    rdma_ack_cm_event(ev);
    return rc == RDMA_CM_EVENT_ESTABLISHED || rc == RDMA_CM_EVENT_CONNECT_RESPONSE ? 0
                                                                                   : cm_fail(status ? -status : ECONNREFUSED);
}

static void requests_in(void *ctx);

CM_API int rdma_listen(struct rdma_cm_id *cid, int backlog)
{
    struct cm_id *id = (struct cm_id *)cid;
    int st;

    if (!cid || !id->bound || id->listener)
        return cm_fail(EINVAL);
    if (cm_is_ud(id))
        return cm_ud_listen(ud_step(id));
    release_port(id);
    id->gate = cm_gate_new(id);
    st = id->gate ? ndc_adapter_create_listener(ndv_context_adapter(cm_context()), conn_port(), &id->listener)
                  : -ENOMEM;
    if (st == 0) {
        ndc_listener_notify_requests(id->listener, requests_in, id);
        st = ndc_listener_bind(id->listener, &cid->route.addr.src_addr, cm_sa_len(&cid->route.addr.src_addr));
    }
    if (st == 0)
        st = ndc_listener_listen(id->listener, backlog > 0 ? (uint32_t)backlog : 0);
    if (st != 0) {
        if (id->listener)
            ndc_listener_close(id->listener);
        id->listener = NULL;
        if (id->gate)
            cm_gate_close(id->gate);
        id->gate = NULL;
        return cm_fail(ndv_status_errno(st));
    }
    uint32_t len = sizeof(cid->route.addr.src_storage);
    ndc_listener_get_local_address(id->listener, &cid->route.addr.src_addr, &len);
    return 0;
}

CM_API int rdma_accept(struct rdma_cm_id *cid, struct rdma_conn_param *p)
{
    struct cm_id *id = (struct cm_id *)cid;
    struct rdma_cm_event *ev;
    uint32_t ird, ord;
    int rc;

    if (cid && cm_is_ud(id))
        return cm_ud_accept(id, p);
    if (!cid || !id->conn)
        return cm_fail(EINVAL);
    if (bind_ext_qp(id, p) < 0)
        return -1;
    /* What the application asks; the core clamps it to the device's limits and the peer's offer. */
    ird = p ? p->responder_resources : id->ird;
    ord = p ? p->initiator_depth : id->ord;
    ndv_qp_rnr_retry(cm_conn_qp(id), p ? p->rnr_retry_count : 7);
    id->ird = ird;
    id->ord = ord;
    if (id->gate && !__atomic_exchange_n(&id->accept_counted, true, __ATOMIC_ACQ_REL))
        cm_gate_accept_begin(id->gate);
    cm_op_begin(id, CM_OP_ACCEPT);
    rc = start(id, CM_OP_ACCEPT,
               ndc_connector_accept(id->conn, ndv_qp_core(cm_conn_qp(id)), ird, ord, p ? p->private_data : NULL,
                                   p ? p->private_data_len : 0, &id->op[CM_OP_ACCEPT].ov));
    if (rc < 0)
        cm_accept_over(id);
    if (rc < 0 || !id->own_channel)
        return rc;
    rc = cm_wait_event(id, &ev);
    if (rc < 0)
        return -1;
    rdma_ack_cm_event(ev);
    return rc == RDMA_CM_EVENT_ESTABLISHED ? 0 : cm_fail(ECONNABORTED);
}

CM_API int rdma_reject(struct rdma_cm_id *cid, const void *pdata, uint8_t len)
{
    struct cm_id *id = (struct cm_id *)cid;
    int st;

    if (cid && cm_is_ud(id))
        return cm_ud_reject(id, pdata, len);
    if (!cid || !id->conn)
        return cm_fail(EINVAL);
    st = ndc_connector_reject(id->conn, pdata, len);
    return st == 0 ? 0 : cm_fail(ndv_status_errno(st));
}

CM_API int rdma_disconnect(struct rdma_cm_id *cid)
{
    struct cm_id *id = (struct cm_id *)cid;

    if (!cid || !id->conn)
        return cm_fail(EINVAL);
    /* Right after ESTABLISHED the CM thread may still be completing the connection. */
    pthread_mutex_lock(&id->lock);
    while (id->completing)
        pthread_cond_wait(&id->cond, &id->lock);
    pthread_mutex_unlock(&id->lock);
    conn_qp_state(id, IBV_QPS_ERR, 0, 0);
    pthread_mutex_lock(&id->lock);
    bool busy = id->op[CM_OP_DISCONNECT].pending || !id->connected;
    pthread_mutex_unlock(&id->lock);
    if (busy)
        return 0;                   /* under way, or nothing to end */
    cm_op_begin(id, CM_OP_DISCONNECT);
    return start(id, CM_OP_DISCONNECT, ndc_connector_disconnect(id->conn, &id->op[CM_OP_DISCONNECT].ov));
}

static void complete_active(struct cm_id *id, bool queue_established, const void *pdata, uint32_t len);

/* The active side of an application-managed QP, after CONNECT_RESPONSE: the RTU goes. */
CM_API int rdma_establish(struct rdma_cm_id *cid)
{
    struct cm_id *id = (struct cm_id *)cid;
    bool awaiting;

    if (!cid || cid->qp)
        return cm_fail(EINVAL);
    pthread_mutex_lock(&id->lock);
    awaiting = id->awaiting_establish;
    id->awaiting_establish = false;
    pthread_mutex_unlock(&id->lock);
    if (!awaiting)
        return cm_fail(EINVAL);
    complete_active(id, false, NULL, 0);
    return 0;
}

/* The accept of a listener's request is over (established, failed, or its id destroyed):
 * the listener's requests that waited for it may go. */
void cm_accept_over(struct cm_id *id)
{
    if (__atomic_exchange_n(&id->accept_counted, false, __ATOMIC_ACQ_REL))
        cm_gate_accept_end(id->gate);
}

/* ---- the CM thread's side ---- */

/* The connection is up: the id's state and its QP's (RTS, with the read limits agreed),
 * and the watch for its end. */
static void mark_established(struct cm_id *id)
{
    ndc_connector_get_read_limits(id->conn, &id->ird, &id->ord);
    pthread_mutex_lock(&id->lock);
    id->connected = true;
    pthread_mutex_unlock(&id->lock);
    conn_qp_state(id, IBV_QPS_RTS, id->ird, id->ord);
    uint32_t alen = sizeof(id->id.route.addr.dst_storage);
    ndc_connector_get_peer_address(id->conn, &id->id.route.addr.dst_addr, &alen);
}

static void watch_disconnect(struct cm_id *id)
{
    cm_op_begin(id, CM_OP_NOTIFY);
    start(id, CM_OP_NOTIFY, ndc_connector_notify_disconnect(id->conn, &id->op[CM_OP_NOTIFY].ov));
}

static void disconnected(struct cm_id *id);

/* The passive side's: its accept completed. */
static void established(struct cm_id *id, const void *pdata, uint32_t len)
{
    mark_established(id);
    cm_queue_event(id, RDMA_CM_EVENT_ESTABLISHED, 0, pdata, len);
    watch_disconnect(id);
}

/*
 * The active side's, once the peer's reply is in. CompleteConnect tells the peer (the RTU),
 * which may then send at once: ESTABLISHED is queued before it, so that the application
 * has the event before any such message completes on its CQ. Until the QP is connected a
 * post on it waits (ndv_qp_cm_attaching), for the few microseconds CompleteConnect takes.
 * It never pends; if it fails, DISCONNECTED follows the ESTABLISHED.
 */
static void complete_active(struct cm_id *id, bool queue_established, const void *pdata, uint32_t len)
{
    struct ibv_qp *qp = cm_conn_qp(id);
    int st;

    /* Connected as the application sees it from the event on: its rdma_disconnect then
     * ends the connection rather than finding nothing to end. */
    pthread_mutex_lock(&id->lock);
    id->connected = true;
    id->completing = true;
    pthread_mutex_unlock(&id->lock);
    ndv_qp_cm_attaching(qp, true);
    if (queue_established)
        cm_queue_event(id, RDMA_CM_EVENT_ESTABLISHED, 0, pdata, len);
    st = ndc_connector_complete_connect(id->conn, &id->op[CM_OP_COMPLETE].ov);
    if (st == 0)
        mark_established(id);
    ndv_qp_cm_attaching(qp, false);
    if (st == 0)
        watch_disconnect(id);
    else
        disconnected(id);
    pthread_mutex_lock(&id->lock);
    id->completing = false;
    pthread_cond_broadcast(&id->cond);
    pthread_mutex_unlock(&id->lock);
}

/*
 * DISCONNECTED waits while the peer's last messages sit in the QP's receive ring, until a
 * poll takes them or DISCONNECT_DRAIN_MS pass. A program that polls its CQ and reads its
 * event channel in turn (libfabric's rxm: the channel when a poll came back empty) would
 * otherwise see the disconnect first when the messages and the disconnect both land
 * between its poll and its read, and close the connection with them unread: they are
 * dropped with the QP, as rdma-core's hardware providers drop them. The list is
 * deferred_lock's (a disconnect of our own may defer from the application's thread while
 * the CM thread defers or releases another); only the CM thread releases, so a deferral
 * from elsewhere wakes it to take the list's next deadline into its wait. An id's QP is
 * read under the id's lock (rdma_destroy_qp clears it there).
 */
#define DISCONNECT_DRAIN_MS 500

struct deferred_disconnect {
    struct cm_id *id;
    uint64_t deadline_ns;
};

static pthread_mutex_t deferred_lock = PTHREAD_MUTEX_INITIALIZER;
static struct deferred_disconnect *deferred;
static uint32_t n_deferred, cap_deferred;

static uint64_t now_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static bool defer_disconnect(struct cm_id *id)
{
    bool pending = false;

    pthread_mutex_lock(&deferred_lock);
    if (n_deferred == cap_deferred) {
        uint32_t cap = cap_deferred ? cap_deferred * 2 : 8;
        struct deferred_disconnect *d = realloc(deferred, cap * sizeof(*d));

        if (!d)
            goto out;               /* delivered now */
        deferred = d;
        cap_deferred = cap;
    }
    pthread_mutex_lock(&id->lock);
    pending = id->id.qp && ndv_qp_receives_pending(id->id.qp);
    if (pending)
        id->ops_out++;              /* a request out: rdma_destroy_id waits for the release */
    pthread_mutex_unlock(&id->lock);
    if (pending)
        deferred[n_deferred++] = (struct deferred_disconnect){ id, now_ns() + DISCONNECT_DRAIN_MS * 1000000ull };
out:
    pthread_mutex_unlock(&deferred_lock);
    if (pending && !cm_on_thread())
        cm_wake();
    return pending;
}

/* Delivers the DISCONNECTED events whose wait is over (CM thread); how long the thread may
 * wait before it looks again, in ms (-1: until woken). */
static int release_disconnects(void)
{
    uint64_t now;

    pthread_mutex_lock(&deferred_lock);
    now = n_deferred ? now_ns() : 0;
    for (uint32_t i = 0; i < n_deferred;) {
        struct cm_id *id = deferred[i].id;

        pthread_mutex_lock(&id->lock);
        bool wait = !id->destroying && id->id.qp && ndv_qp_receives_pending(id->id.qp) &&
                    now < deferred[i].deadline_ns;
        bool deliver = !id->destroying;
        pthread_mutex_unlock(&id->lock);
        if (wait) {
            i++;
            continue;
        }
        deferred[i] = deferred[--n_deferred];
        if (deliver)
            cm_queue_event(id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
        cm_op_done(id);
    }
    int wait_ms = n_deferred ? 1 : -1;

    pthread_mutex_unlock(&deferred_lock);
    return wait_ms;
}

static void disconnected(struct cm_id *id)
{
    bool first;

    pthread_mutex_lock(&id->lock);
    first = id->connected && !id->disconnected;
    id->disconnected = true;
    pthread_mutex_unlock(&id->lock);
    if (!first)
        return;
    /* As librdmacm: on an InfiniBand-style device only the application's rdma_disconnect
     * moves its QP to ERR; an RNIC's QP ends with its connection. */
    if (cm_iwarp(id))
        conn_qp_state(id, IBV_QPS_ERR, 0, 0);
    if (!defer_disconnect(id))
        cm_queue_event(id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
}

static void connect_done(struct cm_id *id, int st)
{
    uint8_t pdata[CM_PDATA_MAX];
    uint32_t len = sizeof(pdata);

    if (st == 0) {
        /* The peer's reply is in: its private data is the ESTABLISHED event's. */
        if (ndc_connector_get_private_data(id->conn, pdata, &len) != 0)
            len = 0;
        if (!id->id.qp && !cm_iwarp(id)) {
            /* An application-managed QP on an InfiniBand-style device: the application
             * moves its QP on, then rdma_establish sends the RTU (rdma-core's order). */
            pthread_mutex_lock(&id->lock);
            id->awaiting_establish = true;
            pthread_mutex_unlock(&id->lock);
            cm_queue_event(id, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, pdata, len);
            return;
        }
        complete_active(id, true, pdata, len);
        return;
    }
    if (st == -ECONNREFUSED) {
        if (ndc_connector_get_private_data(id->conn, pdata, &len) != 0)
            len = 0;
        cm_queue_event(id, RDMA_CM_EVENT_REJECTED, -ECONNREFUSED, pdata, len);
    } else if (st == -ETIMEDOUT || st == -ENETUNREACH || st == -EHOSTUNREACH) {
        cm_queue_event(id, RDMA_CM_EVENT_UNREACHABLE, -ndv_status_errno(st), NULL, 0);
    } else if (st != -ECANCELED) {
        cm_queue_event(id, RDMA_CM_EVENT_CONNECT_ERROR, -ndv_status_errno(st), NULL, 0);
    }
}

/* One request taken from listener @l's queue: a new id, and CONNECT_REQUEST on @l's channel. */
static void request_in(struct cm_id *l, nd_connector *conn)
{
    struct cm_id *child;
    uint8_t pdata[CM_PDATA_MAX];
    uint32_t len = sizeof(pdata), alen;
    bool destroying;

    pthread_mutex_lock(&l->lock);
    destroying = l->destroying;
    pthread_mutex_unlock(&l->lock);
    child = destroying ? NULL : cm_id_new(l->id.channel, l->id.context, l->id.ps);
    if (!child) {
        ndc_connector_reject(conn, NULL, 0);
        ndc_connector_close(conn);
        return;
    }
    child->conn = conn;
    child->gate = l->gate;
    cm_gate_ref(child->gate);
    child->bound = true;
    cm_attach_device(child);
    ndc_connector_get_read_limits(conn, &child->ird, &child->ord);
    alen = sizeof(child->id.route.addr.src_storage);
    ndc_connector_get_local_address(conn, &child->id.route.addr.src_addr, &alen);
    alen = sizeof(child->id.route.addr.dst_storage);
    ndc_connector_get_peer_address(conn, &child->id.route.addr.dst_addr, &alen);
    if (ndc_connector_get_private_data(conn, pdata, &len) != 0)
        len = 0;
    cm_gate_request(l->gate, child, pdata, len);
}

/* The core queued requests for a listener (on the CM thread, which serves the port). Its
 * id lives until rdma_destroy_id has closed the listener, which waits for this call. */
static void requests_in(void *ctx)
{
    struct cm_id *l = ctx;
    nd_connector *conn;

    while (ndc_listener_take_request(l->listener, &conn) == 0)
        request_in(l, conn);
}

static void handle(struct cm_id *id, enum cm_op_kind kind, int st)
{
    switch (kind) {
    case CM_OP_CONNECT:
        connect_done(id, st);
        break;
    case CM_OP_ACCEPT:
        if (st == 0)
            established(id, NULL, 0);
        else if (st != -ECANCELED)
            cm_queue_event(id, RDMA_CM_EVENT_CONNECT_ERROR, -ndv_status_errno(st), NULL, 0);
        cm_accept_over(id);
        break;
    case CM_OP_NOTIFY:
    case CM_OP_DISCONNECT:
        if (st != -ECANCELED || kind == CM_OP_DISCONNECT)
            disconnected(id);
        break;
    default:
        break;
    }
}

/* rdma_destroy_id of an id with a gate: a listener's gate closes (its held requests are
 * refused), a request's id gives its accept back and its reference up. */
static void forget_gate(struct cm_id *id)
{
    if (id->listener) {
        cm_gate_close(id->gate);
        return;
    }
    cm_accept_over(id);
    cm_gate_unref(id->gate);
}

static void forget(struct cm_id *id)
{
    if (cm_is_ud(id))
        cm_ud_forget(id);
    carrier_destroy(id);
}

static const struct cm_engine conn_engine = { .handle = handle, .idle = release_disconnects,
                                              .forget_gate = forget_gate, .forget = forget };
