// SPDX-License-Identifier: MIT
/*
 * Hostile iwarp peers. A forked raw-TCP peer speaks just enough MPA (a request as siw sends
 * it) to be accepted, then misbehaves: garbage, a ULPDU shorter than its header, an unknown
 * opcode, a Write to a token that does not exist, a bad CRC (CRC negotiated), a frame cut
 * off by a close, or it stops reading. Each time our queue pair must flush its posted
 * receive (or time its requests out) within a bound, and where the fault is the peer's
 * bytes the peer must get a Terminate before the close. Nothing may crash or hang.
 */
#include "t_conn.h"
#include "transports/iwarp/wire.h"

#include <netinet/tcp.h>

enum scenario { GARBAGE, SHORT_ULPDU, BAD_OPCODE, BAD_STAG, BAD_CRC, TRUNCATED, STOPS_READING, NCASES };
static const char *const names[] = { "garbage", "short-ulpdu", "unknown-opcode", "bad-stag", "bad-crc", "truncated",
                                     "stops-reading" };

static int dial(uint16_t port)
{
    struct sockaddr_in sin = t_ipv4(t_my_ip(), port);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

    CHECK(fd >= 0 && connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

static void read_exact(int fd, uint8_t *p, size_t n)
{
    while (n) {
        ssize_t r = read(fd, p, n);

        CHECK(r > 0);
        p += r;
        n -= (size_t)r;
    }
}

/* MPA request (rev 2, the RFC 6581 block, no P2P), then the reply. */
static void handshake(int fd, bool crc)
{
    struct mpa_frame f = { .reply = false, .flags = crc ? MPA_FLAG_CRC : 0, .rev = 2, .enhanced = true,
                           .ird_word = 8, .ord_word = 8 };
    uint8_t buf[MPA_FRAME_HDR + MPA_MAX_PD_RX];
    size_t n = mpa_encode(buf, sizeof(buf), &f), total;

    CHECK(n && write(fd, buf, n) == (ssize_t)n);
    read_exact(fd, buf, MPA_FRAME_HDR);
    total = mpa_frame_len(buf);
    CHECK(total >= MPA_FRAME_HDR && total <= sizeof(buf));
    read_exact(fd, buf + MPA_FRAME_HDR, total - MPA_FRAME_HDR);
    CHECK(mpa_parse(buf, total, true, &f) == (int)total && !(f.flags & MPA_FLAG_REJECT));
    CHECK(!!(f.flags & MPA_FLAG_CRC) == crc);
}

/* One FPDU: header @h, @plen payload bytes of 0x5a, pad, then the CRC (or @bad_crc). */
static size_t fpdu(uint8_t *out, struct iw_hdr *h, uint32_t plen, bool crc, bool bad_crc)
{
    size_t n;

    h->ddp_version = IW_DDP_VERSION;
    h->rdmap_version = IW_RDMAP_VERSION;
    h->ulpdu_len = (uint16_t)(iw_hdr_len_for(h->tagged ? IW_DDP_T : 0, h->opcode) + plen);
    n = iw_hdr_encode(out, h);
    memset(out + n, 0x5a, plen);
    n += plen;
    memset(out + n, 0, iw_pad(h->ulpdu_len));
    n += iw_pad(h->ulpdu_len);
    iw_put_le32(out + n, bad_crc ? 0x12345678u : crc ? iw_crc32c(out, n) : 0);
    return n + 4;
}

/* Read what we send until the close; true if a Terminate came first. */
static bool saw_terminate(int fd)
{
    uint8_t buf[4096];
    size_t have = 0;
    struct pollfd pfd = { .fd = fd, .events = POLLIN };

    while (poll(&pfd, 1, 5000) == 1) {
        ssize_t r = read(fd, buf + have, sizeof(buf) - have);
        struct iw_hdr h;

        if (r <= 0)
            return false;
        have += (size_t)r;
        if (iw_hdr_parse(buf, have, &h) > 0)
            return !h.tagged && h.opcode == IW_OP_TERMINATE;
    }
    return false;
}

static void hostile_peer(uint16_t port, enum scenario scen, int go_rd)
{
    int fd = dial(port);
    uint8_t frame[256];
    struct iw_hdr h = { .last = true };
    size_t n = 0;
    char c;

    handshake(fd, scen == BAD_CRC);
    switch (scen) {
    case GARBAGE:
        memset(frame, 0xff, n = 64);
        break;
    case SHORT_ULPDU:
        memcpy(frame, "\x00\x04\x41\x43\x00\x00\x00\x00", n = 8);
        break;
    case BAD_OPCODE:
        h.opcode = 9;
        n = fpdu(frame, &h, 0, false, false);
        break;
    case BAD_STAG:
        h.tagged = true;
        h.opcode = IW_OP_WRITE;
        h.stag = 0xdeadbe01;
        h.to = 0x1000;
        n = fpdu(frame, &h, 8, false, false);
        break;
    case BAD_CRC:
        h.opcode = IW_OP_SEND;
        h.msn = 1;
        n = fpdu(frame, &h, 8, true, true);
        break;
    case TRUNCATED:
        h.opcode = IW_OP_SEND;
        h.msn = 1;
        fpdu(frame, &h, 64, false, false);
        n = 10;
        break;
    case STOPS_READING:
        h.tagged = true;            /* a zero-length Write (an RTR): the connection is up */
        h.opcode = IW_OP_WRITE;
        h.stag = 1;
        n = fpdu(frame, &h, 0, false, false);
        break;
    default:
        exit(1);
    }
    CHECK(write(fd, frame, n) == (ssize_t)n);
    if (scen == TRUNCATED) {
        shutdown(fd, SHUT_WR);
    } else if (scen == STOPS_READING) {
        CHECK(read(go_rd, &c, 1) == 1);     /* never read the socket; wait to be told */
    } else if (!saw_terminate(fd)) {
        fprintf(stderr, "%s: no Terminate before the close\n", names[scen]);
        exit(1);
    }
    close(fd);
}

static void run_case(enum scenario scen)
{
    struct t_side s;
    nd_overlapped ov = { 0 };
    int go[2];
    pid_t pid;
    uint16_t port;

    t_side_open(&s, 1 << 16, 8, 1);
    nd_sge rs = { s.buf, 4096, s.token };
    CHECK_ST(nd_qp_receive(s.qp, (void *)1, &rs, 1), ND_SUCCESS);
    port = t_listen(&s);
    CHECK(pipe(go) == 0);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(go[1]);
        hostile_peer(port, scen, go[0]);
        _exit(0);
    }
    close(go[0]);
    CHECK_ST(t_wait(nd_listener_get_connection_request(s.l, s.c, &ov), &ov), ND_SUCCESS);
    CHECK_ST(t_wait(nd_connector_accept(s.c, s.qp, 8, 8, NULL, 0, &ov), &ov), ND_SUCCESS);
    uint64_t t0 = t_now_ms();
    uint32_t want = 1;
    if (scen == STOPS_READING) {
        /* Writes the peer never acknowledges at placement (it answers no fence): after
         * ND_IWARP_TIMEOUT_MS the oldest completes ND_IO_TIMEOUT, the rest flush. */
        nd_sge src = { s.buf + 8192, 32768, s.token };
        for (uintptr_t i = 0; i < 4; i++)
            CHECK_ST(nd_qp_write(s.qp, (void *)(10 + i), &src, 1, 0x1000, 0x1234, 0), ND_SUCCESS);
        want += 4;
    }
    /* The send and receive queues' completions come in no set order between them. */
    for (uint32_t got = 0; got < want; got++) {
        nd_result r = t_poll_one(s.cq, 5000);
        uintptr_t ctx = (uintptr_t)r.request_context;

        if (ctx == 1)
            CHECK(r.request_type == ND_REQUEST_TYPE_RECEIVE && r.status == ND_CANCELED);
        else
            CHECK(r.request_type == ND_REQUEST_TYPE_WRITE && r.status == (ctx == 10 ? ND_IO_TIMEOUT : ND_CANCELED));
    }
    uint64_t ms = t_now_ms() - t0;
    if (scen == STOPS_READING)
        CHECK(write(go[1], "x", 1) == 1);
    close(go[1]);
    t_expect_child_ok(pid);
    t_side_close(&s);
    printf("%-16s flushed after %4llu ms\n", names[scen], (unsigned long long)ms);
}

int main(void)
{
    /* Forced: the hostile peer speaks iWARP, and the timeout is short for the test. */
    setenv("ND_TRANSPORT", "iwarp", 1);
    setenv("ND_IWARP_TIMEOUT_MS", "1000", 1);
    signal(SIGPIPE, SIG_IGN);
    for (int scen = 0; scen < NCASES; scen++)
        run_case((enum scenario)scen);
    return 0;
}
