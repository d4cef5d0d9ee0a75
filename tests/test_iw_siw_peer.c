// SPDX-License-Identifier: MIT
/*
 * A scripted raw-TCP peer that behaves as Linux siw does, in the ways that broke real
 * connections to it:
 *   server-first    siw initiator (ucmatose client): sends nothing after our Reply and
 *                   waits for our first Send; bytes already queued behind the Reply when it
 *                   reads it fail the connection. Our Accept must complete, our Send arrive.
 *   p2p-rtr         siw responder: grants peer-to-peer mode when asked, but drops an RTR
 *                   that comes before its RTR handler is in place, and never starts. Our
 *                   Request must not ask for it.
 *   stale-read      siw responder, busy: answers a zero-length Read with the previous
 *                   transmit's bytes. It also sends its first FPDU right behind its Reply.
 *   ird-zero        responder advertising IRD 0: a Read Request of any length is an error.
 *   close-after-all siw responder (ucmatose server): answers zero-length Reads, but closes
 *                   as soon as it has received every Send, reading nothing after the last.
 *   late-handler    siw responder (rping server): sends nothing first, and installs its
 *                   receive handler only after its Reply is out; bytes that arrive in
 *                   between are never read. Here: anything within 10 ms of the Reply.
 * Each time our 16 Sends must complete ND_SUCCESS (delivered Sends never become errors),
 * and the peer must see no zero-length Read and no P2P request. Immediate data, which siw
 * does not know, is refused at the post (ND_NOT_SUPPORTED) and never reaches it.
 */
#include "t_iwpeer.h"
#include <netdirect/netdirect.h>
#include "core/qp_int.h"

#include <errno.h>

enum scenario { SERVER_FIRST, P2P_RTR, STALE_READ, IRD_ZERO, CLOSE_AFTER_ALL, LATE_HANDLER, NCASES };
static const char *const names[] = { "server-first", "p2p-rtr", "stale-read", "ird-zero", "close-after-all",
                                     "late-handler" };
#define HANDLER_LATE_MS 10

#define NSENDS 16
#define MSG 64

struct fpdu_reader {
    int fd;
    uint8_t buf[1 << 16];
    size_t have;
};

/* The next whole FPDU into @h (its bytes at r->buf until the next call); false on a close,
 * or on nothing for 5 s. */
static bool next_fpdu(struct fpdu_reader *r, struct iw_hdr *h, size_t *consumed)
{
    if (*consumed) {
        memmove(r->buf, r->buf + *consumed, r->have - *consumed);
        r->have -= *consumed;
        *consumed = 0;
    }
    for (;;) {
        if (r->have >= 2) {
            size_t len = iw_fpdu_len((uint16_t)(r->buf[0] << 8 | r->buf[1]));

            if (r->have >= len) {
                CHECK(iw_hdr_parse(r->buf, r->have, h) > 0);
                *consumed = len;
                return true;
            }
        }
        struct pollfd pfd = { .fd = r->fd, .events = POLLIN };
        if (poll(&pfd, 1, 5000) != 1)
            return false;
        ssize_t n = read(r->fd, r->buf + r->have, sizeof(r->buf) - r->have);
        if (n <= 0)
            return false;
        r->have += (size_t)n;
    }
}

static size_t send_fpdu(uint8_t *out, uint32_t msn)
{
    struct iw_hdr h = { .last = true, .opcode = IW_OP_SEND, .qn = IW_QN_SEND, .msn = msn };

    return t_iw_fpdu(out, &h, NULL, MSG, false, false);
}

/* siw as initiator: our Request as siw sends it, then nothing until our first Send. */
static void siw_initiator(uint16_t port)
{
    int fd = t_iw_dial(port);
    struct fpdu_reader r = { .fd = fd };
    struct iw_hdr h;
    size_t used = 0, n;
    uint8_t out[256], extra;

    t_iw_handshake(fd, false);
    /* siw reads the Reply and then finds the socket empty, or fails the connection. */
    if (recv(fd, &extra, 1, MSG_PEEK | MSG_DONTWAIT) > 0) {
        fprintf(stderr, "server-first: bytes queued right behind the Reply\n");
        exit(1);
    }
    if (!next_fpdu(&r, &h, &used) || h.tagged || h.opcode != IW_OP_SEND) {
        fprintf(stderr, "server-first: no Send from the server within 5 s\n");
        exit(1);
    }
    n = send_fpdu(out, 1);
    CHECK(write(fd, out, n) == (ssize_t)n);
    while (next_fpdu(&r, &h, &used))
        ;                           /* until our side closes */
    close(fd);
}

/* The Reply siw gives @req: P2P granted (Write RTR) when asked; our IRD/ORD. */
static size_t siw_reply(const struct mpa_frame *req, uint16_t ird, uint8_t *out, size_t cap)
{
    struct mpa_frame rep = { .reply = true, .rev = 2, .enhanced = true, .ird_word = ird, .ord_word = ird };

    /* siw builds its Reply from the Request's header: reserved bits come back as sent. */
    rep.flags = req->flags & (uint8_t)~(MPA_FLAG_MARKERS | MPA_FLAG_REJECT | MPA_FLAG_ENHANCED);
    if (req->enhanced && (req->ird_word & MPA_V2_P2P)) {
        rep.ird_word |= MPA_V2_P2P;
        rep.ord_word |= MPA_V2_RTR_WRITE;
    }
    return mpa_encode(out, cap, &rep);
}

static void siw_responder(int lfd, enum scenario scen)
{
    int fd = accept(lfd, NULL, NULL);
    struct fpdu_reader r = { .fd = fd };
    uint8_t out[1024];
    struct mpa_frame req;
    struct iw_hdr h;
    size_t used = 0, total, n;
    uint32_t sends = 0;

    CHECK(fd >= 0);
    t_iw_read_exact(fd, r.buf, MPA_FRAME_HDR);
    total = mpa_frame_len(r.buf);
    CHECK(total >= MPA_FRAME_HDR && total <= sizeof(r.buf));
    t_iw_read_exact(fd, r.buf + MPA_FRAME_HDR, total - MPA_FRAME_HDR);
    CHECK(mpa_parse(r.buf, total, false, &req) == (int)total);
    n = siw_reply(&req, scen == IRD_ZERO ? 0 : 1, out, sizeof(out));
    if (req.enhanced && (req.ird_word & MPA_V2_P2P)) {
        fprintf(stderr, "%s: the Request asks for peer-to-peer mode\n", names[scen]);
        CHECK(write(fd, out, n) == (ssize_t)n);
        CHECK(next_fpdu(&r, &h, &used));
        if (scen == P2P_RTR)
            exit(1);                /* the RTR came before siw's handler was in place: it never starts */
        n = 0;                      /* the RTR came late enough: siw starts */
    }
    if (scen != LATE_HANDLER)
        n += send_fpdu(out + n, 1); /* a siw responder sends right behind its Reply */
    CHECK(write(fd, out, n) == (ssize_t)n);
    if (scen == LATE_HANDLER) {
        struct pollfd pfd = { .fd = fd, .events = POLLIN };

        if (poll(&pfd, 1, HANDLER_LATE_MS) != 0) {
            fprintf(stderr, "late-handler: bytes within %d ms of the Reply: siw never reads them\n",
                    HANDLER_LATE_MS);
            exit(1);
        }
    }
    while (sends < NSENDS) {
        if (!next_fpdu(&r, &h, &used)) {
            if (scen == STALE_READ || scen == IRD_ZERO)
                exit(1);            /* our side Terminated the connection: the reason is above */
            fprintf(stderr, "%s: %u of %u Sends, then nothing for 5 s\n", names[scen], sends, NSENDS);
            exit(1);
        }
        if (!h.tagged && h.opcode == IW_OP_READ_REQ) {
            if (scen == IRD_ZERO || h.rr.size == 0) {
                fprintf(stderr, "%s: a Read Request of %u bytes (IRD %u)\n", names[scen], h.rr.size,
                        scen == IRD_ZERO ? 0 : 1);
                if (scen != CLOSE_AFTER_ALL)
                    exit(1);
            }
            struct iw_hdr a = { .tagged = true, .last = true, .opcode = IW_OP_READ_RESP, .stag = h.rr.sink_stag,
                                .to = h.rr.sink_to };
            /* Busy siw answers a queued zero-length Read with the last transmit's bytes. */
            n = t_iw_fpdu(out, &a, NULL, scen == STALE_READ ? MSG : h.rr.size, false, false);
            CHECK(write(fd, out, n) == (ssize_t)n);
        } else if (!h.tagged && h.opcode == IW_OP_SEND) {
            sends++;
        }
    }
    if (scen == LATE_HANDLER) {
        n = send_fpdu(out, 1);
        CHECK(write(fd, out, n) == (ssize_t)n);
    }
    if (scen != CLOSE_AFTER_ALL) {
        /* Read on until our side closes: anything after the Sends would be an error. */
        while (next_fpdu(&r, &h, &used))
            if (!h.tagged && h.opcode == IW_OP_READ_REQ) {
                fprintf(stderr, "%s: a Read Request after the Sends\n", names[scen]);
                exit(1);
            }
    }
    close(fd);
}

/* Our side: 16 Sends posted back to back, each must complete ND_SUCCESS; the peer's Send
 * must arrive in our receive. */
static void exchange(struct t_side *s, enum scenario scen)
{
    nd_sge rs = { s->buf, 4096, s->token }, ss = { s->buf + 8192, MSG, s->token };
    uint32_t sent = 0, recvd = 0;
    uint32_t nsends = scen == SERVER_FIRST ? 1 : NSENDS;

    /* siw knows no immediate data (it would answer with a Terminate): refused at the post. */
    CHECK(nd_qp_send_imm(s->qp, NULL, &ss, 1, 0, 7) == -EOPNOTSUPP);
    CHECK(nd_qp_write_imm(s->qp, NULL, &ss, 1, (uintptr_t)s->buf, s->token, 0, 7) == -EOPNOTSUPP);
    for (uint32_t i = 0; i < nsends; i++)
        CHECK_ST(nd_qp_send(s->qp, (void *)(uintptr_t)(100 + i), &ss, 1, 0), ND_SUCCESS);
    while (sent < nsends || recvd < 1) {
        nd_result r = t_poll_one(s->cq, 5000);

        if (r.request_type == ND_REQUEST_TYPE_RECEIVE) {
            CHECK_ST(r.status, ND_SUCCESS);
            CHECK(r.bytes_transferred == MSG);
            recvd++;
        } else {
            if (r.status != ND_SUCCESS) {
                fprintf(stderr, "%s: Send %u completed %s\n", names[scen], sent, nd_strerror(r.status));
                exit(1);
            }
            CHECK(r.request_context == (void *)(uintptr_t)(100 + sent));
            sent++;
        }
    }
    (void)rs;
}

static void run_server_first(void)
{
    struct t_side s;
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };

    t_side_open(&s, 1 << 16, 32, 1);
    nd_sge rs = { s.buf, 4096, s.token };
    CHECK_ST(nd_qp_receive(s.qp, NULL, &rs, 1), ND_SUCCESS);
    uint16_t port = t_listen(&s);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        siw_initiator(port);
        _exit(0);
    }
    CHECK_ST(t_wait(nd_listener_get_connection_request(s.l, s.c, &ov), &ov), ND_SUCCESS);
    nd_status st = t_wait(nd_connector_accept(s.c, s.qp, 1, 1, NULL, 0, &ov), &ov);
    if (st != ND_SUCCESS) {
        fprintf(stderr, "server-first: Accept completed %s\n", nd_strerror(st));
        exit(1);
    }
    exchange(&s, SERVER_FIRST);
    CHECK_ST(t_wait(nd_connector_disconnect(s.c, &ov), &ov), ND_SUCCESS);
    t_expect_child_ok(pid);
    t_side_close(&s);
}

static void run_responder(enum scenario scen)
{
    struct sockaddr_in sin = t_ipv4(t_my_ip(), 0);
    socklen_t len = sizeof(sin);
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    struct t_side s;
    uint64_t ms;

    CHECK(lfd >= 0 && bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) == 0 && listen(lfd, 4) == 0);
    CHECK(getsockname(lfd, (struct sockaddr *)&sin, &len) == 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        siw_responder(lfd, scen);
        _exit(0);
    }
    close(lfd);
    t_side_open(&s, 1 << 16, 32, 1);
    nd_sge rs = { s.buf, 4096, s.token };
    CHECK_ST(nd_qp_receive(s.qp, NULL, &rs, 1), ND_SUCCESS);
    CHECK_ST(t_connect_timed(&s, &sin, &ms), ND_SUCCESS);
    CHECK_ST(t_wait(nd_connector_complete_connect(s.c, &ov), &ov), ND_SUCCESS);
    exchange(&s, scen);
    if (scen == IRD_ZERO) {
        nd_sge dst = { s.buf + 16384, 8, s.token };
        CHECK_ST(nd_qp_read(s.qp, NULL, &dst, 1, 0x1000, 0x1234, 0), ND_SUCCESS);
        nd_result r = t_poll_one(s.cq, 5000);
        CHECK_ST(r.status, ND_INVALID_DEVICE_REQUEST);   /* no outbound Read was negotiated */
    }
    if (scen != CLOSE_AFTER_ALL)
        t_wait(nd_connector_disconnect(s.c, &ov), &ov);
    t_expect_child_ok(pid);
    t_side_close(&s);
}

int main(int argc, char **argv)
{
    setenv("ND_TRANSPORT", "iwarp", 1);
    setenv("ND_CM_TIMEOUT_MS", "2000", 1);
    signal(SIGPIPE, SIG_IGN);
    for (int k = 0; k < NCASES; k++) {
        if (argc > 1 && strcmp(argv[1], names[k]))
            continue;
        if (k == SERVER_FIRST)
            run_server_first();
        else
            run_responder((enum scenario)k);
        printf("%-16s ok\n", names[k]);
    }
    return 0;
}
