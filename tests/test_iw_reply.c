// SPDX-License-Identifier: MIT
/*
 * As initiator, an MPA Reply is taken only if it picks what our Request offered: a scripted
 * raw-TCP responder answers (ND_IWARP_P2P=1) with an RTR type we did not offer (Read), with
 * both types, (our side asking for CRC) without the C bit, and (by default, no P2P asked)
 * granting peer-to-peer mode. Each time our Connect must fail, not connect; a Reply that
 * picks a Write RTR, and one without P2P, connect. By default the Request asks no P2P.
 */
#include "t_iwpeer.h"

enum reply_kind { RTR_READ, RTR_BOTH, NO_CRC, P2P_UNASKED, GOOD_P2P, GOOD_PLAIN, NKINDS };
static const char *const names[] = { "rtr-read", "rtr-both", "no-crc", "p2p-unasked", "p2p-write", "no-p2p" };

static bool asks_p2p(enum reply_kind kind)
{
    return kind == RTR_READ || kind == RTR_BOTH || kind == GOOD_P2P;
}

static void responder(int lfd, enum reply_kind kind, int done_rd)
{
    int fd = accept(lfd, NULL, NULL);
    uint8_t buf[MPA_FRAME_HDR + MPA_MAX_PD_RX];
    struct mpa_frame req, rep = { .reply = true, .rev = 2, .enhanced = true, .ird_word = 8, .ord_word = 8 };
    size_t total, n;
    char c;

    CHECK(fd >= 0);
    t_iw_read_exact(fd, buf, MPA_FRAME_HDR);
    total = mpa_frame_len(buf);
    CHECK(total >= MPA_FRAME_HDR && total <= sizeof(buf));
    t_iw_read_exact(fd, buf + MPA_FRAME_HDR, total - MPA_FRAME_HDR);
    CHECK(mpa_parse(buf, total, false, &req) == (int)total);
    if (req.flags & MPA_FLAG_CRC)
        rep.flags |= MPA_FLAG_CRC;
    if (!!(req.ird_word & MPA_V2_P2P) != asks_p2p(kind)) {
        fprintf(stderr, "%s: the Request %s peer-to-peer mode\n", names[kind], asks_p2p(kind) ? "lacks" : "asks for");
        exit(1);
    }
    if (req.enhanced && ((req.ird_word & MPA_V2_P2P) || kind == P2P_UNASKED) && kind != GOOD_PLAIN) {
        rep.ird_word |= MPA_V2_P2P;
        rep.ord_word |= kind == RTR_READ ? MPA_V2_RTR_READ
                        : kind == RTR_BOTH ? MPA_V2_RTR_READ | MPA_V2_RTR_WRITE : MPA_V2_RTR_WRITE;
    }
    if (kind == NO_CRC)
        rep.flags &= (uint8_t)~MPA_FLAG_CRC;
    n = mpa_encode(buf, sizeof(buf), &rep);
    CHECK(n && write(fd, buf, n) == (ssize_t)n);
    CHECK(read(done_rd, &c, 1) >= 0);      /* hold the connection until the test is done */
    close(fd);
}

static void run(enum reply_kind kind)
{
    struct sockaddr_in sin = t_ipv4(t_my_ip(), 0);
    socklen_t len = sizeof(sin);
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), done[2];
    struct t_side s;
    uint64_t ms;
    nd_status st;

    setenv("ND_IWARP_CRC", kind == NO_CRC ? "1" : "0", 1);
    setenv("ND_IWARP_P2P", asks_p2p(kind) ? "1" : "0", 1);
    CHECK(lfd >= 0 && bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) == 0 && listen(lfd, 4) == 0);
    CHECK(getsockname(lfd, (struct sockaddr *)&sin, &len) == 0 && pipe(done) == 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(done[1]);
        responder(lfd, kind, done[0]);
        _exit(0);
    }
    close(done[0]);
    t_side_open(&s, 4096, 4, 1);
    st = t_connect_timed(&s, &sin, &ms);
    if (kind == GOOD_P2P || kind == GOOD_PLAIN) {
        CHECK_ST(st, ND_SUCCESS);
    } else if (st == ND_SUCCESS) {
        fprintf(stderr, "%s: the Connect took a Reply it must refuse\n", names[kind]);
        exit(1);
    }
    close(done[1]);
    t_expect_child_ok(pid);
    t_side_close(&s);
    close(lfd);
    printf("%-10s Connect: %s\n", names[kind], nd_strerror(st));
}

int main(void)
{
    setenv("ND_TRANSPORT", "iwarp", 1);
    setenv("ND_CM_TIMEOUT_MS", "2000", 1);
    signal(SIGPIPE, SIG_IGN);
    for (int k = 0; k < NKINDS; k++)
        run((enum reply_kind)k);
    return 0;
}
