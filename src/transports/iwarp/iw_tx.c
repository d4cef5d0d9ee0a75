// SPDX-License-Identifier: MIT
/*
 * iwarp sending (RFC 5040, 5041, 5044). Initiator requests are framed into FPDUs no larger
 * than the path MSS and written with one sendmsg per batch, their payload iovecs pointing
 * at registered memory; behind the last Send or Write of a batch towards a netdirect peer
 * goes a zero-length Read, a "fence", whose response proves the peer placed them. Read
 * Responses are framed here too. Every function here runs with the QP lock held.
 */
#include "iwarp.h"
#include "core/log.h"
#include "core/atomic.h"
#include "core/srq_int.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define FENCE_STAG 1u               /* the source STag of a fence, as siw's Read RTR uses */

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

        if (ND_UNLIKELY(e->wr.atomic))
            hl = (uint32_t)iw_encode_atomic_req(f->hdr, e->msn, &rr,
                                                e->wr.atomic == ND_REQUEST_TYPE_FETCH_ADD ? IW_ATOMIC_FETCH_ADD
                                                                                          : IW_ATOMIC_CMP_SWAP,
                                                e->wr.add_or_cmp, e->wr.swap);
        else
            hl = (uint32_t)iw_encode_read_req(f->hdr, e->msn, &rr);
    } else {
        bool send = e->wr.type == ND_REQUEST_TYPE_SEND;
        uint32_t want = room(c, send ? IW_HDR_UNTAGGED : IW_HDR_TAGGED), gen = iw_mtab_gen(c);
        uint64_t at = e->framed;

        /* A registration changed since the buffers were checked: check them again. */
        if (gen != e->checked_gen && !(e->wr.flags & ND_OP_FLAG_INLINE)) {
            if (!nd_qp_local_sges_ok(c->base.qp, &e->wr)) {
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
 * Reads and fences in flight at most. A netdirect responder keeps IW_IRQ_CAP - 128 slots of
 * its inbound queue for fences beyond its IRD, so that every burst can carry one: a burst
 * left unfenced because earlier fences were still out is lost if the peer closes as soon
 * as it has received it (its close answers the fences in its socket, not fences to come).
 */
#define FENCE_SLACK (IW_IRQ_CAP - 128u)
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
    if (want && nd_mtab_check(c->base.qp->adapter->mtab, ND_MTAB_ENTRIES, r->src_stag, r->src_to + r->sent, want,
                              r->atomic ? ND_ACCESS_REMOTE_ATOMIC : ND_ACCESS_REMOTE_READ, c->base.qp->pd)) {
        iw_send_terminate(c, IW_LAYER_RDMAP, IW_RDMAP_ET_PROTECTION, 0x00, NULL);
        iw_conn_fail(c, -EFAULT);
        return;
    }
    /* An atomic runs now, in its turn after everything the peer sent before it; the answer
     * is the FPDU's own copy of the old value (the queue entry is reused once framed). */
    if (r->atomic) {
        int st = nd_atomic_local(r->atomic, (uint64_t *)(uintptr_t)r->src_to, r->add_or_cmp, r->swap, &f->old_value);

        if (st != 0) {
            iw_send_terminate(c, IW_LAYER_RDMAP, IW_RDMAP_ET_CATASTROPHIC, 0x00, NULL);
            iw_conn_fail(c, st);
            return;
        }
        src.buffer = &f->old_value;
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
        iw_txe_done(c, e, nd_qp_local_op(c->base.qp, &e->wr));
        return true;
    }
    e->checked_gen = iw_mtab_gen(c);    /* before the check: a later change is seen */
    if (!(e->wr.flags & ND_OP_FLAG_INLINE) && !nd_qp_local_sges_ok(c->base.qp, &e->wr)) {
        c->tx_next++;
        iw_txe_done(c, e, ND_LOCAL_PROTECTION);
        return true;
    }
    if (e->wr.type == ND_REQUEST_TYPE_READ) {
        if (c->ord == 0) {
            c->tx_next++;
            iw_txe_done(c, e, -EBADRQC);     /* no outbound Read was negotiated */
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
            iw_txe_done(c, e, 0);
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
void iw_watch_hold(struct iw_conn *c)
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
                c->pumps->rx(c);    /* reads a Terminate left for us, then fails on tx_errno */
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
