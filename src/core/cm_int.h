/* SPDX-License-Identifier: MIT */
/* Connectors and listeners (ND2's IND2Connector and IND2Listener): one state machine for every transport. */
#ifndef ND_CM_INT_H
#define ND_CM_INT_H

#include "qp_int.h"
#include "transport.h"

enum nd_conn_state {
    ND_CS_IDLE, ND_CS_BOUND, ND_CS_CONNECTING, ND_CS_REP_RECEIVED, ND_CS_QUEUED,
    ND_CS_REQ_RECEIVED, ND_CS_ACCEPTING, ND_CS_CONNECTED, ND_CS_PASSIVE_DISC, ND_CS_DISCONNECTED,
};

/* Kinds of pending requests, kept in the request's internal_reserved while it pends. */
enum nd_conn_req { ND_CR_CONNECT = 1, ND_CR_ACCEPT, ND_CR_NOTIFY_DISC, ND_CR_GET_REQUEST };

struct nd_connector {
    uint32_t magic;
    struct nd_adapter *adapter;
    struct nd_ovobj ov;
    pthread_mutex_t lock;
    enum nd_conn_state state;
    int port_fd;                    /* TCP socket bound to reserve our port */
    bool port_spare;                /* reserved for port 0: goes back to the adapter's spares */
    struct sockaddr_storage local, peer;
    int sock;                       /* the connection's CM socket, or -1 */
    const struct nd_transport_ops *wire;    /* the transport carrying this connection */
    /* The transport took the socket (iwarp): our port source has no descriptor, and the QP
     * kicks it when the peer leaves (qp->peer_left). */
    bool wire_owned;
    bool registered;
    uint32_t port_source;
    _Atomic uint32_t inflight;      /* port calls of our sources running or waiting for the lock */
    pid_t pid;
    struct nd_qp *qp;
    struct nd_cm_msg msg;             /* the peer's REQ, REP or REJ */
    struct nd_cm_msg req;             /* our REQ, kept while connecting (sent again if redirected) */
    bool have_msg, aborted;
    bool timed;                     /* counted in the port's timed sources: the deadline runs */
    bool port_from_dial;            /* local's port is the connection socket's (Bind said 0) */
    uint64_t deadline_ns;           /* CONNECTING, ACCEPTING: the peer must answer by then */
    uint32_t ird, ord;              /* negotiated, our point of view */
};

struct nd_listener;

/* Shared by connectors (cm.c) and listeners (listener.c); cm_addr.c. */
uint32_t nd_sockaddr_len(const struct sockaddr *sa);
/* An IPv4 or IPv6 address of at least its length. */
bool nd_sockaddr_ok(const struct sockaddr *sa, uint32_t len);
bool nd_sockaddr_is_wildcard(const struct sockaddr *sa);
/* The port in network order, as the sockaddr holds it. */
uint16_t nd_sockaddr_port(const struct sockaddr *sa);
void nd_sockaddr_set_port(struct sockaddr_storage *ss, uint16_t port_be);
/* Copy @ss out to the caller's buffer, ND style: -EOVERFLOW with the size needed. */
int nd_sockaddr_copy_out(const struct sockaddr_storage *ss, struct sockaddr *out, uint32_t *len);
/* Is @sa an address of @a (or the wildcard, when allowed)? */
int nd_cm_check_local(struct nd_adapter *a, const struct sockaddr *sa, bool wildcard_ok);
/* Reserve @sa's port in the TCP port space (port 0: the kernel picks); fills the port in. */
/* Bind a TCP socket to @sa (port 0: any). A listener's socket allows address reuse, as
 * servers' do: the TIME_WAIT left by its accepted connections must not keep it from
 * binding again (Linux requires the reuse flag on the listener those came from). */
int nd_cm_reserve_port(const struct sockaddr *sa, struct sockaddr_storage *bound, int *fd_out, bool listener);
/* A port reserved on @want's address (its port 0): a spare one if the adapter keeps one,
 * else a new reservation. */
int nd_adapter_reserve_port(struct nd_adapter *a, const struct sockaddr *want, struct sockaddr_storage *bound,
                                  int *fd);
/* A connector is done with the port it reserved that way: keep it for the next, or close it. */
void nd_adapter_release_port(struct nd_adapter *a, int fd, const struct sockaddr_storage *bound);
bool nd_connector_valid(const struct nd_connector *c);
/* A connector bound to port 0 gets its reservation now (connector lock held). */
int nd_connector_reserve_if_unset(struct nd_connector *c);

static inline uint32_t nd_clamp_u32(uint32_t v, uint32_t max)
{
    return v < max ? v : max;
}
/* A fresh connector becomes the target of a GetConnectionRequest, or is released from it. */
bool nd_connector_queue(struct nd_connector *c, struct nd_adapter *a);
void nd_connector_unqueue(struct nd_connector *c);
/* A listener hands over a request (its socket and REQ) to a queued connector. */
void nd_connector_take_request(struct nd_connector *c, const struct nd_transport_ops *wire, int sock, pid_t pid,
                               struct nd_cm_msg *req, const struct sockaddr_storage *local);

#endif
