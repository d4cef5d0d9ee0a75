/* SPDX-License-Identifier: MIT */
/*
 * The transport boundary. A transport moves bytes between two queue pairs; the core owns
 * objects, queues, tokens, CQ rings and connection state. Each transport is one const
 * table of these operations, filled with designated initialisers and listed in
 * transport.c. Every operation is called with the QP lock held.
 */
#ifndef ND_TRANSPORT_H
#define ND_TRANSPORT_H

#include "qp_int.h"

struct nd_transport_ops {
    const char *name;               /* "shm", "iwarp": selection and nd_info */
    /* Carry out initiator request @wr (recorded in qp->sq); complete it now or later
     * with nd_qp_complete_initiator, in index order. */
    void (*post)(struct nd_qp *qp, const struct nd_wr *wr);
    /* A receive was posted: wake a peer that holds a send for want of one. */
    void (*recv_posted)(struct nd_qp *qp);
    /* Move deferred work (held sends, peer liveness). Called when the QP's CQs are polled. */
    void (*progress)(struct nd_qp *qp);
    /* The QP enters the error state or closes: cancel held requests (in order), tell the
     * peer, and stop moving bytes. */
    void (*shutdown)(struct nd_qp *qp, nd_status why);
    /* Release the connection's resources (the QP is being destroyed). */
    void (*destroy)(struct nd_qp *qp);
};

/* The registered transports, in selection order; NULL-terminated. */
extern const struct nd_transport_ops *const nd_transports[];

#endif
