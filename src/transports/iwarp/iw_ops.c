// SPDX-License-Identifier: MIT
/*
 * The iwarp transport's operations: a connection attached to its QP once the MPA exchange
 * (iw_cm.c) is over, posts, progress from polling application threads, the idle hook, and
 * the const tables the core and the engine call through.
 */
#include "iwarp.h"
#include "core/log.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

int iw_attach(struct nd_qp *qp, int *sock, pid_t pid, struct nd_cm_msg *m, uint32_t ird, uint32_t ord,
                    bool active)
{
    struct iw_conn *c = calloc(1, sizeof(*c));
    int st = -ENOMEM;

    if (!c)
        return st;
    nd_lock_acquire(&qp->lock);
    /* Closed meanwhile (nd_qp_close marks it under this lock): its CQs may be freed. From
     * here to the end a close waits for us (attaching). */
    st = nd_qp_valid(qp) ? iw_conn_init(c, qp, &iw_pumps) : -ECANCELED;
    qp->attaching = st == 0;
    nd_lock_release(&qp->lock);
    if (st != 0) {
        free(c);
        return st;
    }
    c->sock = *sock;
    /* The initiator follows the Reply's C bit (checked against our wish when it came);
     * the responder's Reply said CRC when either side asked. */
    c->crc = (m->xport_opts & IW_OPT_CRC) || (!active && iw_want_crc());
    c->ird = ird;
    c->ord = ord;
    c->peer_ird = m->ird;
    c->nd_peer = (m->xport_opts & IW_OPT_ND) != 0;
    /*
     * Towards a peer that is not netdirect nothing goes out until its first FPDU came, or
     * IW_HOLD_FIRST_NS passed (hold_over). siw as initiator fails the connection when bytes
     * sit behind the Reply it reads; siw as responder installs its receive handler only
     * after its Reply is out, and the wake-up of bytes that come in between is lost (they
     * sit unread until more arrive: a ping waits for ever).
     */
    c->hold_first = !c->nd_peer && !(m->xport_opts & IW_OPT_P2P);
    c->hold_until = nd_coarse_ns() + IW_HOLD_FIRST_NS;
    c->timeout_ns = (uint64_t)iw_timeout_ms() * 1000000;
    c->fpdu_cap = iw_fpdu_cap();
    c->fpdu_max = iw_path_fpdu_max(c->sock, c->fpdu_cap);
    c->mss_checked_ns = nd_coarse_ns();
    c->base.ops = &iwarp_transport;
    if (!nd_qp_set_connected(qp, &c->base)) {
        c->sock = -1;           /* still the connector's: it closes it */
        iw_conn_free(c);
        nd_lock_acquire(&qp->lock);
        qp->attaching = false;
        nd_lock_release(&qp->lock);
        return -ECANCELED;
    }
    st = iw_engine_add(qp->adapter, c);
    if (st != 0) {
        nd_lock_acquire(&qp->lock);
        c->sock = -1;           /* still the connector's: it closes it */
        nd_qp_fail_locked(qp, -ECANCELED);
        qp->attaching = false;
        nd_lock_release(&qp->lock);
        return st;     /* the QP owns the connection now; its destroy frees it */
    }
    *sock = -1;                 /* ours now: the peer leaving reaches the connector by nd_qp_peer_left */
    nd_lock_acquire(&qp->lock);
    if (active && (m->xport_opts & (IW_OPT_P2P | IW_OPT_ND)))
        iw_send_rtr(c);
    iw_rx_pump(c);      /* anything that arrived with the Reply or the RTR */
    /* Pollers of the QP's CQs move its bytes themselves (busy-poll) and spare the engine. */
    __atomic_store_n(&qp->has_progress, true, __ATOMIC_RELEASE);
    qp->attaching = false;
    nd_lock_release(&qp->lock);
    nd_log(ND_LOG_DEBUG, ND_SUB_IWARP, "QP %p connected (%s, CRC %s, FPDU %u bytes, IRD %u ORD %u)", (void *)qp,
           active ? "active" : "passive", c->crc ? "on" : "off", c->fpdu_max, ird, ord);
    return 0;
}

/* ---- the transport operations ---- */

void iw_post(struct nd_qp *qp, const struct nd_wr *wr)
{
    struct iw_conn *c = iw_conn_of(qp->conn);
    struct iw_txe *e = txe_at(c, wr->index);

    e->wr = *wr;
    e->framed = e->got = 0;
    e->state = TXE_QUEUED;
    e->status = 0;
    if ((wr->flags & ND_OP_FLAG_INLINE) && wr->type != ND_REQUEST_TYPE_READ) {
        /* The caller may reuse inline buffers as soon as we return. */
        uint8_t *buf = c->inline_buf + (size_t)(wr->index & (qp->iq_entries - 1)) * qp->inline_size;
        uint64_t off = 0;

        for (uint32_t i = 0; i < wr->nsge && off + wr->sge[i].buffer_length <= qp->inline_size; i++) {
            if (wr->sge[i].buffer_length)
                memcpy(buf + off, wr->sge[i].buffer, wr->sge[i].buffer_length);
            off += wr->sge[i].buffer_length;
        }
        e->sge[0] = (nd_sge){ .buffer = buf, .buffer_length = (uint32_t)off };
        e->wr.nsge = 1;
    } else if (wr->nsge) {
        memcpy(e->sge, wr->sge, wr->nsge * sizeof(nd_sge));
    }
    e->wr.sge = e->sge;
    c->posted = wr->index + 1;
    if (c->dead) {
        iw_txe_done(c, e, -ECANCELED);
        iw_complete_in_order(c);
        return;
    }
    iw_tx_pump(c);
    iw_watch_hold(c);
}

void iw_recv_posted(struct nd_qp *qp)
{
    struct iw_conn *c = iw_conn_of(qp->conn);

    if (c->stalled_since)
        iw_rx_pump(c);
}

/* Have fence answers waited IW_FENCE_DEFER_NS of polls for a post to ride on? QP lock held. */
static bool owed_too_long(struct iw_conn *c)
{
    uint64_t now;

    /* The poll that finds them has just received them, and its application is about to
     * post (the answers then ride along): it reads no clock (25 ns here, on the path from
     * a message in to the reply out). The wait is timed from the next poll; 1 marks
     * "seen, not yet timed". */
    if (!c->owed_polled_ns) {
        c->owed_polled_ns = 1;
        return false;
    }
    now = nd_now_ns();
    if (c->owed_polled_ns == 1)
        c->owed_polled_ns = now;
    return now - c->owed_polled_ns >= IW_FENCE_DEFER_NS;
}

/*
 * The socket refused bytes: has it room for a large piece yet? The kernel says so (POLLOUT)
 * once a third of its buffer is free, as it would wake the engine. A poller that retried
 * whenever any room freed would send the stream in small pieces, each a syscall.
 */
static bool send_room(struct iw_conn *c)
{
    struct pollfd p = { .fd = c->sock, .events = POLLOUT };

    return poll(&p, 1, 0) != 0;
}

/* From an application thread polling one of the QP's CQs: move bytes here and now,
 * saving the engine's wake-up. Never waits for the lock. */
bool iw_progress(struct nd_qp *qp)
{
    struct iw_conn *c = iw_conn_of(qp->conn);

    if (!c)
        return false;
    iw_engine_note_poll(c);
    /* Whoever holds the lock (the engine, another poller) may be placing entries now. */
    if (nd_lock_try(&qp->lock))
        return true;
    if (qp->conn == &c->base && !c->dead)
        iw_poll_conn(c);
    nd_lock_release(&qp->lock);
    return true;
}

/* Move @c's bytes as a polling application thread does (QP lock held); returns whether
 * input came. */
bool iw_poll_conn(struct iw_conn *c)
{
    bool got;

    c->app_rx = true;
    got = iw_rx_pump(c);
    c->app_rx = false;
    if (!c->dead && (c->want_out ? send_room(c) : c->txf_count || (c->owed_since && owed_too_long(c))))
        iw_tx_pump(c);
    return got;
}

/* A post found the queue full (QP lock held): what frees it may be waiting in the socket
 * (fence answers, Read Responses) or on our side of it (a fence not yet framed). */
void iw_queue_full(struct nd_qp *qp)
{
    struct iw_conn *c = iw_conn_of(qp->conn);

    if (!c || c->dead)
        return;
    iw_rx_pump(c);
    if (!c->dead)
        iw_tx_pump(c);
}

/* The poller goes to sleep: answer what waited for its next post, and hand the socket
 * back to the engine now rather than after IW_POLL_GONE_NS. */
void iw_idle(struct nd_qp *qp)
{
    struct iw_conn *c = iw_conn_of(qp->conn);

    if (!c)
        return;
    __atomic_store_n(&c->polled_ns, 0, __ATOMIC_RELAXED);
    /* The CQ lock is held: never wait for the QP lock here. Its holder is the engine or
     * another poller; the engine's sweep answers for us then. */
    if (nd_lock_try(&qp->lock) == 0) {
        if (qp->conn == &c->base && !c->dead && c->owed_since)
            iw_tx_pump(c);
        if (qp->conn == &c->base) {
            c->engine_asked = false;    /* the poller no longer watches: the engine does */
            iw_watch_hold(c);
        }
        nd_lock_release(&qp->lock);
    } else {
        iw_engine_kick(c);
    }
    iw_engine_unpark(c);
}

/* Only a netdirect peer knows the opcodes that carry immediate data and atomics; siw
 * answers them with a Terminate. */
static bool iw_carries_imm(struct nd_qp *qp)
{
    struct iw_conn *c = iw_conn_of(qp->conn);

    return c && c->nd_peer;
}

const struct iw_pumps iw_pumps = { .rx = iw_rx_pump, .tx = iw_tx_pump, .poll = iw_poll_conn, .overdue = iw_check_overdue };

const struct nd_transport_ops iwarp_transport = {
    .name = "iwarp",
    .cm_listen = iw_cm_listen,
    .cm_accept = iw_cm_accept,
    .cm_dial = iw_cm_dial,
    .cm_send = iw_cm_send,
    .cm_recv = iw_cm_recv,
    .attach = iw_attach,
    .attach_at_rtu = true,
    .accept_waits_rtu = iw_accept_waits_rtu,
    .dial_holds_port = true,
    .attach_takes_socket = true,
    .post = iw_post,
    .recv_posted = iw_recv_posted,
    .progress = iw_progress,
    .queue_full = iw_queue_full,
    .idle = iw_idle,
    .lend = iw_lend,
    .carries_imm = iw_carries_imm,
    .carries_atomic = iw_carries_imm,
    .shutdown = iw_shutdown,
    .mem_revoked = iw_mem_revoked,
    .destroy = iw_destroy,
    .adapter_close = iw_adapter_close,
};
