/* SPDX-License-Identifier: MIT */
/*
 * The transport boundary. A transport moves bytes between two queue pairs; the core owns
 * objects, queues, tokens, CQ rings and the connection state machine. Each transport is
 * one const table of these operations, filled with designated initialisers and listed in
 * transport.c; an operation a transport lacks is NULL and the core answers
 * ND_NOT_SUPPORTED for it. None is registered yet (shm and iwarp are the next issues).
 */
#ifndef ND_TRANSPORT_H
#define ND_TRANSPORT_H

#include "core.h"

struct nd_qp_core;      /* the core's queue pair: queues, request tables, CQ rings */
struct nd_wr;           /* one validated initiator request (send, read, write, bind, invalidate) */

struct nd_transport_ops {
    const char *name;               /* "shm", "iwarp": selection and nd_info */
    /* Could this transport reach @dest from @adapter? (shm: same host, netns and uid) */
    bool (*reaches)(struct nd_adapter *adapter, const struct sockaddr *dest, uint32_t dest_len);
    /* Start moving an initiator request; completion is reported through the QP's rings. */
    nd_status (*post)(struct nd_qp_core *qp, const struct nd_wr *wr);
    /* Stop the connection: no more bytes move; the core flushes what is outstanding. */
    void (*shutdown)(struct nd_qp_core *qp);
};

/* The registered transports, in selection order; NULL-terminated. */
extern const struct nd_transport_ops *const nd_transports[];

#endif
