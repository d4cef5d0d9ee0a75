// SPDX-License-Identifier: MIT
/*
 * iwarp connection lifecycle: its state made and freed, initiator requests completed in
 * posting order (a Read when its response has been placed; a Send or Write, towards a
 * netdirect peer, when a later Read Response proves the peer placed it; towards any other
 * peer when the socket has taken its last byte, as siw does; or with the error of a
 * Terminate that names it), Terminates sent, and the connection's end. Every function here
 * runs with the QP lock held. Framing and sending are iw_tx.c, receiving iw_rx.c; the
 * transport's operations iw_ops.c. This file calls neither pump but through c->pumps.
 */
#include "iwarp.h"
#include "core/log.h"
#include "core/srq_int.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int iw_conn_init(struct iw_conn *c, struct nd_qp *qp, const struct iw_pumps *pumps)
{
    uint32_t sges = qp->iq_sge ? qp->iq_sge : 1, rsge = qp->rq_sge ? qp->rq_sge : 1;

    if (qp->srq && nd_srq_max_sge(qp->srq) > rsge)
        rsge = nd_srq_max_sge(qp->srq);
    c->base.qp = qp;
    c->pumps = pumps;
    c->sock = -1;
    c->cur_txe = -1;
    c->expect_msn_send = c->expect_msn_read = 1;
    c->txq = calloc(qp->iq_entries, sizeof(*c->txq));
    c->txq_sges = calloc((size_t)qp->iq_entries * sges, sizeof(nd_sge));
    c->inline_buf = qp->inline_size ? malloc((size_t)qp->iq_entries * qp->inline_size) : NULL;
    c->rxbuf = malloc(IW_RXBUF);
    c->irq = calloc(IW_IRQ_CAP, sizeof(*c->irq));
    c->rdq = calloc(IW_RDQ_CAP, sizeof(*c->rdq));
    c->msg_sge = calloc(rsge, sizeof(*c->msg_sge));
    if (!c->txq || !c->txq_sges || !c->rxbuf || !c->irq || !c->rdq || !c->msg_sge || (qp->inline_size && !c->inline_buf)) {
        iw_conn_free(c);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < qp->iq_entries; i++)
        c->txq[i].sge = c->txq_sges + (size_t)i * sges;
    c->irq_cap = IW_IRQ_CAP;
    nd_cq_local_producer(qp->rcq, qp->inbound_hdr, (struct nd_cqe *)(qp->region + qp->layout.ents), qp->rq_entries,
                         &c->rprod);
    return 0;
}

void iw_conn_free(struct iw_conn *c)
{
    if (c->sock >= 0)
        iw_close_socket(c->sock);
    for (uint32_t i = 0; i < IW_TXF_MAX; i++)
        free(c->txf[i].bounce);
    free(c->txq);
    free(c->txq_sges);
    free(c->inline_buf);
    free(c->rxbuf);
    free(c->irq);
    free(c->rdq);
    free(c->msg_sge);
    free(c);
}

/* ---- completion of initiator requests, in posting order ---- */

void iw_complete_in_order(struct iw_conn *c)
{
    if (c->completing)
        return;                     /* a failure below re-entered us: the outer loop goes on */
    c->completing = true;
    while (c->comp_next != c->posted) {
        struct iw_txe *e = txe_at(c, c->comp_next);

        if (e->state != TXE_DONE)
            break;
        e->state = TXE_FREE;
        c->comp_next++;
        nd_qp_complete_initiator(c->base.qp, e->wr.index, e->status,
                                 e->wr.type == ND_REQUEST_TYPE_READ && e->status == 0 ? (uint32_t)e->got : 0);
    }
    c->completing = false;
}

void iw_txe_done(struct iw_conn *c, struct iw_txe *e, int st)
{
    (void)c;
    e->state = TXE_DONE;
    e->status = st;
}

/* A Read Response proved that the peer placed everything before queue index @upto. */
void iw_confirm(struct iw_conn *c, uint32_t upto)
{
    if ((int32_t)(c->comp_next - c->ack_next) > 0)
        c->ack_next = c->comp_next;
    for (; (int32_t)(upto - c->ack_next) > 0; c->ack_next++) {
        struct iw_txe *e = txe_at(c, c->ack_next);

        if (e->state == TXE_WAIT_ACK && e->wr.index == c->ack_next)
            iw_txe_done(c, e, 0);
    }
}

/* ---- failure ---- */

/* Best effort: a Terminate goes out only between FPDUs, never inside a half-written one.
 * @about is the header of the segment at fault (attached so the peer can tell which of
 * its requests failed), or NULL. */
/* The unsent rest of the FPDU at the head of the ring (a Terminate may not cut one in
 * two), as iovecs into @iov; their count. */
static int unsent_rest(const struct iw_conn *c, struct iovec *iov)
{
    const struct iw_txf *f = &c->txf[c->txf_head];
    uint32_t skip = f->done;
    int k = 0;

    if (!c->txf_count || !f->done)
        return 0;
    for (uint32_t i = 0; i < f->niov; i++) {
        if (skip >= f->iov[i].iov_len) {
            skip -= (uint32_t)f->iov[i].iov_len;
            continue;
        }
        iov[k++] = (struct iovec){ (uint8_t *)f->iov[i].iov_base + skip, f->iov[i].iov_len - skip };
        skip = 0;
    }
    return k;
}

/* connect(AF_UNSPEC) disconnects a TCP socket at once, with a reset: the peer cannot take
 * the end for an orderly close. */
static void reset_connection(struct iw_conn *c)
{
    connect(c->sock, &(struct sockaddr){ .sa_family = AF_UNSPEC }, sizeof(struct sockaddr));
}

/* Write all of @iov, waiting for room at most TERM_SEND_MS in all. */
#define TERM_SEND_MS 100
static bool send_all_bounded(int sock, struct iovec *iov, int n)
{
    uint64_t end = nd_coarse_ns() + TERM_SEND_MS * 1000000ull;

    while (n) {
        struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t)n };
        ssize_t w = sendmsg(sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);

        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            return false;
        for (; w > 0 && n; ) {
            if ((size_t)w >= iov->iov_len) {
                w -= (ssize_t)iov->iov_len;
                iov++, n--;
            } else {
                iov->iov_base = (uint8_t *)iov->iov_base + w;
                iov->iov_len -= (size_t)w;
                w = 0;
            }
        }
        if (!n)
            return true;
        int left = (int)(((int64_t)(end - nd_coarse_ns())) / 1000000);
        if (left <= 0 || poll(&(struct pollfd){ .fd = sock, .events = POLLOUT }, 1, left) <= 0)
            return false;
    }
    return true;
}

/*
 * A Terminate goes out behind the FPDU under way (its rest first), or, when the socket has
 * no room for it within TERM_SEND_MS, the connection is reset: the peer must not take the
 * end for an orderly close. The log says which.
 */
void iw_send_terminate(struct iw_conn *c, uint8_t layer, uint8_t etype, uint8_t ecode, const struct iw_hdr *about)
{
    struct iw_term t = { .layer = layer, .etype = etype, .ecode = ecode };
    struct iovec iov[IW_TXF_IOV + 1];
    uint8_t buf[IW_MAX_HDR + 8];
    size_t n;
    int k;

    if (c->dead || c->sock < 0)
        return;
    if (about)
        iw_term_attach(&t, about, about->ulpdu_len - about->hdr_len);
    n = iw_term_encode(buf, &t);
    if (c->crc)
        iw_put_le32(buf + n - 4, iw_crc32c(buf, n - 4));
    k = unsent_rest(c, iov);
    iov[k++] = (struct iovec){ buf, n };
    if (send_all_bounded(c->sock, iov, k)) {
        nd_log(ND_LOG_INFO, ND_SUB_IWARP, "sent Terminate layer %u type %u code 0x%02x", layer, etype, ecode);
        return;
    }
    reset_connection(c);
    nd_log(ND_LOG_INFO, ND_SUB_IWARP, "reset the connection: no room for Terminate layer %u type %u code 0x%02x (%m)",
           layer, etype, ecode);
}

/* The connection is over: the QP enters the error state (which calls iw_shutdown). */
void iw_conn_fail(struct iw_conn *c, int why)
{
    c->dead = true;                 /* nothing more goes out, not even answers we owe */
    nd_qp_fail_locked(c->base.qp, why);
}

/* The socket failed: a peer that stopped acknowledging is a timeout for the oldest request. */
void iw_sock_failed(struct iw_conn *c, int err)
{
    nd_log(ND_LOG_INFO, ND_SUB_IWARP, "connection failed: %s", strerror(err));
    if (err == ETIMEDOUT && !c->got_term) {
        c->got_term = true;         /* a reason is known, though no Terminate brought it */
        c->term_status = -ETIMEDOUT;
        c->term_named = false;
    }
    iw_conn_fail(c, err == ETIMEDOUT ? -ETIMEDOUT : err == EFAULT ? -EFAULT : -ECANCELED);
}

enum hdr_verdict iw_terminate(struct iw_conn *c, uint8_t layer, uint8_t etype, uint8_t ecode, int local)
{
    nd_log(ND_LOG_DEBUG, ND_SUB_IWARP, "protocol error on opcode %u (tagged %d qn %u msn %u mo %u; expected msn %u/%u)",
           c->rh.opcode, c->rh.tagged, c->rh.qn, c->rh.msn, c->rh.mo, c->expect_msn_send, c->expect_msn_read);
    iw_send_terminate(c, layer, etype, ecode, layer == IW_LAYER_LLP ? NULL : &c->rh);
    iw_conn_fail(c, local);
    return HDR_FAIL;
}

void iw_local_protection(struct iw_conn *c, struct iw_txe *e)
{
    nd_log(ND_LOG_INFO, ND_SUB_IWARP, "request %u: its memory was deregistered while it ran", e->wr.index);
    iw_txe_done(c, e, ND_LOCAL_PROTECTION);
    iw_send_terminate(c, IW_LAYER_RDMAP, IW_RDMAP_ET_CATASTROPHIC, 0x00, NULL);
    iw_conn_fail(c, -EFAULT);
}

/*
 * A registration was revoked: FPDUs framed but not yet (wholly) written may point into
 * its memory. Their payload is copied out now, bytes as the FPDU was framed with (its CRC
 * holds); what is not framed yet checks the table again when it is (frame_request,
 * frame_read_response).
 */
void iw_mem_revoked(struct nd_qp *qp, uint64_t addr, uint64_t len)
{
    struct iw_conn *c = iw_conn_of(qp->conn);

    for (uint32_t i = 0; c && !c->dead && i < c->txf_count; i++) {
        struct iw_txf *f = &c->txf[(c->txf_head + i) % IW_TXF_MAX];
        uint32_t plen = 0;
        bool inside = false;

        for (uint32_t k = 1; k + 1 < f->niov; k++) {
            uintptr_t b = (uintptr_t)f->iov[k].iov_base;

            plen += (uint32_t)f->iov[k].iov_len;
            inside |= b < addr + len && addr < b + f->iov[k].iov_len;
        }
        if (!inside)
            continue;
        uint8_t *copy = malloc(plen), *at = copy;

        if (!copy) {
            /* Neither sent nor kept: the peer must not take a cut FPDU for data. */
            reset_connection(c);
            iw_conn_fail(c, -ENOMEM);
            return;
        }
        for (uint32_t k = 1; k + 1 < f->niov; k++) {
            memcpy(at, f->iov[k].iov_base, f->iov[k].iov_len);
            at += f->iov[k].iov_len;
        }
        f->iov[1] = (struct iovec){ copy, plen };
        f->iov[2] = f->iov[f->niov - 1];
        f->niov = 3;
        free(f->bounce);
        f->bounce = copy;
    }
}

/* What an unfinished request @i completes with when the connection ends. A Terminate that
 * names a request fails that one: the peer handled everything before it in order, so the
 * Sends and Writes before it were placed. Without a name, the oldest unfinished request
 * carries the Terminate's reason. Everything else is flushed. */
static int final_status(struct iw_conn *c, uint32_t i, const struct iw_txe *e, bool *first)
{
    bool was_first = *first;

    *first = false;
    if (!c->got_term)
        return -ECANCELED;
    if (!c->term_named)
        return was_first ? c->term_status : -ECANCELED;
    if (i == c->term_index)
        return c->term_status;
    if ((int32_t)(c->term_index - i) > 0 && e->state == TXE_WAIT_ACK)
        return 0;
    return -ECANCELED;
}

/* A peer that sent part of an FPDU and then nothing for ND_IWARP_TIMEOUT_MS (a Send that
 * waits for a receive is the application's wait, not the peer's). */
static bool partial_overdue(struct iw_conn *c)
{
    uint64_t t = __atomic_load_n(&c->rx_partial_since, __ATOMIC_RELAXED);

    return t && !c->stalled_since && (int64_t)(nd_coarse_ns() - t) >= (int64_t)c->timeout_ns;
}

void iw_check_overdue(struct iw_conn *c)
{
    if (!c->dead && partial_overdue(c)) {
        nd_log(ND_LOG_INFO, ND_SUB_IWARP, "half an FPDU and then nothing for %llu ms: the peer stopped",
               (unsigned long long)(c->timeout_ns / 1000000));
        iw_conn_fail(c, -ETIMEDOUT);
        return;
    }
    /* Read the clock under the lock: a Read sent after the caller's look is younger. */
    if (c->dead || !c->rdq_count ||
        (int64_t)(nd_coarse_ns() - c->rdq[c->rdq_head].sent_ns) < (int64_t)c->timeout_ns)
        return;
    nd_log(ND_LOG_INFO, ND_SUB_IWARP, "no answer to a Read for %llu ms: the peer stopped",
           (unsigned long long)(c->timeout_ns / 1000000));
    if (!c->got_term) {
        c->got_term = true;
        c->term_status = -ETIMEDOUT;
        c->term_named = false;
    }
    iw_conn_fail(c, -ETIMEDOUT);
}

void iw_shutdown(struct nd_qp *qp, int why)
{
    struct iw_conn *c = iw_conn_of(qp->conn);
    bool first = true;

    (void)why;
    /* A local disconnect: what the peer sent before it is read first, and the fence
     * answers owed (held for a next post, or found just now) go out, or the peer's last
     * Sends would flush instead of completing: an application closes as soon as it has
     * received everything, the fence behind the last Send may still sit in the socket. */
    if (!c->dead)
        c->pumps->rx(c);
    if (!c->dead && c->owed_since)
        c->pumps->tx(c);
    c->dead = true;
    if (c->sock >= 0)
        shutdown(c->sock, SHUT_RDWR);
    for (uint32_t i = c->comp_next; i != c->posted; i++) {
        struct iw_txe *e = txe_at(c, i);

        if (e->state != TXE_DONE)
            iw_txe_done(c, e, final_status(c, i, e, &first));
    }
    for (; c->txf_count; c->txf_count--, c->txf_head = (c->txf_head + 1) % IW_TXF_MAX) {
        free(c->txf[c->txf_head].bounce);
        c->txf[c->txf_head].bounce = NULL;
    }
    c->irq_count = c->irq_fences = 0;
    iw_complete_in_order(c);
    nd_qp_peer_left(c->base.qp);
}

void iw_destroy(struct nd_qp *qp)
{
    struct iw_conn *c = iw_conn_of(qp->conn);

    if (!c)
        return;
    iw_engine_remove(c);
    qp->conn = NULL;
    iw_conn_free(c);
}
