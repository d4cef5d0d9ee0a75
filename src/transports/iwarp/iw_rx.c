// SPDX-License-Identifier: MIT
/*
 * iwarp receive side (RFC 5040, 5041, 5044): a stream parser over the socket (header,
 * payload, trailer) that checks every segment before a byte of it is placed (token, range,
 * rights; MSN and MO; the posted receive), places payload straight into registered memory,
 * answers Read Requests, matches Read Responses and fence answers to what we sent, and turns
 * a peer's Terminate into the status of the request it names. Runs with the QP lock held.
 */
#include "iwarp.h"
#include "core/log.h"
#include "core/srq_int.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>

/* ---- the receive side ---- */

/* The receive an inbound Send lands in: the next posted one, or the oldest SRQ slot. */
static bool claim_receive(struct iw_conn *c)
{
    struct nd_qp *qp = c->base.qp;
    const struct nd_rwqe *w;
    uint32_t nsge, max;

    if (qp->srq) {
        struct nd_srq_view v;
        uint32_t slot;

        nd_srq_view(qp->srq, &v);
        if (nd_srq_claim(v.ctl, v.ring, v.entries, &slot) != 1 || slot >= v.entries)
            return false;
        c->msg_recv = slot;
        w = (const struct nd_rwqe *)(v.region + v.layout.slots + (size_t)slot * v.layout.slot_stride);
        max = v.max_sge;
    } else {
        if ((int32_t)(qp->rq_posted - c->next_recv) <= 0)
            return false;
        c->msg_recv = c->next_recv++;
        w = (const struct nd_rwqe *)(qp->region + qp->layout.rwqe +
                                     (size_t)(c->msg_recv & (qp->rq_entries - 1)) * qp->layout.rwqe_stride);
        max = qp->ctl->max_sge;
    }
    nsge = w->nsge < max ? w->nsge : max;
    c->msg_nsge = nsge;
    c->msg_cap = 0;
    for (uint32_t i = 0; i < nsge; i++) {
        c->msg_sge[i].buffer = (void *)(uintptr_t)w->sge[i].addr;
        c->msg_sge[i].buffer_length = w->sge[i].length;
        c->msg_sge[i].memory_region_token = w->sge[i].token;
        c->msg_cap += w->sge[i].length;
    }
    return true;
}

static enum hdr_verdict protection_error(struct iw_conn *c, uint32_t stag, uint64_t to, uint64_t len, uint32_t need);

/* RDMAP's "unspecified" remote operation error: towards a netdirect peer, what a receive
 * whose memory failed its check answers, so that its sender reports a remote operation
 * error (verbs' IBV_WC_REM_OP_ERR) as an RNIC's requester does. */
#define IW_RDMAP_EC_UNSPECIFIED 0xffu

/* The Terminate of a receive whose buffers failed their check: siw's "no buffer" towards
 * anyone but a netdirect peer. */
static enum hdr_verdict receive_unwritable(struct iw_conn *c)
{
    if (c->nd_peer)
        return iw_terminate(c, IW_LAYER_RDMAP, IW_RDMAP_ET_OPERATION, IW_RDMAP_EC_UNSPECIFIED, -EFAULT);
    return iw_terminate(c, IW_LAYER_DDP, IW_DDP_ET_UNTAGGED, 0x02, -EFAULT);
}

static bool sges_writable(struct iw_conn *c, const nd_sge *sge, uint32_t nsge)
{
    for (uint32_t i = 0; i < nsge; i++)
        if (sge[i].buffer_length &&
            nd_mtab_check(c->base.qp->adapter->mtab, ND_MTAB_ENTRIES, sge[i].memory_region_token,
                          (uint64_t)(uintptr_t)sge[i].buffer, sge[i].buffer_length, ND_ACCESS_LOCAL_WRITE,
                          nd_qp_recv_pd(c->base.qp)))
            return false;
    return true;
}

/*
 * A registration changed since the current segment's target was checked (@gen is the
 * table's generation now): is the target still registered? If not, the connection ends
 * here, as it would have had the segment come a moment later, and not a byte more lands.
 */
static bool rx_target_gone(struct iw_conn *c, uint32_t gen)
{
    const struct iw_hdr *h = &c->rh;

    switch (h->opcode) {
    case IW_OP_WRITE:
        if (!nd_mtab_check(c->base.qp->adapter->mtab, ND_MTAB_ENTRIES, h->stag, h->to + c->rx_seg_off, c->rx_left,
                           ND_ACCESS_REMOTE_WRITE, c->base.qp->pd)) {
            c->rx_gen = gen;
            return false;
        }
        protection_error(c, h->stag, h->to + c->rx_seg_off, c->rx_left, ND_ACCESS_REMOTE_WRITE);
        return true;
    case IW_OP_READ_RESP: {
        struct iw_txe *e = txe_at(c, (uint32_t)c->rdq[c->rdq_head].txe);

        if (nd_qp_local_sges_ok(c->base.qp, &e->wr)) {
            e->checked_gen = gen;
            return false;
        }
        iw_local_protection(c, e);
        return true;
    }
    default:
        if (c->msg_overrun || sges_writable(c, c->msg_sge, c->msg_nsge)) {   /* overrun: nothing lands */
            c->msg_gen = gen;
            return false;
        }
        receive_unwritable(c);
        return true;
    }
}

/* The generation the current segment's target was last checked at. */
static uint32_t rx_checked_gen(struct iw_conn *c)
{
    switch (c->rh.opcode) {
    case IW_OP_WRITE:
        return c->rx_gen;
    case IW_OP_READ_RESP:
        return txe_at(c, (uint32_t)c->rdq[c->rdq_head].txe)->checked_gen;
    default:
        return c->msg_gen;
    }
}

/* Where payload byte @off of the current segment goes: a contiguous span, or NULL (drop). */
static uint8_t *rx_dst(struct iw_conn *c, uint32_t off, uint32_t *len)
{
    const struct iw_hdr *h = &c->rh;
    const nd_sge *sge;
    uint32_t nsge, gen = iw_mtab_gen(c);
    uint64_t pos;

    if (ND_UNLIKELY(gen != rx_checked_gen(c)) && rx_target_gone(c, gen))
        return NULL;
    switch (h->opcode) {
    case IW_OP_WRITE:
        *len = c->rx_left;
        return (uint8_t *)(uintptr_t)(h->to + off);
    case IW_OP_READ_RESP: {
        struct iw_txe *e = txe_at(c, (uint32_t)c->rdq[c->rdq_head].txe);

        sge = e->wr.sge;
        nsge = e->wr.nsge;
        pos = h->to - e->sink_to + off;
        break;
    }
    case IW_OP_SEND: case IW_OP_SEND_INV: case IW_OP_SEND_SE: case IW_OP_SEND_SE_INV:
    case IW_OP_ND_SEND_IMM: case IW_OP_ND_SEND_SE_IMM:
        if (c->msg_overrun)
            return NULL;
        sge = c->msg_sge;
        nsge = c->msg_nsge;
        pos = (uint64_t)h->mo + off;
        break;
    default:
        return NULL;
    }
    for (uint32_t i = 0; i < nsge; i++) {
        if (pos < sge[i].buffer_length) {
            uint64_t l = sge[i].buffer_length - pos;

            *len = (uint32_t)(l < c->rx_left ? l : c->rx_left);
            return (uint8_t *)sge[i].buffer + pos;
        }
        pos -= sge[i].buffer_length;
    }
    return NULL;
}

/*
 * A stalled connection reads no further, so the peer's close waits unread behind the
 * message. Once the stall has lasted ND_RNR_WAIT_NS, a peer that closed its side ends the
 * wait whatever the retry count: its disconnect (an InfiniBand DREQ, which no data
 * queues behind) must reach the application, which may be waiting for it and posting no
 * receive. The grace lets a receive posted late still take a message sent just before
 * the close.
 */
static bool stalled_peer_closed(const struct iw_conn *c, uint64_t waited)
{
    struct pollfd p = { .fd = c->sock, .events = POLLRDHUP };

    return waited >= ND_RNR_WAIT_NS && poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* The receive a new message takes: HDR_OK, or wait for one (HDR_STALL), or too long. */
static enum hdr_verdict take_receive(struct iw_conn *c)
{
    uint64_t waited;

    if (claim_receive(c)) {
        c->stalled_since = 0;
        return HDR_OK;
    }
    if (!c->stalled_since) {
        c->stalled_since = nd_now_ns();
        nd_log(ND_LOG_DEBUG, ND_SUB_IWARP, "Send %u waits for a receive", c->rh.msn);
        iw_engine_kick(c);
    }
    waited = nd_now_ns() - c->stalled_since;
    /* An SRQ waits as long as it takes (ND §3.2); a QP's own queue has a bound. */
    if ((c->base.qp->srq || waited < __atomic_load_n(&c->base.qp->rnr_wait_ns, __ATOMIC_RELAXED)) &&
        !stalled_peer_closed(c, waited))
        return HDR_STALL;
    return iw_terminate(c, IW_LAYER_DDP, IW_DDP_ET_UNTAGGED, 0x02, -ETIMEDOUT);
}

/* A message on the Send queue, in MSN order (RFC 5041's untagged errors 0x01, 0x03). */
static enum hdr_verdict check_send_queue(struct iw_conn *c)
{
    if (c->rh.qn != IW_QN_SEND)
        return iw_terminate(c, IW_LAYER_DDP, IW_DDP_ET_UNTAGGED, 0x01, -ECANCELED);
    if (c->rh.msn != c->expect_msn_send)
        return iw_terminate(c, IW_LAYER_DDP, IW_DDP_ET_UNTAGGED, 0x03, -ECANCELED);
    return HDR_OK;
}

static bool imm_opcode(uint8_t op)
{
    return op >= IW_OP_ND_SEND_IMM && op <= IW_OP_ND_WRITE_SE_IMM;
}

/* A Write with immediate's notice (wire.h): a message of its own, with no payload. */
static enum hdr_verdict check_write_notice(struct iw_conn *c, uint32_t plen)
{
    const struct iw_hdr *h = &c->rh;
    enum hdr_verdict v;

    if ((v = check_send_queue(c)) != HDR_OK)
        return v;
    if (c->msg_open || plen || !h->last)
        return iw_terminate(c, IW_LAYER_DDP, IW_DDP_ET_UNTAGGED, 0x04, -ECANCELED);
    if ((v = take_receive(c)) != HDR_OK)
        return v;
    c->msg_open = true;
    c->msg_bytes = h->mo;
    c->msg_overrun = false;
    c->msg_solicited = h->opcode == IW_OP_ND_WRITE_SE_IMM;
    c->msg_imm = true;
    c->msg_inv = false;
    c->msg_imm_data = h->inval_stag;
    c->msg_rdma_imm = true;
    return HDR_OK;
}

static void complete_receive(struct iw_conn *c, bool unwritable);

static enum hdr_verdict check_untagged_send(struct iw_conn *c, uint32_t plen)
{
    const struct iw_hdr *h = &c->rh;
    enum hdr_verdict v;

    if ((v = check_send_queue(c)) != HDR_OK)
        return v;
    if (!c->msg_open) {
        if (h->mo != 0)
            return iw_terminate(c, IW_LAYER_DDP, IW_DDP_ET_UNTAGGED, 0x04, -ECANCELED);
        if ((v = take_receive(c)) != HDR_OK)
            return v;
        /* Send with Invalidate: the named STag goes before the message is placed. */
        if ((h->opcode == IW_OP_SEND_INV || h->opcode == IW_OP_SEND_SE_INV) &&
            !nd_mtab_remote_invalidate(c->base.qp->adapter, h->inval_stag, c->base.qp->pd))
            return iw_terminate(c, IW_LAYER_RDMAP, IW_RDMAP_ET_PROTECTION, 0x09, -EFAULT);
        c->msg_open = true;
        c->msg_bytes = 0;
        c->msg_overrun = false;
        c->msg_solicited = h->opcode == IW_OP_SEND_SE || h->opcode == IW_OP_SEND_SE_INV ||
                           h->opcode == IW_OP_ND_SEND_SE_IMM;
        c->msg_imm = imm_opcode(h->opcode);
        c->msg_inv = h->opcode == IW_OP_SEND_INV || h->opcode == IW_OP_SEND_SE_INV;
        c->msg_imm_data = h->inval_stag;
        c->msg_rdma_imm = false;
        c->msg_gen = iw_mtab_gen(c);    /* before the check: a later change is seen */
        if (!sges_writable(c, c->msg_sge, c->msg_nsge)) {
            /* The receive fails on its own account (a local protection error, as siw's
             * RQE does), ahead of the flushes the terminate brings. */
            complete_receive(c, true);
            return receive_unwritable(c);
        }
    } else if (h->mo != c->msg_bytes) {
        return iw_terminate(c, IW_LAYER_DDP, IW_DDP_ET_UNTAGGED, 0x04, -ECANCELED);
    }
    if ((uint64_t)c->msg_bytes + plen > c->msg_cap)
        c->msg_overrun = true;      /* the rest is dropped; the receive reports it */
    return HDR_OK;
}

/* A remote access our table refused: Terminate with the reason RFC 5040 §7.4 names. */
static enum hdr_verdict protection_error(struct iw_conn *c, uint32_t stag, uint64_t to, uint64_t len, uint32_t need)
{
    enum nd_mtab_why why = nd_mtab_why(c->base.qp->adapter->mtab, ND_MTAB_ENTRIES, stag, to, len, need, c->base.qp->pd);

    if (why == ND_MTAB_OK)
        why = ND_MTAB_BAD_STAG;     /* changed between the two looks: it was refused */
    return iw_terminate(c, IW_LAYER_RDMAP, IW_RDMAP_ET_PROTECTION, (uint8_t)why, -EFAULT);
}

static enum hdr_verdict check_read_response(struct iw_conn *c, uint32_t plen)
{
    const struct iw_hdr *h = &c->rh;
    const struct iw_rd *rd = &c->rdq[c->rdq_head];
    struct iw_txe *e;

    /* Responses come in request order: they answer the oldest Read (or fence) in flight. */
    if (!c->rdq_count)
        return iw_terminate(c, IW_LAYER_DDP, IW_DDP_ET_TAGGED, 0x02, -ECANCELED);
    if (rd->txe < 0) {
        if (h->stag != 0 || h->to != 0 || plen || !h->last)
            return iw_terminate(c, IW_LAYER_DDP, IW_DDP_ET_TAGGED, 0x01, -ECANCELED);
        return HDR_OK;
    }
    e = txe_at(c, (uint32_t)rd->txe);
    e->sink_to = e->wr.nsge ? (uint64_t)(uintptr_t)e->wr.sge[0].buffer : 0;
    if (h->stag != (e->wr.nsge ? e->wr.sge[0].memory_region_token : 0) || h->to != e->sink_to + e->got ||
        e->got + plen > e->wr.total)
        return iw_terminate(c, IW_LAYER_DDP, IW_DDP_ET_TAGGED, 0x01, -ECANCELED);
    return HDR_OK;
}

static enum hdr_verdict check_read_request(struct iw_conn *c)
{
    const struct iw_hdr *h = &c->rh;
    struct iw_rresp *r;

    if (h->msn != c->expect_msn_read)
        return iw_terminate(c, IW_LAYER_DDP, IW_DDP_ET_UNTAGGED, 0x03, -ECANCELED);
    /* Zero-length Reads (fences, Read RTRs) move no data: they do not count against IRD. */
    if (c->irq_count >= c->irq_cap || (h->rr.size && c->irq_count - c->irq_fences >= c->ird))
        return iw_terminate(c, IW_LAYER_RDMAP, IW_RDMAP_ET_OPERATION, 0x07, -ECANCELED);
    if (h->rr.size && nd_mtab_check(c->base.qp->adapter->mtab, ND_MTAB_ENTRIES, h->rr.src_stag, h->rr.src_to,
                                    h->rr.size, ND_ACCESS_REMOTE_READ, c->base.qp->pd))
        return protection_error(c, h->rr.src_stag, h->rr.src_to, h->rr.size, ND_ACCESS_REMOTE_READ);
    c->expect_msn_read++;
    c->irq_fences += !h->rr.size;
    r = &c->irq[(c->irq_head + c->irq_count++) % c->irq_cap];
    *r = (struct iw_rresp){ .sink_stag = h->rr.sink_stag, .src_stag = h->rr.src_stag, .size = h->rr.size,
                            .sink_to = h->rr.sink_to, .src_to = h->rr.src_to };
    return HDR_OK;
}

/* netdirect's atomic (IW_OP_ND_ATOMIC_REQ): a Read Request of 8 aligned bytes the QP and the
 * memory allow atomics on, queued to run when its response is framed (iw_tx.c). */
static enum hdr_verdict check_atomic_request(struct iw_conn *c)
{
    const struct iw_hdr *h = &c->rh;
    struct iw_rresp *r;

    if (h->msn != c->expect_msn_read)
        return iw_terminate(c, IW_LAYER_DDP, IW_DDP_ET_UNTAGGED, 0x03, -ECANCELED);
    if (c->irq_count >= c->irq_cap || c->irq_count - c->irq_fences >= c->ird)
        return iw_terminate(c, IW_LAYER_RDMAP, IW_RDMAP_ET_OPERATION, 0x07, -ECANCELED);
    if (h->rr.size != sizeof(uint64_t) || (h->rr.src_to & 7) || h->atomic_op > IW_ATOMIC_CMP_SWAP)
        return iw_terminate(c, IW_LAYER_RDMAP, IW_RDMAP_ET_OPERATION, 0x06, -ECANCELED);
    if (!nd_qp_remote_atomic(c->base.qp))      /* the QP's access flags: a rights error */
        return iw_terminate(c, IW_LAYER_RDMAP, IW_RDMAP_ET_PROTECTION, ND_MTAB_RIGHTS, -EFAULT);
    if (nd_mtab_check(c->base.qp->adapter->mtab, ND_MTAB_ENTRIES, h->rr.src_stag, h->rr.src_to, h->rr.size,
                      ND_ACCESS_REMOTE_ATOMIC, c->base.qp->pd))
        return protection_error(c, h->rr.src_stag, h->rr.src_to, h->rr.size, ND_ACCESS_REMOTE_ATOMIC);
    c->expect_msn_read++;
    r = &c->irq[(c->irq_head + c->irq_count++) % c->irq_cap];
    *r = (struct iw_rresp){ .sink_stag = h->rr.sink_stag, .src_stag = h->rr.src_stag, .size = h->rr.size,
                            .sink_to = h->rr.sink_to, .src_to = h->rr.src_to,
                            .atomic = h->atomic_op == IW_ATOMIC_FETCH_ADD ? ND_REQUEST_TYPE_FETCH_ADD
                                                                          : ND_REQUEST_TYPE_CMP_SWAP,
                            .add_or_cmp = h->add_or_cmp, .swap = h->swap };
    return HDR_OK;
}

/* What a Terminate from the peer means for the request it names. */
static int term_status(const struct iw_term *t)
{
    if ((t->layer == IW_LAYER_RDMAP && t->etype == IW_RDMAP_ET_PROTECTION) ||
        (t->layer == IW_LAYER_DDP && t->etype == IW_DDP_ET_TAGGED))
        return -EFAULT;
    if (t->layer == IW_LAYER_DDP && t->etype == IW_DDP_ET_UNTAGGED && t->ecode == 0x02)
        return -ETIMEDOUT;       /* our Send found no receive */
    if (t->layer == IW_LAYER_RDMAP && t->etype == IW_RDMAP_ET_OPERATION && t->ecode == IW_RDMAP_EC_UNSPECIFIED)
        return -EREMOTEIO;       /* a netdirect peer's receive could not take it */
    if (t->layer == IW_LAYER_DDP && t->etype == IW_DDP_ET_UNTAGGED && t->ecode == 0x05)
        return 0;          /* our Send was longer than the receive: delivered, cut
                                     * short (ND over iWARP reports success to the sender) */
    return -ECANCELED;
}

static bool names_request(const struct iw_txe *e, const struct iw_hdr *o)
{
    if (o->tagged)
        return e->wr.type == ND_REQUEST_TYPE_WRITE && e->wr.remote_token == o->stag && o->to >= e->wr.remote_addr &&
               o->to - e->wr.remote_addr <= e->wr.total;
    if (o->qn == IW_QN_SEND)
        return e->wr.type == ND_REQUEST_TYPE_SEND && e->msn == o->msn;
    return o->qn == IW_QN_READ && e->wr.type == ND_REQUEST_TYPE_READ && e->msn == o->msn;
}

/* Which of our unfinished requests the Terminate's attached header names, if any. */
static void find_named_request(struct iw_conn *c, const struct iw_term *t)
{
    struct iw_hdr o;

    if (!iw_term_offender(t, &o))
        return;
    for (uint32_t i = c->comp_next; i != c->tx_next; i++) {
        struct iw_txe *e = txe_at(c, i);

        if (e->state != TXE_DONE && names_request(e, &o)) {
            c->term_named = true;
            c->term_index = i;
            return;
        }
    }
}

static enum hdr_verdict on_header(struct iw_conn *c)
{
    const struct iw_hdr *h = &c->rh;
    uint32_t plen = h->ulpdu_len - h->hdr_len;

    c->hold_first = false;          /* the peer has read our Reply, or is ready: we may send */
    if (h->ddp_version != IW_DDP_VERSION)
        return iw_terminate(c, IW_LAYER_DDP, h->tagged ? IW_DDP_ET_TAGGED : IW_DDP_ET_UNTAGGED,
                         h->tagged ? 0x04 : 0x06, -ECANCELED);
    if (h->rdmap_version != IW_RDMAP_VERSION)
        return iw_terminate(c, IW_LAYER_RDMAP, IW_RDMAP_ET_OPERATION, 0x05, -ECANCELED);
    if (h->tagged && h->opcode == IW_OP_WRITE) {
        c->rx_gen = iw_mtab_gen(c);     /* before the check: a later change is seen */
        /* A zero-length Write is an RTR frame (STag 1 by convention): nothing to check. */
        if (plen && nd_mtab_check(c->base.qp->adapter->mtab, ND_MTAB_ENTRIES, h->stag, h->to, plen, ND_ACCESS_REMOTE_WRITE,
                                  c->base.qp->pd))
            return protection_error(c, h->stag, h->to, plen, ND_ACCESS_REMOTE_WRITE);
        return HDR_OK;
    }
    if (h->tagged && h->opcode == IW_OP_READ_RESP)
        return check_read_response(c, plen);
    if (h->tagged)
        return iw_terminate(c, IW_LAYER_RDMAP, IW_RDMAP_ET_OPERATION, 0x06, -ECANCELED);
    switch (h->opcode) {
    case IW_OP_SEND: case IW_OP_SEND_INV: case IW_OP_SEND_SE: case IW_OP_SEND_SE_INV:
        return check_untagged_send(c, plen);
    case IW_OP_ND_SEND_IMM: case IW_OP_ND_SEND_SE_IMM:
        if (!c->nd_peer)
            break;
        return check_untagged_send(c, plen);
    case IW_OP_ND_WRITE_IMM: case IW_OP_ND_WRITE_SE_IMM:
        if (!c->nd_peer)
            break;
        return check_write_notice(c, plen);
    case IW_OP_READ_REQ:
        if (plen)
            return iw_terminate(c, IW_LAYER_DDP, IW_DDP_ET_UNTAGGED, 0x05, -ECANCELED);
        return check_read_request(c);
    case IW_OP_ND_ATOMIC_REQ:
        if (!c->nd_peer)
            break;
        if (plen)
            return iw_terminate(c, IW_LAYER_DDP, IW_DDP_ET_UNTAGGED, 0x05, -ECANCELED);
        return check_atomic_request(c);
    case IW_OP_TERMINATE:
        nd_log(ND_LOG_INFO, ND_SUB_IWARP, "peer sent Terminate: layer %u type %u code 0x%02x%s", h->term.layer,
               h->term.etype, h->term.ecode, h->term.siw_order ? " (siw bit order)" : "");
        c->got_term = true;
        c->term_status = term_status(&h->term);
        find_named_request(c, &h->term);
        iw_conn_fail(c, c->term_status ? c->term_status : -ECANCELED);
        return HDR_FAIL;
    default:
        break;
    }
    return iw_terminate(c, IW_LAYER_RDMAP, IW_RDMAP_ET_OPERATION, 0x06, -ECANCELED);
}

/* The message is complete (-EMSGSIZE when c->msg_overrun), or its receive's buffers
 * were not writable (@unwritable: nothing was placed). */
static void complete_receive(struct iw_conn *c, bool unwritable)
{
    struct nd_cqe *slot;

    c->msg_open = false;
    c->expect_msn_send++;
    nd_ring_learn_cons(&c->rprod, atomic_load_explicit(&c->base.qp->inbound_hdr->cons, memory_order_acquire));
    if (!(slot = nd_ring_next(&c->rprod))) {
        iw_conn_fail(c, -EIO);
        return;
    }
    nd_cqe_set(slot, c->msg_recv, c->msg_overrun ? -EMSGSIZE : 0, unwritable ? 0 : c->msg_bytes,
               ND_REQUEST_TYPE_RECEIVE,
               (c->msg_solicited ? ND_CQE_SOLICITED : 0) | (c->msg_imm ? ND_CQE_IMM : 0) |
               (c->msg_rdma_imm ? ND_CQE_RDMA_IMM : 0) | (c->msg_inv ? ND_CQE_INV : 0) |
               (unwritable ? ND_CQE_LOC_PROT : 0), 0, 0);
    if (c->msg_imm || c->msg_inv)
        nd_cqe_set_imm(slot, c->msg_imm_data);
    nd_ring_commit(&c->rprod, slot);
    if (c->msg_overrun) {
        /* siw's answer to a Send longer than the receive; the CQ fails the QP when it
         * returns the entry, after everything placed before it. */
        iw_send_terminate(c, IW_LAYER_DDP, IW_DDP_ET_UNTAGGED, 0x05, &c->rh);
        c->dead = true;
        shutdown(c->sock, SHUT_RDWR);
    }
}

/* An FPDU is fully in (trailer checked). false: the connection ended. */
static bool on_fpdu_end(struct iw_conn *c)
{
    const struct iw_hdr *h = &c->rh;
    uint32_t plen = h->ulpdu_len - h->hdr_len;

    switch (h->tagged ? (h->opcode == IW_OP_READ_RESP ? 100 : 101) : h->opcode) {
    case 100: {
        struct iw_rd rd = c->rdq[c->rdq_head];
        struct iw_txe *e = rd.txe >= 0 ? txe_at(c, (uint32_t)rd.txe) : NULL;

        if (e)
            e->got += plen;
        if (h->last) {
            if (e && e->got != e->wr.total) {
                iw_terminate(c, IW_LAYER_DDP, IW_DDP_ET_TAGGED, 0x01, -ECANCELED);
                return false;
            }
            if (e)
                iw_txe_done(c, e, 0);
            c->rdq_head = (c->rdq_head + 1) % IW_RDQ_CAP;
            c->rdq_count--;
            c->reads_out--;
            __atomic_store_n(&c->oldest_read_ns, c->rdq_count ? c->rdq[c->rdq_head].sent_ns : 0, __ATOMIC_RELAXED);
            iw_confirm(c, rd.upto);
            /* Starts Reads that waited for ORD, and the fence that waited for a Read slot
             * behind Writes framed while every slot was taken; then completes. */
            if (c->tx_next != c->posted || c->irq_count || c->unfenced)
                iw_tx_pump(c);
            else
                iw_complete_in_order(c);
        }
        break;
    }
    case IW_OP_SEND: case IW_OP_SEND_INV: case IW_OP_SEND_SE: case IW_OP_SEND_SE_INV:
    case IW_OP_ND_SEND_IMM: case IW_OP_ND_SEND_SE_IMM:
        c->msg_bytes += plen;
        if (h->last)
            complete_receive(c, false);
        break;
    case IW_OP_ND_WRITE_IMM: case IW_OP_ND_WRITE_SE_IMM:
        complete_receive(c, false);        /* no payload: msg_bytes is the Write's length */
        break;
    case IW_OP_ND_ATOMIC_REQ:
        iw_tx_pump(c);
        break;
    case IW_OP_READ_REQ:
        if (c->app_rx && !c->rh.rr.size && c->irq_count == c->irq_fences) {
            if (!c->owed_since)
                __atomic_store_n(&c->owed_since, nd_coarse_ns(), __ATOMIC_RELAXED);
        } else {
            iw_tx_pump(c);
        }
        break;
    default:
        break;
    }
    return !c->dead;
}

/* Payload worth a read of its own straight into its destination. */
#define IW_DIRECT_MIN 4096u

static void take_payload(struct iw_conn *c, const uint8_t *p, uint32_t n)
{
    while (n) {
        uint32_t len = 0, k;
        uint8_t *dst = rx_dst(c, c->rx_seg_off, &len);

        k = dst && len < n ? len : n;
        if (dst)
            memcpy(dst, p, k);
        if (c->crc)
            c->rx_crc = iw_crc32c_update(c->rx_crc, p, k);
        p += k;
        n -= k;
        c->rx_left -= k;
        c->rx_seg_off += k;
    }
}

/* Parse what the buffer holds. false: stop reading (stalled or the connection ended). */
static bool feed(struct iw_conn *c)
{
    while (c->rx_lo < c->rx_hi && !c->dead) {
        const uint8_t *p = c->rxbuf + c->rx_lo;
        uint32_t avail = c->rx_hi - c->rx_lo;

        if (c->rx_state == RX_HDR) {
            int r = iw_hdr_parse(p, avail, &c->rh);
            enum hdr_verdict v;

            if (r == 0)
                break;
            if (r < 0) {
                iw_terminate(c, IW_LAYER_LLP, 0, 0x03, -ECANCELED);
                return false;
            }
            v = on_header(c);
            if (v != HDR_OK)
                return false;
            if (c->crc)
                c->rx_crc = iw_crc32c_update(~0u, p, (size_t)r);
            c->rx_lo += (uint32_t)r;
            c->rx_left = c->rh.ulpdu_len - c->rh.hdr_len;
            c->rx_seg_off = 0;
            c->rx_state = c->rx_left ? RX_PAYLOAD : RX_TRAILER;
        } else if (c->rx_state == RX_PAYLOAD) {
            uint32_t n = avail < c->rx_left ? avail : c->rx_left;

            take_payload(c, p, n);
            c->rx_lo += n;
            if (!c->rx_left)
                c->rx_state = RX_TRAILER;
        } else {
            uint32_t pad = iw_pad(c->rh.ulpdu_len);

            if (avail < pad + 4)
                break;
            if (c->crc) {
                /* siw may leave stale bytes in the pad: the CRC covers them as received. */
                uint32_t crc = ~iw_crc32c_update(c->rx_crc, p, pad);

                if (crc != iw_get_le32(p + pad)) {
                    iw_terminate(c, IW_LAYER_LLP, 0, 0x02, -ECANCELED);
                    return false;
                }
            }
            c->rx_lo += pad + 4;
            c->rx_state = RX_HDR;
            if (!on_fpdu_end(c))
                return false;
        }
    }
    if (c->rx_lo == c->rx_hi)
        c->rx_lo = c->rx_hi = 0;
    return !c->dead;
}

/* Bulk payload goes from the socket straight into its destination, with no bounce; what
 * follows it (the trailer, the next headers) lands in the stream buffer in the same call.
 * Called with the stream buffer empty. */
static ssize_t recv_direct(struct iw_conn *c, size_t *asked)
{
    uint32_t len = 0;
    uint8_t *dst = rx_dst(c, c->rx_seg_off, &len);
    struct iovec iov[2];
    struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
    ssize_t n;

    if (!dst)
        return -2;
    iov[0] = (struct iovec){ dst, len };
    iov[1] = (struct iovec){ c->rxbuf, IW_RXBUF };
    *asked = (size_t)len + IW_RXBUF;
    n = recvmsg(c->sock, &mh, MSG_DONTWAIT);
    if (n > 0) {
        uint32_t placed = (uint32_t)n < len ? (uint32_t)n : len;

        if (c->crc)
            c->rx_crc = iw_crc32c_update(c->rx_crc, dst, placed);
        c->rx_left -= placed;
        c->rx_seg_off += placed;
        if (!c->rx_left)
            c->rx_state = RX_TRAILER;
        c->rx_lo = 0;
        c->rx_hi = (uint32_t)n - placed;
    }
    return n;
}

/*
 * Read and place until the socket is empty. For a polling application, a read that
 * returns less than it asked for emptied the socket of data: it stops there rather than
 * pay one more system call to hear EAGAIN (on the latency path that call is a third of a
 * round trip). Not so for anyone else: a FIN queued behind the data reads as 0 only on the
 * next call, and its edge may be spent already, so the engine and the other callers read
 * to EAGAIN; a poller that stops is covered by the engine's tick (it serves the connection
 * once its polls stop).
 */
static void rx_pump(struct iw_conn *c, bool *got);

/* Pump, then note whether an FPDU is left half in and since when bytes last came: a peer
 * that stops mid-FPDU is timed out (iw_check_overdue), even with nothing of ours waiting. */
bool iw_rx_pump(struct iw_conn *c)
{
    bool got = false, partial, nested = c->in_rx;

    c->in_rx = true;
    rx_pump(c, &got);
    c->in_rx = nested;
    if (!nested && !c->dead && c->tx_errno)
        iw_sock_failed(c, c->tx_errno);

    partial = !c->dead && (c->rx_state != RX_HDR || c->rx_lo < c->rx_hi);
    if (!partial)
        __atomic_store_n(&c->rx_partial_since, 0, __ATOMIC_RELAXED);
    else if (got || !c->rx_partial_since)
        __atomic_store_n(&c->rx_partial_since, nd_coarse_ns(), __ATOMIC_RELAXED);
    return got;
}

static void rx_pump(struct iw_conn *c, bool *got)
{
    bool drained = false;

    while (!c->dead) {
        ssize_t n = -2;
        size_t asked = 0;

        if (c->rx_lo < c->rx_hi && !feed(c))
            return;                 /* stalled on a receive, or the connection ended */
        if (drained)
            return;
        if (c->rx_budget && --c->rx_budget == 0)
            return;                 /* the engine's budget: serve() goes on or hands over */
        if (c->rx_state == RX_PAYLOAD && c->rx_lo == c->rx_hi && c->rx_left >= IW_DIRECT_MIN)
            n = recv_direct(c, &asked);
        if (c->dead)
            return;                 /* its target was deregistered: the connection ended */
        if (n == -2) {
            if (c->rx_lo && c->rx_hi == IW_RXBUF) {
                memmove(c->rxbuf, c->rxbuf + c->rx_lo, c->rx_hi - c->rx_lo);
                c->rx_hi -= c->rx_lo;
                c->rx_lo = 0;
            }
            asked = IW_RXBUF - c->rx_hi;
            n = recv(c->sock, c->rxbuf + c->rx_hi, asked, MSG_DONTWAIT);
            if (n > 0)
                c->rx_hi += (uint32_t)n;
        }
        *got |= n > 0;
        drained = c->app_rx && n > 0 && (size_t)n < asked;
        if (n == 0) {
            nd_log(ND_LOG_DEBUG, ND_SUB_IWARP, "peer closed the connection");
            iw_conn_fail(c, -ECANCELED);
            return;
        }
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                iw_sock_failed(c, errno);
            return;
        }
    }
}
