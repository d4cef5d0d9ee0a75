/* SPDX-License-Identifier: MIT */
/*
 * The iwarp transport: RDMAP/DDP/MPA over TCP (RFC 5040, 5041, 5044), so that a netdirect
 * process and Linux siw are peers. Connection set-up is MPA request/reply on the TCP
 * connection (iw_cm.c); the connection's state and end (iw_conn.c); sending frames
 * initiator requests into FPDUs (iw_tx.c); receiving places inbound FPDUs into registered
 * memory (iw_rx.c); the transport's operations and tables (iw_ops.c); one progress thread
 * per adapter (iw_engine.c) moves bytes when no application thread is polling. Files point
 * down that list's reverse: ops over cm, rx over tx over conn, all over the engine; the
 * connection's end and a failed send reach the pumps through c->pumps.
 */
#ifndef ND_IWARP_H
#define ND_IWARP_H

#include "core/transport.h"
#include "wire.h"

#include <sys/uio.h>

#define IW_TXF_MAX 32               /* FPDUs framed ahead of the socket */
#define IW_TXF_IOV 36               /* iovecs of one FPDU: header, payload pieces, trailer */
#define IW_RXBUF 65536u
#define IW_ENGINE_RX_BUDGET 17u      /* the engine reads 16 times, then looks for a poller */
#define IW_TXLIN 2048u              /* a batch this small is copied into one buffer: one iovec */
#define IW_IRQ_CAP 136u             /* inbound Reads in flight: any IRD we negotiate (128) + fences */
#define IW_MSS_RECHECK_NS (10ull * 1000000)     /* how often FPDU sizing asks TCP's MSS again */
/* ND_IWARP_TIMEOUT_MS: how long a peer may leave our bytes unacknowledged (TCP), our
 * Reads and fences unanswered, or an FPDU half sent before the connection ends with
 * -ETIMEDOUT. */
uint32_t iw_timeout_ms(void);
/* A fence's answer found by a polling application waits this long for the application's
 * own next message to ride on (a ping-pong answers at once: one sendmsg, not two). */
#define IW_FENCE_DEFER_NS (20ull * 1000)
/* The engine leaves a connection to the application while it polled within this long... */
#define IW_POLL_RECENT_NS (100ull * 1000)
/* ...and takes it back when the polls stop for this long (or the poller goes to sleep). */
#define IW_POLL_GONE_NS (4000ull * 1000)
#define IW_RESCUE_NS (200ull * 1000)        /* parked input no poll took: the engine serves it */
#define IW_NO_PARK_MIN_NS (20ull * 1000000) /* first span of not parking after a rescue */
#define IW_NO_PARK_MAX_NS (5000ull * 1000000)

/* transport options carried in nd_cm_msg.xport_opts */
#define IW_OPT_CRC 0x1u             /* the peer asked for CRC */
#define IW_OPT_P2P 0x2u             /* peer-to-peer: the initiator sends an RTR frame */
#define IW_OPT_RTR_WRITE 0x4u
#define IW_OPT_RTR_READ 0x8u
#define IW_OPT_ENHANCED 0x10u       /* the request carried the RFC 6581 block */
#define IW_OPT_REV1 0x20u           /* the request was MPA revision 1 */
#define IW_OPT_ND 0x40u             /* both sides are netdirect: its extensions are in use */

/* Towards a peer that is not netdirect, the first FPDU waits this long at most for the
 * peer's first one (see iw_attach). */
#define IW_HOLD_FIRST_NS (50ull * 1000000)

struct iw_engine;

/* An initiator request on its way, kept at its queue index. */
struct iw_txe {
    struct nd_wr wr;
    nd_sge *sge;                    /* private copy (iq_sge entries reserved per slot) */
    uint64_t framed;                /* payload bytes framed so far */
    uint64_t got;                   /* Read: response bytes placed */
    uint64_t sink_to;               /* Read: where the response starts (the first buffer) */
    uint32_t msn;
    uint32_t checked_gen;           /* the token table's generation its buffers were checked at */
    uint8_t state;                  /* enum iw_txe_state */
    bool notice_due;                /* a Write with immediate: its bytes are framed, its notice not */
    int status;
};

/*
 * A Read Request on the wire, in the order responses will come back. A fence is a
 * zero-length Read we add ourselves: its response proves that the peer has placed every
 * Send and Write before it, which is when ND lets those complete (a remote access error
 * or a missing receive must still reach the request that caused it).
 */
struct iw_rd {
    uint32_t upto;                  /* requests before this queue index are confirmed */
    int32_t txe;                    /* the application's Read (queue index), or -1: a fence */
    uint64_t sent_ns;               /* nd_coarse_ns */
};
#define IW_RDQ_CAP 256u             /* > any ORD we negotiate (128) plus the fences' slack */

/* An inbound Read Request waiting for its response to be sent; or an atomic's, run when
 * its response is framed (atomic: its request type, 0 for a Read). */
struct iw_rresp {
    uint32_t sink_stag, src_stag, size, sent;
    uint64_t sink_to, src_to;
    uint8_t atomic;
    uint64_t add_or_cmp, swap;
};

/* One FPDU ready (or partly written) for the socket. What every FPDU touches comes first:
 * a small one needs the first two cache lines only. */
struct iw_txf {
    uint32_t niov, total, done;
    int32_t ends_txe;               /* the last FPDU of initiator request (index), or -1 */
    bool ends_rresp;
    uint8_t *bounce;                /* its payload, copied out of a region deregistered under it */
    uint8_t trailer[8];             /* pad and CRC */
    uint64_t old_value;             /* an atomic's response: the target's 8 bytes as they were */
    uint8_t hdr[IW_MAX_HDR];
    struct iovec iov[IW_TXF_IOV];
};

enum iw_rx_state { RX_HDR, RX_PAYLOAD, RX_TRAILER };

struct iw_conn;

/* What the progress engine (iw_engine.c) calls to move a connection's bytes, the data
 * path's (iw_tx.c, iw_rx.c), set with the connection (iw_conn_init): the
 * engine knows connections only as sockets to serve. Each runs with the QP lock held. */
struct iw_pumps {
    bool (*rx)(struct iw_conn *c);          /* iw_rx_pump */
    void (*tx)(struct iw_conn *c);          /* iw_tx_pump */
    bool (*poll)(struct iw_conn *c);        /* iw_poll_conn: a lent poll's work */
    void (*overdue)(struct iw_conn *c);     /* iw_check_overdue */
};
extern const struct iw_pumps iw_pumps;

struct iw_conn {
    struct nd_conn base;            /* first: the core's view (ops, qp) */
    struct iw_engine *eng;
    const struct iw_pumps *pumps;   /* the pumps, for the engine and the end (iw_conn_init) */
    uint32_t slot;                  /* in the engine's table */
    int sock;
    bool crc, dead, completing;
    /*
     * A send failed (EPIPE, ECONNRESET): the peer may have sent a Terminate and closed, and
     * that Terminate is still in our receive queue. The failure waits until the receive side
     * has read what is there, so the request the Terminate names gets its reason.
     */
    int tx_errno;
    bool in_rx;                     /* iw_rx_pump is running (it may call iw_tx_pump) */
    /*
     * Towards a netdirect peer (nd_peer) a Send or Write completes when a later Read
     * Response proves it placed (a zero-length Read, a fence, follows the last of a batch).
     * Towards any other peer no fence is sent: it completes once the socket has taken its
     * last byte, as siw's do (docs/design-iwarp.md, "Completion of Sends and Writes").
     */
    bool nd_peer;
    bool engine_asked;              /* the engine was kicked to watch hold_first */
    bool hold_first;                /* nothing goes out yet (iw_attach) */
    uint64_t hold_until;            /* coarse clock */
    bool want_out;                  /* the socket refused bytes we have framed (atomic) */
    bool out_watch;                 /* we asked the engine to watch for send room */
    bool app_rx;                    /* an application thread is pumping (iw_progress) */
    uint32_t rx_budget;             /* receive calls left to the engine's serve, plus one (0: no limit) */
    /*
     * Fence answers held for the application's next post: since when (nd_coarse_ns, the
     * engine's clock), and since the first poll that found them (nd_now_ns, the poller's
     * 20 us clock, read there rather than on the receive path). owed_since is atomic (the
     * engine reads it); owed_polled_ns is the QP lock's.
     */
    uint64_t owed_since;
    uint64_t owed_polled_ns;
    uint64_t polled_ns;             /* last poll by an application thread (atomic) */
    bool parked;                    /* the engine does not watch the socket (engine lock) */
    /*
     * Input the engine left to a poller when it parked the socket (nd_now_ns; 0: none). A
     * poller that does not come (one spinning on memory for a peer's Write, polling its CQ
     * only after) leaves it unread: the engine serves it after IW_RESCUE_NS, and parks no
     * more until no_park_until, a span that doubles each time it had to (engine lock).
     */
    uint64_t parked_input_ns;
    uint64_t no_park_until;
    uint64_t no_park_span;
    bool out_armed;                 /* the engine watches for send room (engine lock) */
    bool got_term;                  /* the peer sent a Terminate: */
    int term_status;          /* what it means for the request it names */
    bool term_named;                /* it named one of our requests (the attached header) */
    uint32_t term_index;            /* that request's queue index */
    uint32_t ird, ord;
    uint32_t peer_ird;              /* the IRD the peer advertised: bounds Reads and fences */
    uint32_t fpdu_max;              /* FPDU bytes: TCP's current MSS or fpdu_cap, rounded down to 8 */
    uint32_t fpdu_cap;              /* ND_IWARP_FPDU_MAX, read at attach */
    uint64_t mss_checked_ns;        /* when it was last asked (coarse clock) */
    /* initiator side */
    struct iw_txe *txq;             /* iq_entries, at index & mask */
    nd_sge *txq_sges;
    uint8_t *inline_buf;            /* inline data copied at post time, inline_size per slot */
    uint8_t txlin[IW_TXLIN];        /* small batches, gathered for one contiguous send */
    uint32_t tx_next;               /* next request to frame */
    uint32_t comp_next;             /* next request to complete */
    uint32_t posted;                /* requests handed to us */
    uint32_t reads_out;             /* Read Requests (fences included) sent, not yet answered */
    uint32_t ack_next;              /* the oldest request whose placement is not yet confirmed */
    bool unfenced;                  /* a Send or Write was framed after the last Read or fence */
    struct iw_rd *rdq;              /* Read Requests in flight, oldest at rdq_head */
    uint32_t rdq_head, rdq_count;
    uint64_t oldest_read_ns;        /* when the oldest went out (nd_coarse_ns), 0 if none (atomic) */
    uint64_t timeout_ns;            /* ND_IWARP_TIMEOUT_MS, read once at attach */
    uint32_t msn_send, msn_read;    /* last MSN used per queue */
    int32_t cur_txe;                /* request being framed, or -1 */
    bool cur_rresp;                 /* a Read Response is being framed */
    struct iw_txf txf[IW_TXF_MAX];
    uint32_t txf_head, txf_count;
    /* responder side */
    struct iw_rresp *irq;
    uint32_t irq_cap, irq_head, irq_count;
    uint32_t irq_fences;            /* zero-length entries among them (not counted against IRD) */
    /* receive side */
    uint8_t *rxbuf;
    uint32_t rx_lo, rx_hi;
    enum iw_rx_state rx_state;
    struct iw_hdr rh;               /* the FPDU being received */
    uint32_t rx_left;               /* payload bytes of it still to come */
    uint32_t rx_seg_off;            /* payload bytes of it placed so far */
    uint32_t rx_crc;
    uint32_t rx_gen;                /* token table generation the segment's target was checked at */
    uint32_t msg_gen;               /* the same for the receive of the open Send message */
    uint32_t expect_msn_send, expect_msn_read;
    uint32_t next_recv;             /* the QP's next posted receive to fill */
    bool msg_open;                  /* an untagged Send message is in progress */
    uint32_t msg_recv;              /* its receive (queue index, or SRQ slot) */
    uint32_t msg_bytes, msg_cap;
    bool msg_overrun, msg_solicited, msg_bad;
    bool msg_imm;                   /* the open message carries immediate data (msg_imm_data) */
    bool msg_inv;                   /* it invalidated STag msg_imm_data (Send with Invalidate) */
    bool msg_rdma_imm;              /* it is a Write's notice: msg_bytes went to the Write's target */
    uint32_t msg_imm_data;
    nd_sge *msg_sge;                /* the receive's buffers */
    uint32_t msg_nsge;
    uint64_t stalled_since;         /* a Send waits for a receive (0: not stalled) */
    uint64_t rx_partial_since;      /* an FPDU is half in: when bytes last came (coarse; atomic) */
    struct nd_ring_producer rprod;  /* into our own inbound ring: receive completions */
};

/* iw_cm.c */
int iw_cm_listen(const struct sockaddr *addr, int port_fd, int backlog);
int iw_cm_accept(int listen_fd, pid_t *pid);
int iw_cm_dial(const struct sockaddr *dest, const struct sockaddr *local, pid_t *pid);
int iw_cm_send(int sock, struct nd_cm_msg *m, struct nd_qp *qp);
int iw_cm_recv(int sock, struct nd_cm_msg *m, uint16_t expect);
bool iw_accept_waits_rtu(const struct nd_cm_msg *req);
/* ND_IWARP_CRC: ask for MPA CRCs. */
bool iw_want_crc(void);
uint32_t iw_fpdu_cap(void);

/* iw_ops.c */
int iw_attach(struct nd_qp *qp, int *sock, pid_t pid, struct nd_cm_msg *m, uint32_t ird, uint32_t ord,
                    bool active);

enum iw_txe_state { TXE_FREE, TXE_QUEUED, TXE_WAIT_ACK, TXE_WAIT_READ, TXE_DONE };
enum hdr_verdict { HDR_OK, HDR_STALL, HDR_FAIL };

static inline struct iw_txe *txe_at(struct iw_conn *c, uint32_t index)
{
    return &c->txq[index & (c->base.qp->iq_entries - 1)];
}

/* The iwarp connection a queue pair's base belongs to (NULL: none). */
static inline struct iw_conn *iw_conn_of(struct nd_conn *base)
{
    return (struct iw_conn *)base;  /* the base is its first member */
}

/* iw_conn.c: the connection; QP lock held */
/* @pumps: what the connection's end and a failed send call to move bytes (iw_pumps). */
int iw_conn_init(struct iw_conn *c, struct nd_qp *qp, const struct iw_pumps *pumps);
void iw_conn_free(struct iw_conn *c);
void iw_complete_in_order(struct iw_conn *c);
void iw_txe_done(struct iw_conn *c, struct iw_txe *e, int st);
void iw_confirm(struct iw_conn *c, uint32_t upto);
void iw_send_terminate(struct iw_conn *c, uint8_t layer, uint8_t etype, uint8_t ecode, const struct iw_hdr *about);
void iw_conn_fail(struct iw_conn *c, int why);
void iw_sock_failed(struct iw_conn *c, int err);
enum hdr_verdict iw_terminate(struct iw_conn *c, uint8_t layer, uint8_t etype, uint8_t ecode, int local);
void iw_shutdown(struct nd_qp *qp, int why);
/* From the engine: fail @c with -ETIMEDOUT if its oldest Read is overdue (QP lock held). */
void iw_check_overdue(struct iw_conn *c);
void iw_destroy(struct nd_qp *qp);
void iw_mem_revoked(struct nd_qp *qp, uint64_t addr, uint64_t len);
/* Request @e cannot go on: its buffers were deregistered under it. It fails as a local
 * protection error, the peer hears a Terminate, the rest is flushed. */
void iw_local_protection(struct iw_conn *c, struct iw_txe *e);

/* iw_tx.c: sending; QP lock held */
uint32_t iw_path_fpdu_max(int sock, uint32_t cap);
void iw_tx_pump(struct iw_conn *c);
/* Queue a zero-length RDMA Write to STag 1: the RTR frame of peer-to-peer start-up. */
void iw_send_rtr(struct iw_conn *c);
/* A hold of the first FPDU (hold_first) ends only with time: have the engine watch it. */
void iw_watch_hold(struct iw_conn *c);

/* iw_rx.c: receiving; QP lock held. Returns whether the socket gave bytes. */
bool iw_rx_pump(struct iw_conn *c);

/* iw_ops.c: the transport's operations */
void iw_post(struct nd_qp *qp, const struct nd_wr *wr);
void iw_recv_posted(struct nd_qp *qp);
bool iw_progress(struct nd_qp *qp);
bool iw_poll_conn(struct iw_conn *c);
void iw_queue_full(struct nd_qp *qp);
void iw_idle(struct nd_qp *qp);
static inline uint32_t iw_mtab_gen(const struct iw_conn *c)
{
    return atomic_load_explicit(&c->base.qp->adapter->mtab_gen, memory_order_acquire);
}

/* iw_linger.c: closes a connection's socket; one whose bytes the peer stopped taking is
 * reset after ND_RNR_WAIT_NS. */
void iw_close_socket(int sock);

/* iw_engine.c */
int iw_engine_add(struct nd_adapter *a, struct iw_conn *c);
void iw_engine_remove(struct iw_conn *c);
void iw_engine_want_out(struct iw_conn *c, bool on);
void iw_engine_kick(struct iw_conn *c);
void iw_engine_unpark(struct iw_conn *c);
/* An application thread polls @c: it moves the bytes itself; keep the engine ticking. */
void iw_engine_note_poll(struct iw_conn *c);
/* Did an application thread poll @c of late (it will move @c's bytes itself)? */
bool iw_engine_app_polls(struct iw_conn *c);
void iw_adapter_close(struct nd_adapter *a);
/* The transport's lend op: a poll that found nothing serves the engine's last connection. */
void iw_lend(void);

extern const struct nd_transport_ops iwarp_transport;

#endif
