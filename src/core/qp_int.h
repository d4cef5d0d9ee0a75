/* SPDX-License-Identifier: MIT */
/*
 * Queue pairs as the core keeps them. Each QP owns an inbound region (a memfd) that its
 * peer maps read-write: the ring where the peer writes our receive completions, the
 * receive descriptors we post (the peer reads them to place data), and message slots
 * (small sends are copied there and placed by us when the completion is reaped).
 * Everything else of the QP is private. See docs/design-shm.md.
 */
#ifndef ND_QP_INT_H
#define ND_QP_INT_H

#include "cq_int.h"
#include "mem_int.h"

#define ND_QP_REGION_MAGIC 0x4e445152u
#define ND_QP_REGION_VERSION 4u
/*
 * Message slots, one per inbound ring position: Sends up to the slot size are copied in by
 * the peer and out by us (two memcpy beat a cross-memory call up to 64 KiB here: the call
 * costs ~2 us whatever its size). A QP's slots stay within ND_SLOT_BUDGET: deep receive
 * queues get smaller slots (docs/design-shm.md).
 */
#define ND_SLOT_MIN 256u
#define ND_SLOT_MAX 65536u
#define ND_SLOT_BUDGET (2u << 20)
uint32_t nd_qp_slot_size(uint32_t rq_entries);

/* A QP control block's state word (nd_qp_ctl.state). TERMINATED: either side ended the
 * connection. CHECK_RECV, a flag the owner ORs in: it holds posted receives that may fail
 * their check (posted with a bad key by a front end that checks at use, or in memory
 * deregistered or re-registered since), so a same-host sender checks each receive against
 * the owner's token table before it places a Send, and fails that Send as an RNIC's
 * requester fails one its responder refused. Both sides read the word on every post. */
enum nd_wire_state { ND_WIRE_ACTIVE = 0, ND_WIRE_TERMINATED = 1, ND_WIRE_CHECK_RECV = 2 };

struct nd_rwqe_sge {
    uint64_t addr;
    uint32_t length;
    uint32_t token;
};

/* A posted receive as the peer sees it. */
struct nd_rwqe {
    uint32_t nsge;
    uint32_t total;
    struct nd_rwqe_sge sge[];       /* max_sge of them */
};

struct nd_qp_ctl {
    uint32_t magic, version;
    uint32_t rq_entries;            /* power of two */
    uint32_t max_sge;
    uint32_t slot_size;
    _Atomic uint32_t released;      /* written by the peer: its last store in this region */
    /* Bumped by the peer after each connection message it sends us (REP, RTU, DISC): a
     * connector wait spins on it before it sleeps in poll, saving a wake-up per step. */
    _Atomic uint32_t cm_bell;
    /* Nonzero: the owner's QP refuses remote atomics (verbs' QP access flags without
     * IBV_ACCESS_REMOTE_ATOMIC); a same-host initiator reads it before it runs one. */
    _Atomic uint32_t no_remote_atomic;
    _Atomic uint32_t state;         /* enum nd_wire_state; either side may terminate */
    _Atomic int32_t term_status;    /* why, from the terminating side's point of view */
    _Atomic uint32_t peer_waiting;  /* the peer holds a send until a receive is posted */
    uint8_t pad0[64 - 44];
    /*
     * Its own line: the owner bumps it on every receive it posts, while both sides read
     * state on every post and poll. Sharing a line would move it between CPUs each round
     * trip (a miss for every poller); the peer reads rq_prod only when credits run out.
     */
    _Atomic uint32_t rq_prod;       /* receives posted; written by the owner */
    /* Odd while the owner is inside a transfer into or out of its peer's registered
     * memory (written by the owner, read by the peer's Deregister: shm_data.c). In this
     * line, which the peer reads only when credits run out, not in the first. */
    _Atomic uint32_t touching_peer;
    /* A peer that may not reach the owner's memory (no cross-memory attach) has the owner
     * copy for it, through a channel the owner makes at attach (shm_bounce.c): the
     * channel's memfd and the owner's agent's eventfd as the peer fetches them, valid
     * once bounce_ready is set (release), which the owner stores after filling them. */
    _Atomic uint32_t bounce_ready;
    int32_t bounce_bell;
    struct nd_fd_ref bounce_chan;
    uint8_t pad1[64 - 16 - sizeof(struct nd_fd_ref)];
};

_Static_assert(sizeof(struct nd_qp_ctl) == 128, "the control block is two cache lines");

/* Offsets of the region's parts, computed the same way on both sides. */
struct nd_qp_layout {
    size_t ring, ents, rwqe, rwqe_stride, slots, size;
};

void nd_qp_layout(uint32_t rq_entries, uint32_t max_sge, uint32_t slot_size, struct nd_qp_layout *l);
/* A deep queue's region (@map, laid out as @l), resident from the start in this process's
 * page tables, as an RNIC's pinned queues are: its slots are packed under a page each, so
 * one lap of small messages touches every page, and a first touch here costs a page fault
 * (tens of us in a virtual machine) on the data path. Shallow queues stay lazy: their
 * slots start a page or more apart, and a slot a QP never fills is never committed. */
void nd_qp_region_populate(uint8_t *map, const struct nd_qp_layout *l, uint32_t slot_size);

/*
 * A queue pair's state, as verbs names them (IB 10.3.1; SQD and SQE are never entered:
 * connected RC needs neither). ND's QP is created in INIT and moves to RTS when its
 * connection is made; a verbs QP starts in RESET and moves as modify says. Bytes move only
 * for a QP in RTS with a connection: a verbs QP may be in RTS before its connection is up
 * (address vectors, av.c), and may reach RTR with one up.
 */
enum nd_qp_state { ND_QPS_RESET, ND_QPS_INIT, ND_QPS_RTR, ND_QPS_RTS, ND_QPS_SQD, ND_QPS_SQE, ND_QPS_ERR };

/* An initiator request, checked by the core, handed to the transport. */
struct nd_wr {
    uint32_t index;                 /* free-running initiator index */
    uint8_t type;                   /* nd_request_type */
    uint32_t flags;
    const nd_sge *sge;
    uint32_t nsge;
    uint64_t total;
    uint64_t remote_addr;
    uint32_t remote_token;
    nd_mr *mr;                      /* Bind */
    nd_mw *mw;                      /* Bind, Invalidate */
    const void *bind_buf;
    size_t bind_len;
    uint32_t access;
    uint16_t bind_key;              /* ND_KEY_NEXT or ND_KEY_GIVEN | key */
    bool bind_replace;
    uint32_t imm;                   /* with ND_WR_IMM: immediate data, as the caller gave it */
    /* A remote atomic travels as a Read of 8 bytes (ORD, response, completion bytes) with
     * this its kind: ND_REQUEST_TYPE_FETCH_ADD or _CMP_SWAP (0: a plain Read), and these its
     * operands. Its completion reports that kind. */
    uint8_t atomic;
    uint64_t add_or_cmp, swap;
    const struct nd_dgram_dest *dgram;  /* a datagram QP's Send: where it goes (the post's own) */
};

/* Beyond ND_OP_FLAG_*, never accepted from the ND API: a Send or Write with immediate
 * data (@imm), which the peer's next receive reports. */
#define ND_WR_IMM 0x80000000u
/* A Send with Invalidate (verbs): @imm is the STag the receiver invalidates. */
#define ND_WR_INV 0x40000000u

struct nd_sq_slot {
    void *ctx;
    uint8_t type;
    bool silent;
    bool done;                      /* completed without an entry (silent success) */
};

struct nd_rq_slot {
    void *ctx;
    uint32_t nsge;
    uint32_t total;
    nd_sge *sge;                    /* rq_sge entries, private copy */
};

struct nd_transport_ops;

/* What every transport's connection begins with (its own struct embeds it first): the
 * transport it belongs to and its queue pair. */
struct nd_conn {
    const struct nd_transport_ops *ops;
    struct nd_qp *qp;
};

struct nd_qp {
    uint32_t magic;
    struct nd_adapter *adapter;
    void *context;
    struct nd_cq *rcq, *icq;
    nd_srq *srq;                    /* receives come from here, when set */
    /* What a receive post gets now, 0 if it may post (atomic: set under the lock, read
     * before it): -EBADRQC, its receives are the SRQ's; -EINVAL, a datagram QP in RESET. */
    int recv_refused;
    uint32_t rq_depth, iq_depth, rq_sge, iq_sge, inline_size;
    uint32_t rq_entries, iq_entries;
    struct nd_lock lock;            /* posting, state, transport connection */
    struct nd_mtab_memo reg_memo;   /* under lock: the registration its posts used last */
    struct nd_mtab_memo scatter_memo;   /* under the receive CQ's lock: the same for scatters */
    uint16_t pd;                    /* protection domain (verbs; 0 for ND): set before connecting */
    enum nd_qp_state state;         /* under lock */
    /* Sticky once the QP entered ERR, through a later RESET: its connection and queues are
     * spent; it flushes what is posted and never connects again. Under lock. */
    bool failed;
    int error;
    /* initiator queue */
    struct nd_sq_slot *sq;
    uint32_t sq_posted;             /* under lock */
    _Atomic uint32_t sq_reaped;     /* advanced by the CQ as results are returned */
    void *iring_mem;
    struct nd_ring_producer iprod;  /* local: our own initiator completions */
    struct nd_cq_src *isrc;
    /* receive queue */
    struct nd_rq_slot *rq;
    nd_sge *rq_sges;
    uint32_t rq_posted;             /* under lock */
    _Atomic uint32_t rq_expected;   /* next receive to complete (results returned so far) */
    uint32_t rq_flushed;            /* receives below this have a flush entry */
    /* The initiator ring's producer index when the QP failed: on a shared CQ, receive
     * flushes wait until the completions before it are out (a CQ gives results in the
     * order they happened, whichever ring it looks at first). */
    uint32_t fail_iq_mark;
    _Atomic bool initiator_detached;    /* that ring is gone: nothing to wait for */
    uint8_t *region;
    struct nd_area area;            /* where the region lives in the adapter's arena (its chunk's fd: not ours) */
    bool region_shared;             /* its descriptor went to a peer: reuse waits for the peer */
    pid_t region_peer;              /* that peer's process, when on this host (0: unknown) */
    struct nd_qp_layout layout;
    uint32_t slot_size;             /* bytes of each message slot (nd_qp_slot_size) */
    struct nd_qp_ctl *ctl;
    struct nd_ring_hdr *inbound_hdr;
    struct nd_cq_src *rsrc;         /* the inbound ring, written by the peer */
    bool inbound_dead;              /* that ring broke: flush what it still owed */
    _Atomic uint32_t peer_posted;   /* credits the peer piggybacked: receives it has posted */
    _Atomic uint32_t peer_consumed; /* and entries of our outbound ring it has consumed */
    void *lring_mem;
    struct nd_ring_producer lprod;  /* local: receive flushes */
    struct nd_cq_src *lsrc;
    /* transport */
    const struct nd_transport_ops *tops;
    struct nd_conn *conn;           /* the transport's connection, which begins with this base */
    bool has_progress;              /* the transport has deferred work to move */
    atomic_uint refs;               /* the handle, plus a connector using it */
    /* The connector's side of the link, under lock; it unlinks before its socket, source
     * or port go. A transport that took the connection's socket says "the peer left" by
     * setting peer_left and kicking the connector's port source (cm_kick). One that left
     * the socket with the connector may look through cm_sock for the peer's liveness. */
    _Atomic bool peer_left;
    struct nd_port_kick cm_kick;    /* port NULL: nobody to tell */
    int cm_sock;                    /* -1: none lent */
    struct nd_mem_user mem_user;    /* on the adapter's list while it may touch memory */
    /* A failure leaves the receives posted until a request of ours fails, or Flush or
     * Release (verbs QPs connected by address vector: an RC QP whose peer is gone keeps
     * its receives until a send of its own fails or the application moves it to ERR).
     * Under lock. */
    bool keep_receives;
    /* Receives are posted whatever their keys, and checked when a message comes (verbs, as
     * an RNIC does: the receive then fails with a local protection error); ND refuses a
     * bad one at the post. Set before the first post. */
    bool recv_check_late;
    /* A transport is connecting it on a library thread (between its attach's first and last
     * locked steps): nd_qp_close waits for that to end before it destroys the connection.
     * Under lock. */
    bool attaching;
    /* How long a Send of ours (shm) or the peer's (iwarp, where the receiver stalls) waits
     * for a receive before it fails -ETIMEDOUT; UINT64_MAX: for ever (verbs' rnr_retry 7).
     * Atomic. */
    uint64_t rnr_wait_ns;
    /* A datagram QP (UD): its transport is attached from creation to destruction, and
     * every Send names its destination (nd_wr.dgram). */
    bool datagram;
    uint32_t dgram_max;             /* the longest payload a Send may carry */
    _Atomic uint32_t qkey;          /* what a datagram must carry to be received */
};

bool nd_qp_valid(const struct nd_qp *qp);
/* Complete initiator request @index (QP lock held). A failure breaks the connection.
 * ND_LOCAL_PROTECTION (a transport's word only, never a result's): the request's own
 * memory failed its check; it completes -EFAULT, marked local. */
#define ND_LOCAL_PROTECTION ((int)0xE00D0001u)
void nd_qp_complete_initiator(struct nd_qp *qp, uint32_t index, int status, uint32_t bytes);
/* Enter the error state: flush everything outstanding (QP lock held). */
void nd_qp_fail_locked(struct nd_qp *qp, int status);
void nd_qp_fail(struct nd_qp *qp, int status);
/* From now on a failure of @qp leaves its receives posted (keep_receives). */
void nd_qp_keep_receives(struct nd_qp *qp);
/* From now on @qp's receives are checked when used, not when posted (recv_check_late). */
void nd_qp_check_receives_late(struct nd_qp *qp);
/* The connection ended and @qp keeps its receives: as an RC QP whose peer went, it is still
 * in the state the application last gave it. */
bool nd_qp_peer_left_quietly(struct nd_qp *qp);
/* A request the front end accepted but the connection, once up, refuses (@why): the QP
 * fails with @why (what was posted before is flushed), and the request takes its place in
 * the send queue and completes with @why, so that nothing posted is ever lost (verbs' held
 * sends, av.c). */
int nd_qp_post_refused(nd_qp *qp, void *ctx, nd_request_type type, uint32_t flags, int why);
/* Carry out a Bind or Invalidate now, in its turn (QP lock held). */
int nd_qp_local_op(struct nd_qp *qp, const struct nd_wr *wr);
/* Are the local SGEs of @wr registered with the rights it needs (INLINE needs none)? QP lock held. */
bool nd_qp_local_sges_ok(struct nd_qp *qp, const struct nd_wr *wr);
/* A QP's queue sizes as a front end asks for them (with an SRQ the receive ones are the
 * SRQ's, and not asked). */
struct nd_qp_sizes {
    uint32_t rq_depth, iq_depth, rq_sge, iq_sge, inline_size;
};

/* The first size of @s past the device's limits (nd_caps), or ND_QPL_OK: the one place
 * they are checked. The order is the ND API's argument order of its checks. */
enum nd_qp_limit { ND_QPL_OK, ND_QPL_RQ_DEPTH, ND_QPL_IQ_DEPTH, ND_QPL_IQ_SGE, ND_QPL_INLINE, ND_QPL_RQ_SGE };
enum nd_qp_limit nd_qp_limit_exceeded(const struct nd_qp_sizes *s, bool srq);

/* A QP in state @initial (ND's start in INIT, verbs' in RESET), sizes checked already
 * (nd_qp_limit_exceeded); with @srq its receives are the SRQ's. */
int nd_qp_create(struct nd_adapter *a, struct nd_cq *rcq, struct nd_cq *icq, nd_srq *srq, void *context,
                       const struct nd_qp_sizes *sizes, enum nd_qp_state initial, struct nd_qp **out);
/* A datagram QP (UD) in RESET, on a UDP port of its own: *qpn is its number (ND_DGRAM_QPN).
 * Its Sends carry at most @max_msg bytes. No SRQ. */
int nd_qp_create_datagram(struct nd_adapter *a, struct nd_cq *rcq, struct nd_cq *icq, void *context,
                          const struct nd_qp_sizes *sizes, uint32_t max_msg, struct nd_qp **out, uint32_t *qpn);
/* nd_qp_create's work, for either kind. */
int nd_qp_create_kind(struct nd_adapter *a, struct nd_cq *rcq, struct nd_cq *icq, nd_srq *srq, void *context,
                      const struct nd_qp_sizes *sizes, enum nd_qp_state initial, bool datagram, struct nd_qp **out);
/* A datagram's Send (@kind: 0 or ND_WR_IMM with @imm) to @dest. -EMSGSIZE: longer than the
 * QP's dgram_max; -EINVAL: not a datagram QP. */
int nd_qp_send_datagram(nd_qp *qp, void *ctx, const nd_sge *sge, uint32_t nsge, uint32_t flags, uint32_t kind,
                        uint32_t imm, const struct nd_dgram_dest *dest);
void nd_qp_set_qkey(nd_qp *qp, uint32_t qkey);
/* May a datagram be received now (RTR or RTS, not failed)? QP lock held. */
static inline bool nd_qp_dgram_receiving(const struct nd_qp *qp)
{
    return (qp->state == ND_QPS_RTR || qp->state == ND_QPS_RTS) && !qp->failed;
}
void nd_qp_ref(struct nd_qp *qp);
void nd_qp_unref(struct nd_qp *qp);
/* The peer of a connected QP has gone (QP lock held): tell the connector, once. */
void nd_qp_peer_left(struct nd_qp *qp);
/* nd_qp_bind for verbs: @key is ND_KEY_NEXT or ND_KEY_GIVEN | the rkey's key byte, and
 * @replace rebinds a bound window (type 1) where ND refuses. */
int nd_qp_bind_keyed(nd_qp *qp, void *ctx, nd_mr *mr, nd_mw *mw, const void *buf, size_t len,
                           uint32_t flags, uint16_t key, bool replace);
/* Send and RDMA Write with immediate data (verbs). -EOPNOTSUPP when the connection
 * cannot carry it (iwarp towards a peer other than netdirect). */
int nd_qp_send_imm(nd_qp *qp, void *ctx, const nd_sge *sge, uint32_t nsge, uint32_t flags, uint32_t imm);
int nd_qp_write_imm(nd_qp *qp, void *ctx, const nd_sge *sge, uint32_t nsge, uint64_t raddr,
                          uint32_t rtoken, uint32_t flags, uint32_t imm);
/* A remote atomic (verbs) of @type (ND_REQUEST_TYPE_FETCH_ADD: adds @add_or_cmp;
 * ND_REQUEST_TYPE_CMP_SWAP: @swap where @add_or_cmp was) on the 8 bytes at @raddr, which
 * must be aligned; the old value goes to @sge (one buffer of 8 bytes, local write).
 * -EOPNOTSUPP when the connection cannot carry atomics (iwarp towards siw). */
int nd_qp_atomic(nd_qp *qp, void *ctx, const nd_sge *sge, uint32_t nsge, uint64_t raddr, uint32_t rtoken,
                 uint32_t flags, uint8_t type, uint64_t add_or_cmp, uint64_t swap);
/* May peers run atomics on memory through this QP (verbs' IBV_ACCESS_REMOTE_ATOMIC of its
 * QP access flags)? Yes until said otherwise, as ND has no such flag. */
void nd_qp_set_remote_atomic(nd_qp *qp, bool on);
static inline bool nd_qp_remote_atomic(const struct nd_qp *qp)
{
    return !atomic_load_explicit(&qp->ctl->no_remote_atomic, memory_order_relaxed);
}
/* Send with Invalidate (verbs): the peer invalidates its window @stag as the message arrives. */
int nd_qp_send_inv(nd_qp *qp, void *ctx, const nd_sge *sge, uint32_t nsge, uint32_t flags, uint32_t stag);
#define ND_RNR_WAIT_NS (1000ull * 1000000)     /* the default: a second */
void nd_qp_set_rnr_wait(nd_qp *qp, uint64_t ns);
/* The protection domain of the memory the QP may use (verbs), before it connects. */
void nd_qp_set_pd(nd_qp *qp, uint16_t pd);
/* The domain of the receives' memory: the SRQ's for a QP on one, else the QP's. */
uint16_t nd_qp_recv_pd(const struct nd_qp *qp);
/* Does the inbound ring hold completions no poll has taken yet? (the QP stays open) */
bool nd_qp_inbound_pending(struct nd_qp *qp);
/* Link the QP to its connector's socket (@sock) or port source (@k), or unlink it (-1, NULL). */
void nd_qp_link_cm(struct nd_qp *qp, int sock, const struct nd_port_kick *k);
/* The transport connected (or disconnected) this QP. */
/* The transport connected this QP: false, and nothing changed, if the application closed
 * it meanwhile (the connection's set-up runs on a library thread, and the QP's CQs may be
 * gone): the transport then frees what it made. */
bool nd_qp_set_connected(struct nd_qp *qp, struct nd_conn *conn);
/*
 * Move @qp to @to along the edges verbs' modify allows (any state to RESET or ERR; RESET to
 * INIT; INIT to RTR; RTR or RTS to RTS): 0, or -EINVAL without an edge, or for INIT on a QP
 * whose connection is spent. ERR flushes every outstanding request, as ndc_qp_flush; RESET
 * of a QP with a connection ends it the same way first.
 */
int nd_qp_modify_state(nd_qp *qp, enum nd_qp_state to);
enum nd_qp_state nd_qp_get_state(nd_qp *qp);
/* May a connection be made for @qp now? */
bool nd_qp_connectable(struct nd_qp *qp);
/* Connected and not failed: its transport moves bytes for it (QP lock held). */
static inline bool nd_qp_live(const struct nd_qp *qp)
{
    return qp->tops && !qp->failed;
}
/* The application stops polling this QP's CQs for a while (it sleeps on something else). */
void nd_qp_idle(struct nd_qp *qp);

#endif
