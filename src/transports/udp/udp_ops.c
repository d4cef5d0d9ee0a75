// SPDX-License-Identifier: MIT
/*
 * The udp transport's operations: a UD QP's socket, its Sends (one datagram each, out
 * before the post returns), and the placement of arriving datagrams into posted receives.
 * UD is unreliable by definition: a datagram that cannot be sent, or that finds no
 * receive, or the wrong Q_Key, is dropped and counted, never an error of the QP.
 */
#include "udp.h"
#include "core/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Ask for room for this many bytes of datagrams waiting in the kernel (it grants what
 * net.core.rmem_max allows: a burst beyond that is dropped, as a switch would). */
#define UDP_RCVBUF (4u << 20)
/* The gather list's most entries: the device's max_send_sge (nd_caps), which the core checked. */
#define UDP_SGE_MAX 32u

static int socket_open(int *family, uint16_t *port)
{
    struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT };
    struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY) };
    struct sockaddr_storage got;
    socklen_t len = sizeof(got);
    int one = 1, zero = 0, rcvbuf = UDP_RCVBUF;
    int s = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);

    /* Both families on one socket where IPv6 exists; IPv4 alone where it does not. */
    if (s >= 0 && (setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)) != 0 ||
                   bind(s, (struct sockaddr *)&a6, sizeof(a6)) != 0)) {
        close(s);
        s = -1;
    }
    *family = AF_INET6;
    if (s < 0) {
        *family = AF_INET;
        s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (s < 0)
            return -errno;
        if (bind(s, (struct sockaddr *)&a4, sizeof(a4)) != 0) {
            int e = -errno;

            close(s);
            return e;
        }
    }
    /* Where each datagram was sent to: the GRH's destination. */
    setsockopt(s, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one));
    if (*family == AF_INET6)
        setsockopt(s, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof(one));
    setsockopt(s, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    if (getsockname(s, (struct sockaddr *)&got, &len) != 0) {
        int e = -errno;

        close(s);
        return e;
    }
    *port = ntohs(got.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&got)->sin6_port
                                            : ((struct sockaddr_in *)&got)->sin_port);
    return s;
}

int udp_open(struct nd_qp *qp, uint16_t *port)
{
    struct udp_conn *c = calloc(1, sizeof(*c));
    int st;

    if (!c)
        return -ENOMEM;
    c->rxbuf = malloc((size_t)UDP_RX_BATCH * UDP_DGRAM_MAX);
    c->sock = c->rxbuf ? socket_open(&c->family, &c->port) : -ENOMEM;
    if (c->sock < 0) {
        st = c->sock;
        free(c->rxbuf);
        free(c);
        return st;
    }
    c->base.ops = &udp_transport;
    c->base.qp = qp;
    c->qpn = ND_DGRAM_QPN(c->port);
    atomic_init(&c->refs, 1);
    nd_qp_ref(qp);                  /* the engine may still lock it after the QP closed */
    nd_cq_local_producer(qp->rcq, qp->inbound_hdr, (struct nd_cqe *)(qp->region + qp->layout.ents), qp->rq_entries,
                         &c->rprod);
    st = udp_engine_add(c);
    if (st != 0) {
        udp_conn_put(c);
        return st;
    }
    nd_qp_set_connected(qp, &c->base);
    /* Pollers of the QP's CQs read its socket themselves, sparing the engine's wake-up. */
    __atomic_store_n(&qp->has_progress, true, __ATOMIC_RELEASE);
    *port = c->port;
    nd_log(ND_LOG_DEBUG, ND_SUB_UDP, "UD QP %p on port %u (QP number 0x%06x)", (void *)qp, c->port, c->qpn);
    return 0;
}

void udp_conn_put(struct udp_conn *c)
{
    if (atomic_fetch_sub(&c->refs, 1) != 1)
        return;
    close(c->sock);
    free(c->rxbuf);
    nd_qp_unref(c->base.qp);
    free(c);
}

/* ---- sending ---- */

/* The destination as our socket's family writes it; false when it cannot reach it. */
static bool dest_of(const struct udp_conn *c, const struct nd_dgram_dest *d, struct sockaddr_storage *ss,
                    socklen_t *len)
{
    uint16_t port = htons(ND_DGRAM_PORT(d->qpn));

    memset(ss, 0, sizeof(*ss));
    if (d->addr->sa_family == AF_INET && d->addr_len >= sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)d->addr;

        if (c->family == AF_INET) {
            *(struct sockaddr_in *)ss = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = port,
                                                              .sin_addr = in->sin_addr };
            *len = sizeof(struct sockaddr_in);
        } else {
            struct sockaddr_in6 *o = (struct sockaddr_in6 *)ss;

            o->sin6_family = AF_INET6;
            o->sin6_port = port;
            o->sin6_addr.s6_addr[10] = o->sin6_addr.s6_addr[11] = 0xff;
            memcpy(o->sin6_addr.s6_addr + 12, &in->sin_addr, 4);
            *len = sizeof(*o);
        }
        return true;
    }
    if (d->addr->sa_family == AF_INET6 && d->addr_len >= sizeof(struct sockaddr_in6) && c->family == AF_INET6) {
        *(struct sockaddr_in6 *)ss = *(const struct sockaddr_in6 *)d->addr;
        ((struct sockaddr_in6 *)ss)->sin6_port = port;
        *len = sizeof(struct sockaddr_in6);
        return true;
    }
    return false;
}

static void udp_post(struct nd_qp *qp, const struct nd_wr *wr)
{
    struct udp_conn *c = udp_conn_of(qp->conn);
    const struct nd_dgram_dest *d = wr->dgram;
    struct iovec iov[1 + UDP_SGE_MAX];
    uint8_t hdr[UDP_HDR_MAX];
    struct sockaddr_storage to;
    struct msghdr m = { .msg_name = &to, .msg_iov = iov };
    struct udp_hdr h;
    uint32_t n = 1;

    if (wr->nsge > UDP_SGE_MAX || !nd_qp_local_sges_ok(qp, wr)) {
        nd_qp_complete_initiator(qp, wr->index, ND_LOCAL_PROTECTION, 0);
        return;
    }
    /* A QP number no UD QP of ours has, or an address our socket cannot reach, names no one:
     * on a fabric such a datagram is lost, and the Send still succeeds. */
    if (!ND_DGRAM_IS_QPN(d->qpn) || !dest_of(c, d, &to, &m.msg_namelen)) {
        c->dropped++;
        nd_qp_complete_initiator(qp, wr->index, 0, 0);
        return;
    }
    h = (struct udp_hdr){ .solicited = (wr->flags & ND_OP_FLAG_SEND_AND_SOLICIT_EVENT) != 0,
                          .has_imm = (wr->flags & ND_WR_IMM) != 0, .dest_qpn = d->qpn, .src_qpn = c->qpn,
                          .imm = wr->imm,
                          /* A Q_Key with its high bit set asks for the QP's own (IBA 10.2.5). */
                          .qkey = (d->qkey & 0x80000000u) ? atomic_load_explicit(&qp->qkey, memory_order_relaxed)
                                                          : d->qkey };
    iov[0] = (struct iovec){ hdr, udp_hdr_build(hdr, &h) };
    for (uint32_t i = 0; i < wr->nsge; i++)
        if (wr->sge[i].buffer_length)
            iov[n++] = (struct iovec){ wr->sge[i].buffer, wr->sge[i].buffer_length };
    m.msg_iovlen = n;
    if (sendmsg(c->sock, &m, MSG_NOSIGNAL) < 0) {
        nd_log_data(ND_SUB_UDP, "UD send dropped: %d", errno);
        c->dropped++;
    }
    nd_qp_complete_initiator(qp, wr->index, 0, 0);
}

/* ---- the rest of the transport ---- */

/* A receive was posted: an engine that stopped watching for want of one watches again. */
static void udp_recv_posted(struct nd_qp *qp)
{
    struct udp_conn *c = udp_conn_of(qp->conn);

    if (c->starved) {
        c->starved = false;
        udp_engine_rearm(c);
    }
}

/* From a poll of the QP's CQ: read what waits, if a receive can take it. Without the lock:
 * a hint whether to try (the engine or another poller may be at it). */
static bool udp_progress(struct nd_qp *qp)
{
    struct udp_conn *c = udp_conn_of(qp->conn);
    uint32_t before;

    if (__atomic_load_n(&qp->rq_posted, __ATOMIC_RELAXED) == __atomic_load_n(&c->next_recv, __ATOMIC_RELAXED))
        return false;
    if (nd_lock_try(&qp->lock) != 0)
        return false;
    before = c->next_recv;
    /* Out of receives here, the engine still watches: starved is the engine's word only. */
    if (!c->stopped && nd_qp_dgram_receiving(qp) && !udp_drain(c))
        c->starved = false;
    bool moved = c->next_recv != before;

    nd_lock_release(&qp->lock);
    return moved;
}

static bool udp_carries_imm(struct nd_qp *qp)
{
    (void)qp;
    return true;
}

/* The QP entered the error state: its receives are flushed by the core, and what arrives
 * from now on is dropped (udp_drain). The socket stays: the QP's number is its port's. */
static void udp_shutdown(struct nd_qp *qp, int why)
{
    struct udp_conn *c = udp_conn_of(qp->conn);

    nd_log(ND_LOG_DEBUG, ND_SUB_UDP, "UD QP 0x%06x enters the error state (%s); %llu datagrams dropped so far",
           c->qpn, nd_err_name(why), (unsigned long long)c->dropped);
}

static void udp_destroy(struct nd_qp *qp)
{
    struct udp_conn *c = udp_conn_of(qp->conn);

    c->stopped = true;
    udp_engine_remove(c);
    udp_conn_put(c);
}

const struct nd_transport_ops udp_transport = {
    .name = "udp",
    .post = udp_post,
    .recv_posted = udp_recv_posted,
    .progress = udp_progress,
    .carries_imm = udp_carries_imm,
    .shutdown = udp_shutdown,
    .destroy = udp_destroy,
};
