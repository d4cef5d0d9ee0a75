// SPDX-License-Identifier: MIT
/*
 * Hostile iwarp peers. A forked raw-TCP peer speaks just enough MPA (a request as a netdirect
 * peer sends it) to be accepted, then misbehaves: garbage, a ULPDU shorter than its header, an unknown
 * opcode, a Write to a token that does not exist, a bad CRC (CRC negotiated), a frame cut
 * off by a close, or it stops reading. Each time our queue pair must flush its posted
 * receive (or time its requests out) within a bound, and where the fault is the peer's
 * bytes the peer must get a Terminate before the close. Nothing may crash or hang.
 */
#include "t_iwpeer.h"
#include <netdirect/netdirect.h>
#include "core/qp_int.h"
#include "transports/iwarp/iwarp.h"

#include <errno.h>

enum scenario { GARBAGE, SHORT_ULPDU, BAD_OPCODE, BAD_STAG, BAD_CRC, TRUNCATED, STOPS_READING, RESET, HALF_LEN0,
                HALF_LEN1, HALF_LEN65535, TERM_BEHIND_FULL, NCASES };
static const char *const names[] = { "garbage", "short-ulpdu", "unknown-opcode", "bad-stag", "bad-crc", "truncated",
                                     "stops-reading", "tcp-reset", "half-fpdu-len0", "half-fpdu-len1",
                                     "half-fpdu-len65535", "term-behind-full" };
/* Scenarios whose peer then says nothing and keeps the connection: no Terminate is owed,
 * our side must end it by ND_IWARP_TIMEOUT_MS. */
static bool goes_silent(enum scenario scen)
{
    return scen == STOPS_READING || scen == HALF_LEN0 || scen == HALF_LEN1 || scen == HALF_LEN65535;
}

#define CM_TIMEOUT_MS 1000          /* ND_CM_TIMEOUT_MS for this test */

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

/*
 * Our side's socket is full of Writes when this peer's bad frame comes: the Terminate
 * cannot go at once. The peer reads nothing until told our side ended the connection, then
 * reads to the end: a reset, or a stream of whole FPDUs whose last is the Terminate. An
 * orderly close without one is the failure.
 */
static void term_behind_full(int fd, const uint8_t *frame, size_t n, int go_rd)
{
    static uint8_t stream[1 << 20];
    size_t have = 0, at = 0;
    bool term = false;
    char c;

    uint8_t rtr[64];
    struct iw_hdr w = { .last = true, .tagged = true, .opcode = IW_OP_WRITE, .stag = 1 };
    size_t rn = t_iw_fpdu(rtr, &w, NULL, 0, false, false);

    CHECK(write(fd, rtr, rn) == (ssize_t)rn);   /* the connection is up */
    CHECK(read(go_rd, &c, 1) == 1);         /* our Writes are queued */
    CHECK(write(fd, frame, n) == (ssize_t)n);
    CHECK(read(go_rd, &c, 1) == 1);         /* our side has given up on the connection */
    for (;;) {
        ssize_t r = read(fd, stream + have, sizeof(stream) - have);

        if (r < 0 && errno == ECONNRESET)
            return;                         /* reset: the peer knows it was no clean close */
        CHECK(r >= 0 && have + (size_t)r < sizeof(stream));
        if (r == 0)
            break;
        have += (size_t)r;
    }
    while (have - at >= 2) {
        struct iw_hdr h;
        size_t len = 2 + ((size_t)stream[at] << 8 | stream[at + 1]);

        len += iw_pad((uint16_t)(len - 2)) + 4;
        if (have - at < len)
            break;
        term = iw_hdr_parse(stream + at, len, &h) > 0 && !h.tagged && h.opcode == IW_OP_TERMINATE;
        at += len;
    }
    if (!term) {
        fprintf(stderr, "term-behind-full: an orderly close with no Terminate (%zu bytes, %zu framed)\n", have, at);
        exit(1);
    }
}

static void hostile_peer(uint16_t port, enum scenario scen, int go_rd)
{
    int fd = t_iw_dial(port);
    uint8_t frame[256];
    struct iw_hdr h = { .last = true };
    size_t n = 0;
    char c;

    /* Netdirect's extensions, so that our side's Writes wait for fences this peer may
     * leave unanswered; the first frame it sends is the RTU our Accept waits for. */
    t_iw_handshake_as(fd, scen == BAD_CRC, true);
    switch (scen) {
    case GARBAGE:
        memset(frame, 0xff, n = 64);
        break;
    case SHORT_ULPDU:
        memcpy(frame, "\x00\x04\x41\x43\x00\x00\x00\x00", n = 8);
        break;
    case BAD_OPCODE:
        h.opcode = 9;
        n = t_iw_fpdu(frame, &h, NULL, 0, false, false);
        break;
    case BAD_STAG:
        h.tagged = true;
        h.opcode = IW_OP_WRITE;
        h.stag = 0xdeadbe01;
        h.to = 0x1000;
        n = t_iw_fpdu(frame, &h, NULL, 8, false, false);
        break;
    case BAD_CRC:
        h.opcode = IW_OP_SEND;
        h.msn = 1;
        n = t_iw_fpdu(frame, &h, NULL, 8, true, true);
        break;
    case TRUNCATED:
        h.opcode = IW_OP_SEND;
        h.msn = 1;
        t_iw_fpdu(frame, &h, NULL, 64, false, false);
        n = 10;
        break;
    case STOPS_READING:
    case RESET:
        h.tagged = true;            /* a zero-length Write (an RTR): the connection is up */
        h.opcode = IW_OP_WRITE;
        h.stag = 1;
        n = t_iw_fpdu(frame, &h, NULL, 0, false, false);
        break;
    case HALF_LEN0:
    case HALF_LEN1:
        frame[0] = 0;
        frame[1] = scen == HALF_LEN1;
        n = 2;
        break;
    case HALF_LEN65535:
        memset(frame, 0xff, 2);
        memset(frame + 2, 0, 10);
        n = 12;
        break;
    case TERM_BEHIND_FULL:
        h.opcode = 9;               /* sent once our side has filled the socket */
        n = t_iw_fpdu(frame, &h, NULL, 0, false, false);
        break;
    default:
        exit(1);
    }
    if (scen == STOPS_READING || scen == TERM_BEHIND_FULL) {
        int small = 4096;           /* a window that closes after a few KiB */

        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    }
    if (scen == TERM_BEHIND_FULL) {
        term_behind_full(fd, frame, n, go_rd);
        return;
    }
    CHECK(write(fd, frame, n) == (ssize_t)n);
    if (scen == RESET) {
        struct linger lg = { .l_onoff = 1, .l_linger = 0 };

        CHECK(read(go_rd, &c, 1) == 1);     /* the connection is up: now reset it */
        CHECK(setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) == 0);
    } else if (scen == TRUNCATED) {
        shutdown(fd, SHUT_WR);
    } else if (goes_silent(scen)) {
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
    t_accept(&s, 8, NULL, 0);
    if (scen == RESET)
        CHECK(write(go[1], "r", 1) == 1);
    uint64_t t0 = t_now_ms();
    uint32_t want = 1;
    if (scen == TERM_BEHIND_FULL) {
        /* Our own send buffer small too: the Writes below cannot all leave. */
        int small = 4096, sock = iw_conn_of(s.qp->conn)->sock;

        CHECK(setsockopt(sock, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)) == 0);
    }
    if (scen == STOPS_READING || scen == TERM_BEHIND_FULL) {
        /* Writes the peer never acknowledges at placement (it answers no fence): after
         * ND_IWARP_TIMEOUT_MS the oldest completes ND_IO_TIMEOUT, the rest flush. */
        nd_sge src = { s.buf + 8192, 32768, s.token };
        for (uintptr_t i = 0; i < 4; i++)
            CHECK_ST(nd_qp_write(s.qp, (void *)(10 + i), &src, 1, 0x1000, 0x1234, 0), ND_SUCCESS);
        want += 4;
    }
    if (scen == TERM_BEHIND_FULL)
        CHECK(write(go[1], "w", 1) == 1);
    /* The send and receive queues' completions come in no set order between them. */
    for (uint32_t got = 0; got < want; got++) {
        nd_result r = t_poll_one(s.cq, 5000);
        uintptr_t ctx = (uintptr_t)r.request_context;

        if (ctx == 1)
            CHECK(r.request_type == ND_REQUEST_TYPE_RECEIVE && r.status == ND_CANCELED);
        else
            CHECK(r.request_type == ND_REQUEST_TYPE_WRITE &&
                  r.status == (ctx == 10 && scen == STOPS_READING ? ND_IO_TIMEOUT : ND_CANCELED));
    }
    uint64_t ms = t_now_ms() - t0;
    if (goes_silent(scen) || scen == TERM_BEHIND_FULL)
        CHECK(write(go[1], "x", 1) == 1);
    close(go[1]);
    t_expect_child_ok(pid);
    t_side_close(&s);
    printf("%-16s flushed after %4llu ms\n", names[scen], (unsigned long long)ms);
}

/* Block until the peer closes @fd (EOF or reset); the milliseconds it took. */
static uint64_t ms_until_closed(int fd, uint64_t t0)
{
    uint8_t buf[256];

    while (read(fd, buf, sizeof(buf)) > 0)
        ;
    return t_now_ms() - t0;
}

/*
 * Two connections that never complete their MPA request (one says nothing, one sends half
 * a header) must neither stall the listener nor stay forever: a good client connecting
 * after them is accepted at once, and both are closed after ND_CM_TIMEOUT_MS.
 */
static void silent_dialers(void)
{
    static const uint8_t half_request[10] = "MPA ID Req";
    struct t_side s, g;
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    int ready[2], report[2], go[2];
    uint64_t ms[2];
    char c;

    t_side_open(&s, 4096, 4, 1);
    uint16_t port = t_listen(&s);
    CHECK(pipe(ready) == 0 && pipe(report) == 0 && pipe(go) == 0);
    pid_t silent = fork();
    CHECK(silent >= 0);
    if (silent == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int quiet = t_iw_dial(port), half = t_iw_dial(port);
        uint64_t t0 = t_now_ms();

        CHECK(write(half, half_request, sizeof(half_request)) == (ssize_t)sizeof(half_request));
        CHECK(write(ready[1], "c", 1) == 1);
        ms[0] = ms_until_closed(quiet, t0);
        ms[1] = ms_until_closed(half, t0);
        CHECK(write(report[1], ms, sizeof(ms)) == (ssize_t)sizeof(ms));
        _exit(0);
    }
    CHECK(read(ready[0], &c, 1) == 1);
    CHECK_ST(nd_listener_get_connection_request(s.l, s.c, &ov), ND_PENDING);
    pid_t good = fork();
    CHECK(good >= 0);
    if (good == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        t_side_open(&g, 4096, 4, 1);
        t_connect(&g, port, NULL, NULL);
        CHECK(read(go[0], &c, 1) == 1);
        t_side_close(&g);
        _exit(0);
    }
    CHECK_ST(t_wait(ND_PENDING, &ov), ND_SUCCESS);
    CHECK_ST(t_wait(nd_connector_accept(s.c, s.qp, 0, 0, NULL, 0, &ov), &ov), ND_SUCCESS);
    /* The silent two are still connected: the good one did not wait for their deadline. */
    CHECK(poll(&(struct pollfd){ .fd = report[0], .events = POLLIN }, 1, 0) == 0);
    CHECK(write(go[1], "g", 1) == 1);
    t_expect_child_ok(good);
    /* The port's ticks end them, whoever waits on it. */
    for (uint64_t end = t_now_ms() + 10 * CM_TIMEOUT_MS;
         poll(&(struct pollfd){ .fd = report[0], .events = POLLIN }, 1, 0) == 0;) {
        nd_overlapped *done;

        CHECK(t_now_ms() < end);
        CHECK(nd_port_wait(s.port, 50, &done) == ND_TIMEOUT);
    }
    CHECK(read(report[0], ms, sizeof(ms)) == (ssize_t)sizeof(ms));
    t_expect_child_ok(silent);
    CHECK(ms[0] >= CM_TIMEOUT_MS - 50 && ms[1] >= CM_TIMEOUT_MS - 50);
    t_side_close(&s);
    printf("%-16s a good client got through; the silent and the half request closed after %llu / %llu ms\n",
           "mpa-never-sent", (unsigned long long)ms[0], (unsigned long long)ms[1]);
    close(ready[0]), close(ready[1]), close(report[0]), close(report[1]), close(go[0]), close(go[1]);
}

/* A listener that takes the TCP connection and our MPA request but never replies: the
 * Connect completes ND_IO_TIMEOUT after ND_CM_TIMEOUT_MS. */
static void mute_responder(void)
{
    struct sockaddr_in sin = t_ipv4(t_my_ip(), 0);
    socklen_t len = sizeof(sin);
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), go[2];
    struct t_side s;
    char c;

    CHECK(lfd >= 0 && bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) == 0 && listen(lfd, 4) == 0);
    CHECK(getsockname(lfd, (struct sockaddr *)&sin, &len) == 0 && pipe(go) == 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int fd = accept(lfd, NULL, NULL);
        uint8_t req[MPA_FRAME_HDR];

        t_iw_read_exact(fd, req, sizeof(req));       /* the request's header: then silence */
        CHECK(read(go[0], &c, 1) == 1);
        _exit(0);
    }
    t_side_open(&s, 4096, 4, 1);
    uint64_t ms;
    CHECK_ST(t_connect_timed(&s, &sin, &ms), ND_IO_TIMEOUT);
    CHECK(ms >= CM_TIMEOUT_MS - 50);
    CHECK(write(go[1], "g", 1) == 1);
    t_expect_child_ok(pid);
    t_side_close(&s);
    close(lfd), close(go[0]), close(go[1]);
    printf("%-16s Connect completed ND_IO_TIMEOUT after %llu ms\n", "mpa-no-reply", (unsigned long long)ms);
}

int main(void)
{
    /* Forced: the hostile peer speaks iWARP, and the timeout is short for the test. */
    setenv("ND_TRANSPORT", "iwarp", 1);
    setenv("ND_IWARP_TIMEOUT_MS", "1000", 1);
    setenv("ND_CM_TIMEOUT_MS", "1000", 1);
    signal(SIGPIPE, SIG_IGN);
    for (int scen = 0; scen < NCASES; scen++)
        run_case((enum scenario)scen);
    silent_dialers();
    mute_responder();
    return 0;
}
