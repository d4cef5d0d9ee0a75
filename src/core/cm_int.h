/* SPDX-License-Identifier: MIT */
/* Connectors and listeners (reference §8): one state machine for every transport. */
#ifndef ND_CM_INT_H
#define ND_CM_INT_H

#include "qp_int.h"
#include "transports/shm/shm.h"

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
    struct sockaddr_storage local, peer;
    int sock;                       /* the connection's rendezvous socket, or -1 */
    bool registered;
    uint32_t port_source;
    pid_t pid;
    struct nd_qp *qp;
    struct shm_msg msg;             /* the peer's REQ, REP or REJ */
    bool have_msg, aborted;
    uint32_t ird, ord;              /* negotiated, our point of view */
};

struct nd_listener;

#endif
