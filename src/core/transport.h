/* SPDX-License-Identifier: MIT */
/*
 * The transport boundary. A transport moves bytes between two queue pairs; the core owns
 * objects, queues, tokens, CQ rings and connection state. Each transport is one const
 * table of these operations, filled with designated initialisers and listed in
 * transport.c. Data operations are called with the QP lock held; connection operations
 * with the connector's or listener's lock held.
 */
#ifndef ND_TRANSPORT_H
#define ND_TRANSPORT_H

#include "qp_int.h"
#include "cm_msg.h"

struct nd_transport_ops {
    const char *name;               /* "shm", "iwarp": selection and nd_info */

    /* ---- connection management, driven by cm.c and listener.c ---- */
    /* Start listening on @addr, whose port @port_fd holds; returns a descriptor the
     * listener owns and the port watches, or a negative errno. */
    int (*cm_listen)(const struct sockaddr *addr, int port_fd, int backlog);
    /* Take one waiting connection (non-blocking): its socket, or -1. */
    int (*cm_accept)(int listen_fd, pid_t *pid);
    /* Open a connection to @dest's listener from @local. Returns its socket, or a
     * negative errno: -ENOENT when no listener of this transport answers for @dest (try
     * the next), -EACCES when one answered but this transport cannot serve the pair (try
     * the next; asking again would get the same answer). */
    int (*cm_dial)(const struct sockaddr *dest, const struct sockaddr *local, pid_t *pid);
    /* Send @m; REQ and REP describe @qp where the transport needs it. */
    int (*cm_send)(int sock, struct nd_cm_msg *m, struct nd_qp *qp);
    /* Read the next message: 0, -EINPROGRESS (nothing yet) or -ECONNABORTED.
     * @expect is the type the connector waits for (0 when only the peer leaving is news). */
    int (*cm_recv)(int sock, struct nd_cm_msg *m, uint16_t expect);
    /* Connect @qp to the peer @m describes (its REQ or REP). A transport that declares
     * attach_takes_socket takes *sock (setting it to -1) and reports the peer leaving with
     * nd_qp_peer_left; the others leave it to the connector. */
    int (*attach)(struct nd_qp *qp, int *sock, pid_t pid, struct nd_cm_msg *m, uint32_t ird, uint32_t ord,
                        bool active);
    /* Optional, both or neither: a connection message just went to @qp's peer, ring the
     * peer's doorbell (cm_ring); how often @qp's own has rung (cm_bell), which a connector
     * wait spins on. Connector waits on a transport without them spin on the socket. */
    void (*cm_ring)(struct nd_qp *qp);
    uint32_t (*cm_bell)(struct nd_qp *qp);
    bool attach_at_rtu;             /* the passive side attaches when the RTU arrives, not at Accept */
    /* Does an Accept of @req wait for the initiator's RTU (NULL: always)? When not, the
     * passive side attaches right after its reply is out and the Accept completes then. */
    bool (*accept_waits_rtu)(const struct nd_cm_msg *req);
    /* A dialled socket holds a TCP port of its own: a connector bound to port 0 takes that
     * one rather than reserving another. */
    bool dial_holds_port;
    bool attach_takes_socket;       /* see attach */

    /* ---- data ---- */
    /* Carry out initiator request @wr (recorded in qp->sq); complete it now or later
     * with nd_qp_complete_initiator, in index order. */
    void (*post)(struct nd_qp *qp, const struct nd_wr *wr);
    /* A receive was posted: wake a peer that holds a send for want of one. */
    void (*recv_posted)(struct nd_qp *qp);
    /* Move deferred work (held sends, peer liveness). Called when the QP's CQs are polled.
     * Returns whether it may have completed something (the CQ looks at its rings again). */
    bool (*progress)(struct nd_qp *qp);
    /* Optional: a post found the initiator queue full (QP lock held). Move what waits
     * (held sends, answers owed) now: an application that only posts until there is room
     * must not depend on polling for work that frees slots without a result. */
    void (*queue_full)(struct nd_qp *qp);
    /* Optional: the thread that polled the QP's CQ is about to sleep (it armed the CQ or
     * waits on it): work left for the next poll must move without one. */
    void (*idle)(struct nd_qp *qp);
    /* Optional: can this connection carry immediate data (ND_WR_IMM)? Absent: no. */
    bool (*carries_imm)(struct nd_qp *qp);
    /* Optional: can it carry remote atomics (nd_type_is_atomic)? Absent: no. */
    bool (*carries_atomic)(struct nd_qp *qp);
    /* The QP enters the error state or closes: cancel held requests (in order), tell the
     * peer, and stop moving bytes. */
    void (*shutdown)(struct nd_qp *qp, int why);
    /* Optional: the registration of [addr, addr+len) was revoked (QP lock held). Nothing
     * the transport queued may read or write the range once this returns: bytes framed
     * for the socket are copied out; what is still to be framed or placed checks the
     * token table again when it is. */
    void (*mem_revoked)(struct nd_qp *qp, uint64_t addr, uint64_t len);
    /* Optional: wait until a same-host peer is outside any transfer into or out of our
     * memory that it began before now (no lock held; bounded by the peer's life). */
    void (*peer_quiesce)(struct nd_qp *qp);
    /* Release the connection's resources (the QP is being destroyed). */
    void (*destroy)(struct nd_qp *qp);
    /* The adapter goes away: stop anything the transport runs for it. */
    void (*adapter_close)(struct nd_adapter *a);
    /* Optional: a thread polled a CQ and found it empty (no lock held). It lends its time:
     * move work the transport's own threads would do for any connection of the process.
     * Called only while the transport has asked for it (nd_lend_want). */
    void (*lend)(void);
};

/* The registered transports, in selection order; NULL-terminated. */
extern const struct nd_transport_ops *const nd_transports[];

/*
 * How many transport objects ask empty polls for their thread's time (nd_lend_want). A
 * program may spin on a CQ none of whose queue pairs has traffic (perftest's server, on
 * its handshake QP) while an engine thread moves another QP's bytes: on a small host that
 * spinner takes a CPU the engine needs.
 */
extern uint32_t nd_lend_wanted;

static inline void nd_lend_want(bool on)
{
    if (on)
        __atomic_add_fetch(&nd_lend_wanted, 1, __ATOMIC_RELAXED);
    else
        __atomic_sub_fetch(&nd_lend_wanted, 1, __ATOMIC_RELAXED);
}

/* An empty poll's time, to every transport that asked for it. */
void nd_transports_lend(void);

/* Is @t allowed by ND_TRANSPORT (auto, shm or iwarp)? */
bool nd_transport_enabled(const struct nd_transport_ops *t);
/* Said once per transport and process (ND_LOG=cm:info): which transport connections take,
 * so that a same-host connection that went over iwarp is one look at the log. */
void nd_transport_note_path(const struct nd_transport_ops *wire, pid_t peer);

#endif
