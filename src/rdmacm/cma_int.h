/* SPDX-License-Identifier: MIT */
/*
 * The rdma_cm front end (librdmacm.so.1): rdma-core 44's CM ABI over the core's connectors
 * and listeners, reached through libibverbs.so.1 (ndv.h).
 *
 * Every asynchronous step (connect, complete, accept, a disconnect and the notice of one)
 * is an overlapped request on one process-wide port. The CM thread waits on that port and
 * turns each completion into the rdma_cm event the id's channel then delivers; it also
 * serves listeners, whose queued requests it takes as they come (core.h's request queue).
 * An id made without a channel (and every id of rdma_create_ep) gets a channel of its own,
 * and the calls that wait for their event (resolve, connect, accept, get_request) wait on it.
 */
#ifndef ND_RDMACM_INT_H
#define ND_RDMACM_INT_H

#include <rdma/rdma_cma.h>
#include <stdbool.h>

#include "core/core.h"
#include "core/evq.h"
#include "verbs/ndv.h"

#include <stddef.h>

#define CM_API __attribute__((visibility("default")))
#define CM_PDATA_MAX 256

/* CM_OP_COMPLETE's request never pends (CompleteConnect is synchronous): only its slot is used. */
enum cm_op_kind { CM_OP_CONNECT, CM_OP_COMPLETE, CM_OP_ACCEPT, CM_OP_NOTIFY, CM_OP_DISCONNECT, CM_OP_COUNT };

struct cm_id;

/* One overlapped request of an id, on the CM port. */
struct cm_op {
    nd_overlapped ov;
    struct cm_id *id;
    enum cm_op_kind kind;
    bool pending;                   /* with the core (id lock) */
};

struct cm_event {
    struct rdma_cm_event ev;        /* first: what the application holds */
    struct nd_evq_node node;        /* owner: the id whose count it holds (ev.id) */
    uint8_t pdata[CM_PDATA_MAX];
};
#define CM_EVENT_OF(n) ((struct cm_event *)((char *)(n) - offsetof(struct cm_event, node)))

struct cm_channel {
    struct rdma_event_channel ch;
    struct nd_evq q;
};

struct cm_id {
    struct rdma_cm_id id;           /* first: what the application holds */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct cm_channel *own_channel; /* a synchronous id's */
    nd_connector *conn;
    nd_listener *listener;
    struct cm_gate *gate;           /* a listener's, shared with its requests' ids (cma_gate.c) */
    bool accept_counted;            /* atomic: its accept is out, counted by the gate */
    struct cm_op op[CM_OP_COUNT];
    uint32_t events_out;            /* delivered, not acknowledged (lock) */
    uint32_t ops_out;               /* requests with the core (lock) */
    bool bound, connected, disconnected, destroying;
    bool completing;                /* ESTABLISHED is out, CompleteConnect not done (lock, cond) */
    bool own_cqs;                   /* rdma_create_qp made the CQs */
    /* An application-managed QP (rdma_conn_param's qp_num, id.qp NULL), held from
     * rdma_connect or rdma_accept until rdma_destroy_id (ndv_qp_find). */
    struct ibv_qp *ext_qp;
    /* A connection that carries no QP of ours (RoCE: rdma_conn_param's qp_num names a UD
     * QP, as UCX's dummy does): the CM makes its own small RC QP to carry the exchange,
     * destroyed with the id. Nothing is ever posted on it. */
    struct ibv_qp *carrier_qp;
    struct ibv_cq *carrier_cq;
    bool awaiting_establish;        /* CONNECT_RESPONSE is out: rdma_establish completes (lock) */
    int port_hold;                  /* a socket holding the bound port until the core takes it (-1) */
    int ack_timeout;                /* RDMA_OPTION_ID_ACK_TIMEOUT, for the QP (-1: not set) */
    uint32_t ird, ord;
    /* rdma_create_ep of a listener: what rdma_get_request makes each request's QP with. */
    struct ibv_qp_init_attr ep_qp_attr;
    struct ibv_pd *ep_pd;
    bool ep_has_qp;
    /* UD ids (RDMA_PS_UDP, RDMA_PS_IPOIB: cma_ud.c): the UDP socket of the id's port, which
     * carries its SIDR exchange, and that exchange's state. */
    int ud_sock;
    struct cm_ud *ud;
};

static inline bool cm_is_ud(const struct cm_id *id)
{
    return id->id.ps == RDMA_PS_UDP || id->id.ps == RDMA_PS_IPOIB;
}

static inline socklen_t cm_sa_len(const struct sockaddr *sa)
{
    return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

/* The QP the id's connection carries: rdma_create_qp's, or the application's own. */
static inline struct ibv_qp *cm_conn_qp(const struct cm_id *id)
{
    return id->id.qp ? id->id.qp : id->ext_qp ? id->ext_qp : id->carrier_qp;
}

/* An iWARP device (the iwarp personality): the CM connects every QP itself, as iw_cm does. */
static inline bool cm_iwarp(const struct cm_id *id)
{
    return id->id.verbs && id->id.verbs->device->transport_type == IBV_TRANSPORT_IWARP;
}

/* cma.c */
int cm_fail(int err);               /* errno = err; return -1 */
/* The local address a connection or datagram to @dst leaves by (port 0). */
int cm_route_source(const struct sockaddr *dst, struct sockaddr_storage *src);
nd_port *cm_port(void);             /* the CM port; the CM thread is started with it */
struct ibv_context *cm_context(void);   /* the one device's context, opened once */
struct ibv_pd *cm_default_pd(void);
void cm_queue_event(struct cm_id *id, enum rdma_cm_event_type type, int status, const void *pdata, uint32_t len);
void cm_queue_request(struct cm_id *listener, struct cm_id *child, const void *pdata, uint32_t len);
/* An event that carries a UD peer's address handle, QP number and Q_Key (ESTABLISHED). */
void cm_queue_ud_event(struct cm_id *id, enum rdma_cm_event_type type, int status, const void *pdata, uint32_t len,
                       const struct rdma_ud_param *ud);
/* Around each request of an id: begin before the core takes it; taken when it is back
 * (the slot may be reused from then on), done once it was handled. rdma_destroy_id waits
 * until every begun request is done. */
void cm_op_begin(struct cm_id *id, enum cm_op_kind kind);
void cm_op_taken(struct cm_id *id, enum cm_op_kind kind);
void cm_op_done(struct cm_id *id);
/* A synchronous id waits for its next event, which is acknowledged for it: its type (the
 * status in *status), or -1. */
int cm_wait_event(struct cm_id *id, struct rdma_cm_event **ev);
/* A call that queued the id's event: on a synchronous id the event is the answer (0, or -1
 * with errno from its status); on an asynchronous one, 0. */
int cm_sync_status(struct cm_id *id);
struct cm_id *cm_id_new(struct rdma_event_channel *channel, void *context, enum rdma_port_space ps);
/* The id's address resolved to the device (a local address, not the wildcard): the id is on
 * it from now on, with the device's default PD, as rdma-core attaches it. */
void cm_attach_device(struct cm_id *id);


/* cma_ud.c: UD ids, whose "connection" is a SIDR exchange (a request, a reply with the
 * peer's QP number and Q_Key) over the UDP port the id is bound to. */
struct cm_ud;
int cm_ud_bind(struct cm_id *id, const struct sockaddr *addr);
int cm_ud_resolve_addr(struct cm_id *id, const struct sockaddr *dst);
int cm_ud_init_qp(struct ibv_qp *qp);
int cm_ud_connect(struct cm_id *id, const struct rdma_conn_param *p);
int cm_ud_listen(struct cm_id *id);
int cm_ud_accept(struct cm_id *id, const struct rdma_conn_param *p);
int cm_ud_reject(struct cm_id *id, const void *pdata, uint8_t len);
void cm_ud_forget(struct cm_id *id);
int cm_ud_init_qp_attr(struct ibv_qp_attr *attr, int *mask);
/* The address handle of the id's route: the peer's GID from the local one's index. */
void cm_ah_attr(struct cm_id *id, struct ibv_ah_attr *ah);

/* cma_gate.c: a listener's requests wait while an accept of one of them is out. */
struct cm_gate;
struct cm_gate *cm_gate_new(struct cm_id *listener);
void cm_gate_ref(struct cm_gate *g);
void cm_gate_unref(struct cm_gate *g);
void cm_gate_request(struct cm_gate *g, struct cm_id *child, const void *pdata, uint32_t len);
void cm_gate_accept_begin(struct cm_gate *g);
void cm_gate_accept_end(struct cm_gate *g);
/* The listener's id is destroyed: requests still held are refused; its reference goes. */
void cm_gate_close(struct cm_gate *g);

/*
 * What the CM thread (cma.c) calls back: the connection side's (cma_conn.c), which hands it
 * over (cm_engine_set) before its first request to the core, so that the ids, events and
 * the thread below know nothing of connections. handle: a request of @kind came back with
 * @st. idle: after each wake, the deferred work whose time has come (DISCONNECTED events
 * whose wait is over); how long the thread may wait before it looks again, in ms (-1:
 * until woken). forget_gate: rdma_destroy_id of an id that has a gate (a listener, or a
 * request's id), once nothing of it is out with the core.
 */
struct cm_engine {
    void (*handle)(struct cm_id *id, enum cm_op_kind kind, int st);
    int (*idle)(void);
    void (*forget_gate)(struct cm_id *id);
    /* rdma_destroy_id, once nothing of the id is out with the core: release what the
     * connection side made for it. Set before any id has such things (cm_engine_set). */
    void (*forget)(struct cm_id *id);
};
void cm_engine_set(const struct cm_engine *engine);
void cm_accept_over(struct cm_id *id);
/* cma.c: whether this is the CM thread; wake it to run the engine's idle work now. */
bool cm_on_thread(void);
void cm_wake(void);

#endif
