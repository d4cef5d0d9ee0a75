// SPDX-License-Identifier: MIT
/*
 * iwarp data path (RFC 5040, 5041, 5044). Initiator requests are framed into FPDUs
 * no larger than the path MSS and written with one sendmsg per batch; requests complete
 * in posting order: a Read when its response has been placed; a Send or Write, towards a
 * netdirect peer, when a later Read Response proves the peer placed it (we add a
 * zero-length Read, a "fence", behind the last Send or Write of a batch), towards any
 * other peer when the socket has taken its last byte (as siw does); or with the error of
 * a Terminate that names it. Inbound FPDUs are parsed as a stream and placed straight
 * into registered memory after the token, range and rights checks; receive completions
 * go into the QP's own inbound ring, exactly where a same-host peer would write them.
 * Every function here runs with the QP lock held. The receive side is iw_rx.c.
 */
#include "iwarp.h"
#include "core/log.h"
#include "core/srq_int.h"

#include <errno.h>
#include <poll.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>


#define IRQ_CAP 136u                /* inbound Reads in flight: any IRD we negotiate (128) + fences */
#define FENCE_STAG 1u               /* the source STag of a fence, as siw's Read RTR uses */

nd_status iw_conn_init(struct iw_conn *c, struct nd_qp *qp)
{
    uint32_t sges = qp->iq_sge ? qp->iq_sge : 1, rsge = qp->rq_sge ? qp->rq_sge : 1;

    if (qp->srq && nd_srq_max_sge(qp->srq) > rsge)
        rsge = nd_srq_max_sge(qp->srq);
    c->qp = qp;
    c->sock = -1;
    c->cur_txe = -1;
    c->expect_msn_send = c->expect_msn_read = 1;
    c->txq = calloc(qp->iq_entries, sizeof(*c->txq));
    c->txq_sges = calloc((size_t)qp->iq_entries * sges, sizeof(nd_sge));
    c->inline_buf = qp->inline_size ? malloc((size_t)qp->iq_entries * qp->inline_size) : NULL;
    c->rxbuf = malloc(IW_RXBUF);
    c->irq = calloc(IRQ_CAP, sizeof(*c->irq));
    c->rdq = calloc(IW_RDQ_CAP, sizeof(*c->rdq));
    c->msg_sge = calloc(rsge, sizeof(*c->msg_sge));
    if (!c->txq || !c->txq_sges || !c->rxbuf || !c->irq || !c->rdq || !c->msg_sge || (qp->inline_size && !c->inline_buf)) {
        iw_conn_free(c);
        return ND_NO_MEMORY;
    }
    for (uint32_t i = 0; i < qp->iq_entries; i++)
        c->txq[i].sge = c->txq_sges + (size_t)i * sges;
    c->irq_cap = IRQ_CAP;
    nd_cq_local_producer(qp->rcq, qp->inbound_hdr, (struct nd_cqe *)(qp->region + qp->layout.ents), qp->rq_entries,
                         &c->rprod);
    return ND_SUCCESS;
}

void iw_conn_free(struct iw_conn *c)
{
    if (c->sock >= 0)
        close(c->sock);
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
        nd_qp_complete_initiator(c->qp, e->wr.index, e->status,
                                 e->wr.type == ND_REQUEST_TYPE_READ && e->status == ND_SUCCESS ? (uint32_t)e->got : 0);
    }
    c->completing = false;
}

void iw_txe_done(struct iw_conn *c, struct iw_txe *e, nd_status st)
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
            iw_txe_done(c, e, ND_SUCCESS);
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
void iw_conn_fail(struct iw_conn *c, nd_status why)
{
    c->dead = true;                 /* nothing more goes out, not even answers we owe */
    nd_qp_fail_locked(c->qp, why);
}

/* The socket failed: a peer that stopped acknowledging is a timeout for the oldest request. */
void iw_sock_failed(struct iw_conn *c, int err)
{
    nd_log(ND_LOG_INFO, ND_SUB_IWARP, "connection failed: %s", strerror(err));
    if (err == ETIMEDOUT && !c->got_term) {
        c->got_term = true;         /* a reason is known, though no Terminate brought it */
        c->term_status = ND_IO_TIMEOUT;
        c->term_named = false;
    }
    iw_conn_fail(c, err == ETIMEDOUT ? ND_IO_TIMEOUT : err == EFAULT ? ND_ACCESS_VIOLATION : ND_CANCELED);
}

enum hdr_verdict iw_terminate(struct iw_conn *c, uint8_t layer, uint8_t etype, uint8_t ecode, nd_status local)
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
    iw_conn_fail(c, ND_ACCESS_VIOLATION);
}

/*
 * A registration was revoked: FPDUs framed but not yet (wholly) written may point into
 * its memory. Their payload is copied out now, bytes as the FPDU was framed with (its CRC
 * holds); what is not framed yet checks the table again when it is (frame_request,
 * frame_read_response).
 */
void iw_mem_revoked(struct nd_qp *qp, uint64_t addr, uint64_t len)
{
    struct iw_conn *c = qp->conn;

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
            iw_conn_fail(c, ND_NO_MEMORY);
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

/* ---- framing ---- */

/* Payload iovecs for [off, off+len) of the request's buffers; returns bytes covered. */
static uint32_t payload_iov(const nd_sge *sge, uint32_t nsge, uint64_t off, uint32_t len, struct iovec *iov,
                            uint32_t *niov, uint32_t max_iov)
{
    uint32_t got = 0;

    for (uint32_t i = 0; i < nsge && got < len && *niov < max_iov; i++) {
        uint64_t l = sge[i].buffer_length;

        if (off >= l) {
            off -= l;
            continue;
        }
        uint32_t n = (uint32_t)(l - off < len - got ? l - off : len - got);
        if (n) {
            iov[(*niov)++] = (struct iovec){ (uint8_t *)sge[i].buffer + off, n };
            got += n;
        }
        off = 0;
    }
    return got;
}

/* Pad and CRC around an FPDU whose header (@hl bytes, length field included) is in f->hdr
 * and whose @plen payload bytes are in f->iov[1..]. */
static void seal(struct iw_conn *c, struct iw_txf *f, uint32_t hl, uint32_t plen)
{
    uint32_t pad = iw_pad(hl - 2 + plen);

    f->iov[0] = (struct iovec){ f->hdr, hl };
    memset(f->trailer, 0, sizeof(f->trailer));
    if (c->crc) {
        uint32_t crc = iw_crc32c_update(~0u, f->hdr, hl);

        for (uint32_t i = 1; i < f->niov; i++)
            crc = iw_crc32c_update(crc, f->iov[i].iov_base, f->iov[i].iov_len);
        crc = iw_crc32c_update(crc, f->trailer, pad);
        iw_put_le32(f->trailer + pad, ~crc);
    }
    f->iov[f->niov++] = (struct iovec){ f->trailer, pad + 4 };
    f->total = hl + plen + pad + 4;
    f->done = 0;
}

static struct iw_txf *txf_new(struct iw_conn *c)
{
    struct iw_txf *f = &c->txf[(c->txf_head + c->txf_count) % IW_TXF_MAX];

    f->niov = 1;                    /* [0] is the header */
    f->ends_txe = -1;
    f->ends_rresp = false;
    return f;
}

static uint32_t room(struct iw_conn *c, uint32_t hdr_len)
{
    return (c->fpdu_max - 2 - hdr_len - 4) & ~3u;
}

/* The largest FPDU for @sock now: TCP's current MSS or @cap, the smaller, rounded down to 8. */
uint32_t iw_path_fpdu_max(int sock, uint32_t cap)
{
    int mss = 0;
    socklen_t len = sizeof(mss);

    if (getsockopt(sock, IPPROTO_TCP, TCP_MAXSEG, &mss, &len) < 0 || mss < 256)
        mss = 1448;
    return ((uint32_t)mss < cap ? (uint32_t)mss : cap) & ~7u;
}

/*
 * FPDUs follow TCP's current MSS, which changes during a connection (on loopback 32,768
 * while the window is small, 65,483 once it opened; a path whose MTU
 * drops lowers it), as siw's do, up to ND_IWARP_FPDU_MAX. It is asked again when a message
 * of @bytes that needs more than one FPDU starts (never inside a message: its DDP segments
 * keep one size), at most every IW_MSS_RECHECK_NS (the getsockopt is a system call).
 */
static void follow_mss(struct iw_conn *c, uint64_t bytes)
{
    uint64_t now;
    uint32_t was = c->fpdu_max;

    if (bytes <= room(c, IW_HDR_UNTAGGED))
        return;
    now = nd_coarse_ns();
    if (now - c->mss_checked_ns < IW_MSS_RECHECK_NS)
        return;
    c->mss_checked_ns = now;
    c->fpdu_max = iw_path_fpdu_max(c->sock, c->fpdu_cap);
    if (c->fpdu_max != was)
        nd_log(ND_LOG_DEBUG, ND_SUB_IWARP, "FPDU size %u -> %u bytes (TCP's MSS)", was, c->fpdu_max);
}

/* The next FPDU of request @e. */
/* The untagged message that reports a Write with immediate at the peer's next receive. */
static uint32_t frame_write_notice(struct iw_conn *c, struct iw_txe *e, struct iw_txf *f)
{
    uint8_t op = e->wr.flags & ND_OP_FLAG_SEND_AND_SOLICIT_EVENT ? IW_OP_ND_WRITE_SE_IMM : IW_OP_ND_WRITE_IMM;

    e->notice_due = false;
    return (uint32_t)iw_encode_untagged_imm(f->hdr, op, true, IW_QN_SEND, e->msn, (uint32_t)e->wr.total, 0,
                                            e->wr.imm);
}

static uint8_t send_opcode(const struct nd_wr *wr)
{
    bool se = wr->flags & ND_OP_FLAG_SEND_AND_SOLICIT_EVENT;

    if (ND_UNLIKELY(wr->flags & ND_WR_IMM))
        return se ? IW_OP_ND_SEND_SE_IMM : IW_OP_ND_SEND_IMM;
    if (ND_UNLIKELY(wr->flags & ND_WR_INV))
        return se ? IW_OP_SEND_SE_INV : IW_OP_SEND_INV;
    return se ? IW_OP_SEND_SE : IW_OP_SEND;
}

static void frame_request(struct iw_conn *c, struct iw_txe *e)
{
    struct iw_txf *f = txf_new(c);
    uint32_t plen = 0, hl;
    bool last = true;

    if (ND_UNLIKELY(e->notice_due) && e->framed == e->wr.total) {
        hl = frame_write_notice(c, e, f);
    } else if (e->wr.type == ND_REQUEST_TYPE_READ) {
        /* The sink is ours to name: the first buffer's token and address. */
        struct iw_read_req rr = { .sink_stag = e->wr.nsge ? e->wr.sge[0].memory_region_token : 0,
                                  .sink_to = e->wr.nsge ? (uint64_t)(uintptr_t)e->wr.sge[0].buffer : 0,
                                  .size = (uint32_t)e->wr.total, .src_stag = e->wr.remote_token,
                                  .src_to = e->wr.remote_addr };

        hl = (uint32_t)iw_encode_read_req(f->hdr, e->msn, &rr);
    } else {
        bool send = e->wr.type == ND_REQUEST_TYPE_SEND;
        uint32_t want = room(c, send ? IW_HDR_UNTAGGED : IW_HDR_TAGGED), gen = iw_mtab_gen(c);
        uint64_t at = e->framed;

        /* A registration changed since the buffers were checked: check them again. */
        if (gen != e->checked_gen && !(e->wr.flags & ND_OP_FLAG_INLINE)) {
            if (!nd_qp_local_sges_ok(c->qp, &e->wr)) {
                iw_local_protection(c, e);
                return;
            }
            e->checked_gen = gen;
        }

        if (e->wr.total - e->framed < want)
            want = (uint32_t)(e->wr.total - e->framed);
        plen = payload_iov(e->wr.sge, e->wr.nsge, e->framed, want, f->iov, &f->niov, IW_TXF_IOV - 1);
        e->framed += plen;
        last = e->framed == e->wr.total;
        if (send)
            hl = (uint32_t)iw_encode_untagged_imm(f->hdr, send_opcode(&e->wr), last, IW_QN_SEND, e->msn,
                                                  (uint32_t)at, plen,
                                                  e->wr.flags & (ND_WR_IMM | ND_WR_INV) ? e->wr.imm : 0);
        else
            hl = (uint32_t)iw_encode_tagged(f->hdr, IW_OP_WRITE, last, e->wr.remote_token, e->wr.remote_addr + at,
                                             plen);
    }
    seal(c, f, hl, plen);
    if (last && !e->notice_due) {
        f->ends_txe = (int32_t)(e->wr.index & 0x7fffffff);
        c->cur_txe = -1;
        c->unfenced = e->wr.type != ND_REQUEST_TYPE_READ;
    }
    c->txf_count++;
}

static void rdq_push(struct iw_conn *c, uint32_t upto, int32_t txe)
{
    uint64_t now = nd_coarse_ns();      /* timeouts are seconds: tick resolution will do */

    c->rdq[(c->rdq_head + c->rdq_count++) % IW_RDQ_CAP] = (struct iw_rd){ .upto = upto, .txe = txe, .sent_ns = now };
    c->reads_out++;
    if (c->rdq_count == 1)
        __atomic_store_n(&c->oldest_read_ns, now, __ATOMIC_RELAXED);
}

/*
 * Reads and fences in flight at most. A netdirect responder keeps IRQ_CAP - 128 slots of
 * its inbound queue for fences beyond its IRD, so that every burst can carry one: a burst
 * left unfenced because earlier fences were still out is lost if the peer closes as soon
 * as it has received it (its close answers the fences in its socket, not fences to come).
 */
#define FENCE_SLACK (IRQ_CAP - 128u)
static uint32_t fence_budget(const struct iw_conn *c)
{
    uint32_t b = c->peer_ird + FENCE_SLACK;

    return b < IW_RDQ_CAP ? b : IW_RDQ_CAP;
}

/* A zero-length Read behind the Sends and Writes framed so far. false: no slot free. */
static bool frame_fence(struct iw_conn *c)
{
    static const struct iw_read_req fence = { .src_stag = FENCE_STAG };
    struct iw_txf *f;

    if (c->reads_out >= fence_budget(c))
        return false;               /* an answer on its way frees one; we fence then */
    f = txf_new(c);
    seal(c, f, (uint32_t)iw_encode_read_req(f->hdr, ++c->msn_read, &fence), 0);
    c->txf_count++;
    rdq_push(c, c->tx_next, -1);
    c->unfenced = false;
    return true;
}

static void frame_read_response(struct iw_conn *c)
{
    struct iw_rresp *r = &c->irq[c->irq_head];
    struct iw_txf *f = txf_new(c);
    uint64_t to = r->sink_to + r->sent;
    uint32_t want = room(c, IW_HDR_TAGGED);
    bool last;
    nd_sge src;

    if (r->size - r->sent < want)
        want = r->size - r->sent;
    src.buffer = (void *)(uintptr_t)(r->src_to + r->sent);
    src.buffer_length = want;
    src.memory_region_token = 0;
    /* Checked when the request came; checked again in case the memory went away since. */
    if (want && nd_mtab_check(c->qp->adapter->mtab, ND_MTAB_ENTRIES, r->src_stag, r->src_to + r->sent, want,
                              ND_ACCESS_REMOTE_READ, c->qp->pd)) {
        iw_send_terminate(c, IW_LAYER_RDMAP, IW_RDMAP_ET_PROTECTION, 0x00, NULL);
        iw_conn_fail(c, ND_ACCESS_VIOLATION);
        return;
    }
    payload_iov(&src, 1, 0, want, f->iov, &f->niov, IW_TXF_IOV - 1);
    r->sent += want;
    last = r->sent == r->size;
    seal(c, f, (uint32_t)iw_encode_tagged(f->hdr, IW_OP_READ_RESP, last, r->sink_stag, to, want), want);
    if (last) {
        f->ends_rresp = true;
        c->cur_rresp = false;
        c->irq_head = (c->irq_head + 1) % c->irq_cap;
        c->irq_count--;
        if (!r->size)
            c->irq_fences--;
    }
    c->txf_count++;
}

/* Start the next request: local operations run here, in their turn. false: nothing to start. */
static bool start_next(struct iw_conn *c)
{
    struct iw_txe *e;

    if (c->tx_next == c->posted)
        return false;
    e = txe_at(c, c->tx_next);
    if (e->wr.type == ND_REQUEST_TYPE_BIND || e->wr.type == ND_REQUEST_TYPE_INVALIDATE) {
        c->tx_next++;
        iw_txe_done(c, e, nd_qp_local_op(c->qp, &e->wr));
        return true;
    }
    e->checked_gen = iw_mtab_gen(c);    /* before the check: a later change is seen */
    if (!(e->wr.flags & ND_OP_FLAG_INLINE) && !nd_qp_local_sges_ok(c->qp, &e->wr)) {
        c->tx_next++;
        iw_txe_done(c, e, ND_LOCAL_PROTECTION);
        return true;
    }
    if (e->wr.type == ND_REQUEST_TYPE_READ) {
        if (c->ord == 0) {
            c->tx_next++;
            iw_txe_done(c, e, ND_INVALID_DEVICE_REQUEST);     /* no outbound Read was negotiated */
            return true;
        }
        if (c->reads_out >= c->ord)
            return false;           /* ORD (at most the peer's IRD) reached: wait for a response */
        e->msn = ++c->msn_read;
        rdq_push(c, e->wr.index, (int32_t)(e->wr.index & 0x7fffffff));
        c->unfenced = false;        /* its response confirms everything before it */
    } else {
        /* A Write with immediate takes a Send MSN for its notice (frame_write_notice). */
        e->notice_due = e->wr.type == ND_REQUEST_TYPE_WRITE && (e->wr.flags & ND_WR_IMM);
        if (e->wr.type == ND_REQUEST_TYPE_SEND || e->notice_due)
            e->msn = ++c->msn_send;
        follow_mss(c, e->wr.total);
    }
    c->tx_next++;
    c->cur_txe = (int32_t)(e->wr.index & 0x7fffffff);
    return true;
}

/* The oldest queued Read Response goes out next, its FPDUs sized now. */
static void start_read_response(struct iw_conn *c)
{
    c->cur_rresp = true;
    follow_mss(c, c->irq[c->irq_head].size);
}

/* Frame FPDUs until the ring is full or there is nothing to send. Read Responses go
 * between messages: two messages of one class never interleave. */
static void frame_all(struct iw_conn *c)
{
    while (c->txf_count < IW_TXF_MAX && !c->dead) {
        if (c->cur_rresp)
            frame_read_response(c);
        else if (c->cur_txe >= 0)
            frame_request(c, txe_at(c, (uint32_t)c->cur_txe));
        else if (c->irq_count)
            start_read_response(c);
        else if (!start_next(c) && !(c->unfenced && c->nd_peer && frame_fence(c)))
            break;
    }
}

static void fpdu_sent(struct iw_conn *c, struct iw_txf *f)
{
    if (f->ends_txe >= 0) {
        struct iw_txe *e = txe_at(c, (uint32_t)f->ends_txe);

        e->state = e->wr.type == ND_REQUEST_TYPE_READ ? TXE_WAIT_READ : TXE_WAIT_ACK;
        /* Towards a peer without fences, the socket taking its last byte completes it. */
        if (e->state == TXE_WAIT_ACK && !c->nd_peer)
            iw_txe_done(c, e, ND_SUCCESS);
    }
}

/* A responder holding its first FPDU (hold_first): may it send now? */
static bool hold_over(struct iw_conn *c)
{
    if ((int64_t)(nd_coarse_ns() - c->hold_until) < 0)
        return false;
    c->hold_first = false;
    return true;
}

/* The end of a hold only time brings: when no application thread polls, the engine
 * sweeps until then. */
static void engine_watch(struct iw_conn *c)
{
    if (c->hold_first && !c->engine_asked && !c->dead) {
        c->engine_asked = true;
        iw_engine_kick(c);
    }
}

/*
 * The unsent bytes of the framed FPDUs as iovecs (at most @max). Small batches (a message
 * with its fence and a Read Response, say) are copied into one contiguous buffer: the
 * kernel's per-iovec cost is larger than the copy.
 */
static uint32_t gather(struct iw_conn *c, struct iovec *iov, uint32_t max)
{
    uint32_t n = 0;
    size_t total = 0;

    for (uint32_t i = 0; i < c->txf_count; i++) {
        struct iw_txf *f = &c->txf[(c->txf_head + i) % IW_TXF_MAX];
        uint32_t skip = f->done;

        if (n + f->niov > max)
            break;
        for (uint32_t k = 0; k < f->niov; k++) {
            struct iovec v = f->iov[k];

            if (skip >= v.iov_len) {
                skip -= (uint32_t)v.iov_len;
                continue;
            }
            iov[n++] = (struct iovec){ (uint8_t *)v.iov_base + skip, v.iov_len - skip };
            total += v.iov_len - skip;
            skip = 0;
        }
    }
    if (n > 1 && total <= IW_TXLIN) {
        size_t at = 0;

        for (uint32_t k = 0; k < n; k++) {
            memcpy(c->txlin + at, iov[k].iov_base, iov[k].iov_len);
            at += iov[k].iov_len;
        }
        iov[0] = (struct iovec){ c->txlin, at };
        n = 1;
    }
    return n;
}

void iw_tx_pump(struct iw_conn *c)
{
    struct iovec iov[256];

    __atomic_store_n(&c->owed_since, 0, __ATOMIC_RELAXED);  /* frame_all answers every queued Read */
    c->owed_polled_ns = 0;
    while (!c->dead && !c->tx_errno) {
        ssize_t w;

        frame_all(c);
        iw_complete_in_order(c);
        if (!c->txf_count || c->dead || (c->hold_first && !hold_over(c)))
            break;
        struct msghdr mh = { .msg_iov = iov, .msg_iovlen = gather(c, iov, 256) };
        /* One piece (every small batch, see gather) goes with send: the kernel then has
         * no message header or iovec array to copy in. */
        w = mh.msg_iovlen == 1 ? send(c->sock, iov[0].iov_base, iov[0].iov_len, MSG_NOSIGNAL | MSG_DONTWAIT)
                               : sendmsg(c->sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                __atomic_store_n(&c->want_out, true, __ATOMIC_RELAXED);
                /* A polling application retries on its next poll; only without one does
                 * the engine need to watch (two epoll_ctl calls per stall otherwise). */
                if (!c->out_watch && !iw_engine_app_polls(c)) {
                    c->out_watch = true;
                    iw_engine_want_out(c, true);
                }
                return;
            }
            c->tx_errno = errno;
            if (!c->in_rx)
                iw_rx_pump(c);      /* reads a Terminate left for us, then fails on tx_errno */
            return;
        }
        while (w > 0) {
            struct iw_txf *f = &c->txf[c->txf_head];
            uint32_t take = f->total - f->done < (size_t)w ? f->total - f->done : (uint32_t)w;

            f->done += take;
            w -= take;
            if (f->done == f->total) {
                free(f->bounce);
                f->bounce = NULL;
                c->txf_head = (c->txf_head + 1) % IW_TXF_MAX;
                /* Empty: start over at slot 0, whose lines the last batch left warm. */
                if (--c->txf_count == 0)
                    c->txf_head = 0;
                fpdu_sent(c, f);
            }
        }
    }
    iw_complete_in_order(c);
    if (!c->dead) {
        __atomic_store_n(&c->want_out, false, __ATOMIC_RELAXED);
        if (c->out_watch) {
            c->out_watch = false;
            iw_engine_want_out(c, false);
        }
    }
}

void iw_send_rtr(struct iw_conn *c)
{
    struct iw_txf *f = txf_new(c);

    /* A zero-length Write to STag 1: the RTR siw expects of a peer-to-peer initiator. */
    seal(c, f, (uint32_t)iw_encode_tagged(f->hdr, IW_OP_WRITE, true, 1, 0, 0), 0);
    c->txf_count++;
    iw_tx_pump(c);
}

/* ---- the transport operations ---- */

void iw_post(struct nd_qp *qp, const struct nd_wr *wr)
{
    struct iw_conn *c = qp->conn;
    struct iw_txe *e = txe_at(c, wr->index);

    e->wr = *wr;
    e->framed = e->got = 0;
    e->state = TXE_QUEUED;
    e->status = ND_SUCCESS;
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
        iw_txe_done(c, e, ND_CANCELED);
        iw_complete_in_order(c);
        return;
    }
    iw_tx_pump(c);
    engine_watch(c);
}

void iw_recv_posted(struct nd_qp *qp)
{
    struct iw_conn *c = qp->conn;

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
    struct iw_conn *c = qp->conn;

    if (!c)
        return false;
    iw_engine_note_poll(c);
    /* Whoever holds the lock (the engine, another poller) may be placing entries now. */
    if (nd_lock_try(&qp->lock))
        return true;
    if (qp->conn == c && !c->dead)
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
    struct iw_conn *c = qp->conn;

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
    struct iw_conn *c = qp->conn;

    if (!c)
        return;
    __atomic_store_n(&c->polled_ns, 0, __ATOMIC_RELAXED);
    /* The CQ lock is held: never wait for the QP lock here. Its holder is the engine or
     * another poller; the engine's sweep answers for us then. */
    if (nd_lock_try(&qp->lock) == 0) {
        if (qp->conn == c && !c->dead && c->owed_since)
            iw_tx_pump(c);
        if (qp->conn == c) {
            c->engine_asked = false;    /* the poller no longer watches: the engine does */
            engine_watch(c);
        }
        nd_lock_release(&qp->lock);
    } else {
        iw_engine_kick(c);
    }
    iw_engine_unpark(c);
}

/* What an unfinished request @i completes with when the connection ends. A Terminate that
 * names a request fails that one: the peer handled everything before it in order, so the
 * Sends and Writes before it were placed. Without a name, the oldest unfinished request
 * carries the Terminate's reason. Everything else is flushed. */
static nd_status final_status(struct iw_conn *c, uint32_t i, const struct iw_txe *e, bool *first)
{
    bool was_first = *first;

    *first = false;
    if (!c->got_term)
        return ND_CANCELED;
    if (!c->term_named)
        return was_first ? c->term_status : ND_CANCELED;
    if (i == c->term_index)
        return c->term_status;
    if ((int32_t)(c->term_index - i) > 0 && e->state == TXE_WAIT_ACK)
        return ND_SUCCESS;
    return ND_CANCELED;
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
        iw_conn_fail(c, ND_IO_TIMEOUT);
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
        c->term_status = ND_IO_TIMEOUT;
        c->term_named = false;
    }
    iw_conn_fail(c, ND_IO_TIMEOUT);
}

/* Only a netdirect peer knows the opcodes that carry it; siw answers them with a Terminate. */
static bool iw_carries_imm(struct nd_qp *qp)
{
    struct iw_conn *c = qp->conn;

    return c && c->nd_peer;
}

void iw_shutdown(struct nd_qp *qp, nd_status why)
{
    struct iw_conn *c = qp->conn;
    bool first = true;

    (void)why;
    /* A local disconnect: what the peer sent before it is read first, and the fence
     * answers owed (held for a next post, or found just now) go out, or the peer's last
     * Sends would flush instead of completing: an application closes as soon as it has
     * received everything, the fence behind the last Send may still sit in the socket. */
    if (!c->dead)
        iw_rx_pump(c);
    if (!c->dead && c->owed_since)
        iw_tx_pump(c);
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
    nd_qp_peer_left(c->qp);
}

void iw_destroy(struct nd_qp *qp)
{
    struct iw_conn *c = qp->conn;

    if (!c)
        return;
    iw_engine_remove(c);
    qp->conn = NULL;
    iw_conn_free(c);
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
    .shutdown = iw_shutdown,
    .mem_revoked = iw_mem_revoked,
    .destroy = iw_destroy,
    .adapter_close = iw_adapter_close,
};
