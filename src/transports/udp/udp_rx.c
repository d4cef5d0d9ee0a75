// SPDX-License-Identifier: MIT
/*
 * The udp transport's receive side: datagrams read from a UD QP's socket, checked (headers,
 * destination QP, Q_Key, sender), and placed into the next posted receive behind the 40
 * bytes of GRH space, with a completion in the QP's inbound ring. Runs with the QP lock
 * held, from the engine or from a polling application thread.
 */
#include "udp.h"
#include "core/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#define PKTINFO_SPACE (CMSG_SPACE(sizeof(struct in6_pktinfo)) + CMSG_SPACE(sizeof(struct in_pktinfo)))

struct udp_rx_batch {
    struct mmsghdr mm[UDP_RX_BATCH];
    struct iovec iov[UDP_RX_BATCH];
    struct sockaddr_in6 from[UDP_RX_BATCH];
    uint8_t ctl[UDP_RX_BATCH][PKTINFO_SPACE];
};

/* An IPv4 peer as AF_INET, whichever family the socket reported it in. */
static void addr_plain(const struct sockaddr_in6 *in, struct sockaddr_storage *out)
{
    static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

    memset(out, 0, sizeof(*out));
    if (in->sin6_family == AF_INET) {
        memcpy(out, in, sizeof(struct sockaddr_in));
    } else if (!memcmp(in->sin6_addr.s6_addr, mapped, sizeof(mapped))) {
        struct sockaddr_in *o = (struct sockaddr_in *)out;

        o->sin_family = AF_INET;
        o->sin_port = in->sin6_port;
        memcpy(&o->sin_addr, in->sin6_addr.s6_addr + 12, 4);
    } else {
        memcpy(out, in, sizeof(*in));
    }
}

/* The address the datagram was sent to (the receive's GRH names it), in @family, the
 * sender's: an IPv4 datagram on a dual-stack socket reports it with IP_PKTINFO too. */
static void dest_addr(struct msghdr *m, sa_family_t family, struct sockaddr_storage *out)
{
    memset(out, 0, sizeof(*out));
    out->ss_family = family;
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(m); cm; cm = CMSG_NXTHDR(m, cm)) {
        if (family == AF_INET && cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_PKTINFO) {
            struct in_pktinfo pi;

            memcpy(&pi, CMSG_DATA(cm), sizeof(pi));
            ((struct sockaddr_in *)out)->sin_addr = pi.ipi_addr;
        } else if (family == AF_INET6 && cm->cmsg_level == IPPROTO_IPV6 && cm->cmsg_type == IPV6_PKTINFO) {
            struct in6_pktinfo pi;

            memcpy(&pi, CMSG_DATA(cm), sizeof(pi));
            ((struct sockaddr_in6 *)out)->sin6_addr = pi.ipi6_addr;
        }
    }
}

/* Are the receive's buffers, the first @bytes of them, still registered and writable? */
static bool receive_writable(struct udp_conn *c, const struct nd_rq_slot *slot, uint32_t bytes)
{
    struct nd_qp *qp = c->base.qp;

    for (uint32_t i = 0; i < slot->nsge && bytes; i++) {
        uint32_t n = slot->sge[i].buffer_length < bytes ? slot->sge[i].buffer_length : bytes;

        if (n && nd_mtab_check_local(qp->adapter, &c->memo, slot->sge[i].memory_region_token,
                                     (uintptr_t)slot->sge[i].buffer, n, ND_ACCESS_LOCAL_WRITE) != 0)
            return false;
        bytes -= n;
    }
    return true;
}

/* Copy @n bytes of @src into the receive's buffers from byte @at on. */
static void receive_copy(const struct nd_rq_slot *slot, uint32_t at, const uint8_t *src, uint32_t n)
{
    for (uint32_t i = 0; i < slot->nsge && n; i++) {
        uint32_t len = slot->sge[i].buffer_length;

        if (at >= len) {
            at -= len;
            continue;
        }
        uint32_t k = len - at < n ? len - at : n;

        memcpy((uint8_t *)slot->sge[i].buffer + at, src, k);
        src += k;
        n -= k;
        at = 0;
    }
}

/* Fill the next receive with the GRH and the payload, and complete it. */
static void place(struct udp_conn *c, const uint8_t grh[ND_DGRAM_GRH], const uint8_t *payload, uint32_t plen,
                  const struct udp_hdr *h, uint16_t src_port, bool v6)
{
    struct nd_qp *qp = c->base.qp;
    uint32_t k = c->next_recv, bytes = ND_DGRAM_GRH + plen;
    const struct nd_rq_slot *slot = &qp->rq[k & (qp->rq_entries - 1)];
    uint8_t flags = (h->solicited ? ND_CQE_SOLICITED : 0) | (h->has_imm ? ND_CQE_IMM : 0);
    struct nd_cqe *e;
    int st = 0;

    nd_ring_learn_cons(&c->rprod, atomic_load_explicit(&qp->inbound_hdr->cons, memory_order_acquire));
    if (!(e = nd_ring_next(&c->rprod))) {
        c->dropped++;               /* one entry per receive: cannot happen while the CQ consumes */
        return;
    }
    __atomic_store_n(&c->next_recv, k + 1, __ATOMIC_RELAXED);    /* udp_progress peeks at it */
    if (bytes > slot->total) {
        st = -EMSGSIZE;             /* longer than the receive: nothing is placed */
        bytes = 0;
    } else if (!receive_writable(c, slot, bytes)) {
        flags |= ND_CQE_LOC_PROT;
        bytes = 0;
    } else {
        receive_copy(slot, 0, grh, ND_DGRAM_GRH);
        receive_copy(slot, ND_DGRAM_GRH, payload, plen);
    }
    nd_cqe_set(e, k, st, bytes, ND_REQUEST_TYPE_RECEIVE, flags, 0, 0);
    memcpy(e->data, &src_port, sizeof(src_port));
    e->data[2] = v6;
    if (h->has_imm)
        nd_cqe_set_imm(e, h->imm);
    nd_ring_commit(&c->rprod, e);
}

/* One datagram off the socket: placed, or dropped as a fabric would drop it. */
static void deliver(struct udp_conn *c, struct msghdr *m, uint32_t len)
{
    struct nd_qp *qp = c->base.qp;
    struct sockaddr_storage src, dst;
    const uint8_t *buf = m->msg_iov[0].iov_base;
    uint8_t grh[ND_DGRAM_GRH];
    struct udp_hdr h;
    uint16_t sport;
    int hl;

    addr_plain(m->msg_name, &src);
    sport = ntohs(src.ss_family == AF_INET ? ((struct sockaddr_in *)&src)->sin_port
                                           : ((struct sockaddr_in6 *)&src)->sin6_port);
    hl = (m->msg_flags & MSG_TRUNC) ? -1 : udp_hdr_parse(buf, len, &h);
    /* Ours only when it names this QP, carries its Q_Key, and comes from the QP it says
     * (a UD QP's number is its port's: the sender cannot be someone else's). */
    if (hl < 0 || h.dest_qpn != c->qpn || h.qkey != atomic_load_explicit(&qp->qkey, memory_order_relaxed) ||
        h.src_qpn != ND_DGRAM_QPN(sport) || len - (uint32_t)hl > UDP_PAYLOAD_MAX) {
        c->dropped++;
        nd_log_data(ND_SUB_UDP, "UD datagram dropped (%u bytes)", len);
        return;
    }
    dest_addr(m, src.ss_family, &dst);
    udp_grh_build(grh, (struct sockaddr *)&src, (struct sockaddr *)&dst, 8 + len);
    place(c, grh, buf + hl, len - (uint32_t)hl, &h, sport, src.ss_family == AF_INET6);
}

static void batch_init(struct udp_rx_batch *b, uint8_t *rxbuf, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        b->iov[i] = (struct iovec){ rxbuf + (size_t)i * UDP_DGRAM_MAX, UDP_DGRAM_MAX };
        b->mm[i].msg_hdr = (struct msghdr){ .msg_name = &b->from[i], .msg_namelen = sizeof(b->from[i]),
                                            .msg_iov = &b->iov[i], .msg_iovlen = 1,
                                            .msg_control = b->ctl[i], .msg_controllen = PKTINFO_SPACE };
        b->mm[i].msg_len = 0;
    }
}

bool udp_drain(struct udp_conn *c)
{
    struct nd_qp *qp = c->base.qp;
    struct udp_rx_batch b;

    if (c->memo.pd != qp->pd)
        c->memo = (struct nd_mtab_memo){ .pd = qp->pd };
    for (;;) {
        bool receiving = nd_qp_dgram_receiving(qp);
        uint32_t want = UDP_RX_BATCH;
        int n;

        if (receiving) {
            uint32_t avail = __atomic_load_n(&qp->rq_posted, __ATOMIC_RELAXED) - c->next_recv;

            if (!avail) {
                c->starved = true;  /* what waits stays in the kernel until a receive is posted */
                return false;
            }
            want = avail < want ? avail : want;
        }
        batch_init(&b, c->rxbuf, want);
        n = recvmmsg(c->sock, b.mm, want, MSG_DONTWAIT, NULL);
        if (n <= 0)
            return true;
        for (int i = 0; i < n; i++) {
            if (receiving)
                deliver(c, &b.mm[i].msg_hdr, b.mm[i].msg_len);
            else
                c->dropped++;       /* a QP not in RTR or RTS receives nothing */
        }
        if ((uint32_t)n < want)
            return true;
    }
}
