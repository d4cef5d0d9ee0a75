// SPDX-License-Identifier: MIT
/*
 * iwarp connection set-up: TCP, then the MPA request/reply of RFC 5044 with the RFC 6581
 * block. We send revision 2 with the block, never markers, CRC only when asked
 * (ND_IWARP_CRC) or when the peer asks, and peer-to-peer mode (a Write RTR) only when
 * ND_IWARP_P2P asks: siw as responder installs its RTR handler only after its Reply is
 * out, and an RTR that comes before that is lost. Between two netdirect peers the
 * Request offers, and the Reply agrees to, netdirect's extensions (MPA_FLAG_ND_OFFER /
 * _AGREE): placement fences and an RTR frame that is ND's CompleteConnect. Frames are read
 * with MSG_PEEK and consumed exactly, so an FPDU right behind a Reply stays in the socket
 * for the data path.
 */
#include "iwarp.h"
#include "core/cm_int.h"
#include "core/env.h"
#include "core/log.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define DIAL_TIMEOUT_MS 3000        /* TCP connect: the SYN retries beyond this are not worth waiting for */

static void tune(int fd)
{
    int one = 1;
    unsigned int user_timeout = iw_timeout_ms();

    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    /* A peer that stops acknowledging (gone, or a zero window it never opens) ends the
     * connection after this long: the kernel reports ETIMEDOUT, the QP's oldest request
     * completes -ETIMEDOUT and the rest flush. */
    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof(user_timeout));
}

int iw_cm_listen(const struct sockaddr *addr, int port_fd, int backlog)
{
    int fd;

    if (listen(port_fd, backlog) < 0)
        return -errno;
    fd = fcntl(port_fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

int iw_cm_accept(int listen_fd, pid_t *pid)
{
    int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

    if (fd < 0)
        return -1;
    tune(fd);
    *pid = 0;
    return fd;
}

int iw_cm_dial(const struct sockaddr *dest, const struct sockaddr *local, pid_t *pid)
{
    struct sockaddr_storage from;
    struct pollfd pfd;
    socklen_t len = sizeof(int);
    int fd = socket(dest->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), err = 0;

    if (fd < 0)
        return -errno;
    *pid = 0;
    tune(fd);
    if (local && local->sa_family == dest->sa_family) {
        /* From the connector's address; the port is TCP's choice (the connector's own port
         * stays reserved by its bound socket). */
        memcpy(&from, local, nd_sockaddr_len(local));
        if (from.ss_family == AF_INET)
            ((struct sockaddr_in *)&from)->sin_port = 0;
        else
            ((struct sockaddr_in6 *)&from)->sin6_port = 0;
        /* The port is picked at connect(), by the 4-tuple: it may reuse a port whose last
         * connection sits in TIME_WAIT, where bind() to port 0 would scan past every one. */
        int one = 1;
        setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
        bind(fd, (struct sockaddr *)&from, nd_sockaddr_len((struct sockaddr *)&from));
    }
    if (connect(fd, dest, nd_sockaddr_len(dest)) == 0)
        return fd;
    if (errno != EINPROGRESS) {
        err = errno;
        goto fail;
    }
    pfd = (struct pollfd){ .fd = fd, .events = POLLOUT };
    if (poll(&pfd, 1, DIAL_TIMEOUT_MS) != 1) {
        err = ETIMEDOUT;
        goto fail;
    }
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
        err = errno;
    if (!err)
        return fd;
fail:
    close(fd);
    return -err;
}

uint32_t iw_timeout_ms(void)
{
    return nd_env_ms(ND_KNOB_IW_TIMEOUT);
}

/*
 * ND_IWARP_FPDU_MAX, within MPA's limit. 32 KiB by default: our stream buffer (64 KiB) then
 * holds two FPDUs a read; 65,480-byte FPDUs (loopback's full MSS) gave 1 MiB Send streams
 * 0.92 of that here (median of 24 ABBA rounds).
 */
uint32_t iw_fpdu_cap(void)
{
    long v = strtol(nd_env(ND_KNOB_IW_FPDU_MAX), NULL, 10);
    uint32_t mpa_max = (2 + IW_FPDU_MAX_ULPDU + 3 + 4) & ~7u;

    return v < 256 ? 32768 : v > (long)mpa_max ? mpa_max : (uint32_t)v;
}

bool iw_want_crc(void)
{
    return !strcmp(nd_env(ND_KNOB_IW_CRC), "1");
}

static bool want_p2p(void)
{
    return !strcmp(nd_env(ND_KNOB_IW_P2P), "1");
}

static bool offer_extensions(void)
{
    return strcmp(nd_env(ND_KNOB_IW_EXT), "0") != 0;
}

static int send_frame(int sock, const struct mpa_frame *f)
{
    uint8_t buf[MPA_FRAME_HDR + MPA_MAX_PD_TX];
    size_t n = mpa_encode(buf, sizeof(buf), f);
    ssize_t w;

    if (!n)
        return -ERANGE;
    do
        w = send(sock, buf, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    while (w < 0 && errno == EINTR);
    return w == (ssize_t)n ? 0 : -ECONNABORTED;
}

/* The Reply's RFC 6581 words: our limits, P2P echoed with one RTR type chosen. */
static void reply_block(const struct nd_cm_msg *m, struct mpa_frame *f)
{
    uint32_t o = m->xport_opts;

    f->ird_word = (uint16_t)(m->ird & MPA_V2_VALUE);
    f->ord_word = (uint16_t)(m->ord & MPA_V2_VALUE);
    if (o & IW_OPT_P2P) {
        f->ird_word |= MPA_V2_P2P;
        f->ord_word |= (o & IW_OPT_RTR_WRITE) || !(o & IW_OPT_RTR_READ) ? MPA_V2_RTR_WRITE : MPA_V2_RTR_READ;
    }
}

int iw_cm_send(int sock, struct nd_cm_msg *m, struct nd_qp *qp)
{
    struct mpa_frame f = { .rev = 2, .enhanced = true, .app = m->pdata, .app_len = (uint16_t)m->pdata_len };
    uint32_t o = m->xport_opts;

    switch (m->type) {
    case ND_CM_REQ:
        f.flags = (iw_want_crc() ? MPA_FLAG_CRC : 0) | (offer_extensions() ? MPA_FLAG_ND_OFFER : 0);
        f.ird_word = (uint16_t)((m->ird & MPA_V2_VALUE) | (want_p2p() ? MPA_V2_P2P : 0));
        f.ord_word = (uint16_t)((m->ord & MPA_V2_VALUE) | (want_p2p() ? MPA_V2_RTR_WRITE : 0));
        return send_frame(sock, &f);
    case ND_CM_REP:
    case ND_CM_REJ:
        if (m->type == ND_CM_REJ && m->from_active)
            return 0;      /* MPA has no initiator reject: closing the socket says it */
        f.reply = true;
        f.rev = o & IW_OPT_REV1 ? 1 : 2;
        f.enhanced = f.rev == 2 && (o & IW_OPT_ENHANCED);
        /* CRC is on when either side asks; the Reply's bit is final. */
        f.flags = (o & IW_OPT_CRC) || iw_want_crc() ? MPA_FLAG_CRC : 0;
        if (m->type == ND_CM_REJ)
            f.flags |= MPA_FLAG_REJECT;
        else
            reply_block(m, &f);
        if (m->type == ND_CM_REP && (o & IW_OPT_ND))
            f.flags |= MPA_FLAG_ND_AGREE;
        return send_frame(sock, &f);
    default:
        return 0;          /* RTU is the RTR frame iw_attach sends; DISC is the FIN */
    }
}

/* What a Request or Reply asks for. IW_OPT_ND: both sides use netdirect's extensions (a
 * Request that offers them, to us who would; a Reply that agrees to our offer). */
static uint32_t opts_of(const struct mpa_frame *f)
{
    uint32_t o = 0;

    if ((f->flags & (f->reply ? MPA_FLAG_ND_AGREE : MPA_FLAG_ND_OFFER)) && offer_extensions())
        o |= IW_OPT_ND;
    if (f->flags & MPA_FLAG_CRC)
        o |= IW_OPT_CRC;
    if (f->rev == 1)
        o |= IW_OPT_REV1;
    if (f->enhanced) {
        o |= IW_OPT_ENHANCED;
        if (f->ird_word & MPA_V2_P2P)
            o |= IW_OPT_P2P;
        if (f->ord_word & MPA_V2_RTR_WRITE)
            o |= IW_OPT_RTR_WRITE;
        if (f->ord_word & MPA_V2_RTR_READ)
            o |= IW_OPT_RTR_READ;
    }
    return o;
}

/*
 * May an initiator take this Reply? Its RFC 6581 block may only pick what our Request
 * offered (peer-to-peer, if we asked, with a Write RTR), one RTR type; and when we
 * asked for CRC, a Reply without it ends the Connect rather than leave us checking
 * trailers the peer does not fill (the Reply's C bit is final, RFC 5044).
 */
static bool reply_acceptable(const struct mpa_frame *f)
{
    if (f->flags & MPA_FLAG_REJECT)
        return true;
    if (iw_want_crc() && !(f->flags & MPA_FLAG_CRC)) {
        nd_log(ND_LOG_INFO, ND_SUB_IWARP, "MPA reply without CRC, which we asked for");
        return false;
    }
    if (f->enhanced && (f->ird_word & MPA_V2_P2P) && !want_p2p()) {
        nd_log(ND_LOG_INFO, ND_SUB_IWARP, "MPA reply grants peer-to-peer mode, which we did not ask for");
        return false;
    }
    if (f->enhanced && (f->ird_word & MPA_V2_P2P) &&
        (f->ord_word & (MPA_V2_RTR_WRITE | MPA_V2_RTR_READ)) != MPA_V2_RTR_WRITE) {
        nd_log(ND_LOG_INFO, ND_SUB_IWARP, "MPA reply picks an RTR type we did not offer");
        return false;
    }
    return true;
}

static int recv_frame(int sock, struct nd_cm_msg *m, bool reply)
{
    uint8_t buf[MPA_FRAME_HDR + MPA_MAX_PD_RX];
    struct mpa_frame f;
    ssize_t n = recv(sock, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
    int len;

    if (n < 0)
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? -EINPROGRESS : -ECONNABORTED;
    if (n == 0)
        return -ECONNABORTED;
    len = mpa_parse(buf, (size_t)n, reply, &f);
    if (len == MPA_NEED_MORE)
        return -EINPROGRESS;
    if (len < 0 || f.app_len > ND_CM_MAX_PDATA) {
        nd_log(ND_LOG_INFO, ND_SUB_IWARP, "bad MPA %s from peer", reply ? "reply" : "request");
        return -ECONNABORTED;
    }
    if (recv(sock, buf, (size_t)len, MSG_DONTWAIT) != len)
        return -ECONNABORTED;
    if (reply && !reply_acceptable(&f))
        return -ECONNABORTED;
    nd_cm_msg_init(m, reply ? (f.flags & MPA_FLAG_REJECT ? ND_CM_REJ : ND_CM_REP) : ND_CM_REQ);
    /* Without the block (revision 1) the peer's limits are unknown: one Read each way. */
    m->ird = f.enhanced ? f.ird_word & MPA_V2_VALUE : 1;
    m->ord = f.enhanced ? f.ord_word & MPA_V2_VALUE : 1;
    m->xport_opts = opts_of(&f);
    m->pdata_len = f.app_len;
    memcpy(m->pdata, f.app, f.app_len);
    if (!reply) {
        socklen_t sl = sizeof(m->src);

        getpeername(sock, (struct sockaddr *)&m->src, &sl);
    }
    return 0;
}

int iw_cm_recv(int sock, struct nd_cm_msg *m, uint16_t expect)
{
    uint8_t b;
    ssize_t n;

    if (expect == ND_CM_REQ || expect == ND_CM_REP)
        return recv_frame(sock, m, expect == ND_CM_REP);
    n = recv(sock, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0)
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? -EINPROGRESS : -ECONNABORTED;
    if (n == 0) {
        /* An orderly close before the first FPDU: the peer gave up (an initiator's Reject). */
        nd_cm_msg_init(m, ND_CM_REJ);
        return 0;
    }
    if (expect != ND_CM_RTU)
        return -EINPROGRESS;          /* data before we accepted: it waits in the socket */
    /* The first FPDU (the RTR frame from a netdirect peer, anything from others) is left
     * for the data path: its arrival is the RTU. */
    nd_cm_msg_init(m, ND_CM_RTU);
    return 0;
}

bool iw_accept_waits_rtu(const struct nd_cm_msg *req)
{
    return (req->xport_opts & (IW_OPT_P2P | IW_OPT_ND)) != 0;
}
