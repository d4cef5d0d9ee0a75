// SPDX-License-Identifier: MIT
/*
 * Send with Invalidate (RFC 5040 §6.10) from a scripted raw-TCP peer: naming a memory
 * window we bound, the message is delivered and the window's STag is invalid at once (the
 * peer's next Write to it is Terminated as an invalid STag); naming a memory region, which
 * cannot be invalidated so, the Send is Terminated with RDMAP protection 0x09.
 */
#include "t_iwpeer.h"

struct tokens {
    uint32_t mw, mr;
};

static void peer(uint16_t port, uint64_t addr, bool name_region, int tok_rd)
{
    int fd = t_iw_dial(port);
    uint8_t frame[256];
    struct iw_hdr h = { .last = true, .tagged = true, .opcode = IW_OP_WRITE, .stag = 1 }, t;
    struct tokens tk;
    size_t n;

    t_iw_handshake(fd, false);
    n = t_iw_fpdu(frame, &h, NULL, 0, false, false);        /* RTR: the connection is up */
    CHECK(write(fd, frame, n) == (ssize_t)n);
    CHECK(read(tok_rd, &tk, sizeof(tk)) == sizeof(tk));    /* the window is bound */
    h = (struct iw_hdr){ .last = true, .opcode = IW_OP_SEND_INV, .qn = IW_QN_SEND, .msn = 1,
                         .inval_stag = name_region ? tk.mr : tk.mw };
    n = t_iw_fpdu(frame, &h, NULL, 8, false, false);
    CHECK(write(fd, frame, n) == (ssize_t)n);
    if (!name_region) {
        h = (struct iw_hdr){ .last = true, .tagged = true, .opcode = IW_OP_WRITE, .stag = tk.mw, .to = addr };
        n = t_iw_fpdu(frame, &h, NULL, 8, false, false);
        CHECK(write(fd, frame, n) == (ssize_t)n);
    }
    if (!t_iw_read_terminate(fd, &t)) {
        fprintf(stderr, "%s: no Terminate\n", name_region ? "region" : "window");
        exit(1);
    }
    uint8_t want = name_region ? 0x09 : 0x00;
    if (t.term.layer != IW_LAYER_RDMAP || t.term.etype != IW_RDMAP_ET_PROTECTION || t.term.ecode != want) {
        fprintf(stderr, "%s: Terminate %u/%u/0x%02x, expected RDMAP protection 0x%02x\n",
                name_region ? "region" : "window", t.term.layer, t.term.etype, t.term.ecode, want);
        exit(1);
    }
    close(fd);
}

static void run(bool name_region)
{
    struct t_side s;
    struct tokens tk;
    int tok[2];
    nd_mw *mw;
    pid_t pid;
    uint16_t port;
    nd_result r;

    t_side_open(&s, 1 << 16, 8, 1);
    nd_sge rs = { s.buf + 8192, 64, s.token };
    CHECK_ST(nd_qp_receive(s.qp, (void *)1, &rs, 1), ND_SUCCESS);
    port = t_listen(&s);
    CHECK(pipe(tok) == 0);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(tok[1]);
        peer(port, (uint64_t)(uintptr_t)s.buf, name_region, tok[0]);
        _exit(0);
    }
    close(tok[0]);
    t_accept(&s, 8, NULL, 0);
    CHECK_ST(nd_adapter_create_memory_window(s.a, &mw), ND_SUCCESS);
    CHECK_ST(nd_qp_bind(s.qp, (void *)2, s.mr, mw, s.buf, 4096, ND_OP_FLAG_ALLOW_WRITE), ND_SUCCESS);
    r = t_poll_one(s.cq, 5000);
    CHECK(r.request_context == (void *)2 && r.status == ND_SUCCESS);
    tk = (struct tokens){ nd_mw_get_remote_token(mw), nd_mr_get_remote_token(s.mr) };
    CHECK(write(tok[1], &tk, sizeof(tk)) == sizeof(tk));
    r = t_poll_one(s.cq, 5000);
    CHECK(r.request_context == (void *)1);
    if (name_region)
        CHECK(r.status != ND_SUCCESS);      /* the Send was refused: the receive flushes */
    else
        CHECK_ST(r.status, ND_SUCCESS);     /* delivered, the window gone with it */
    t_expect_child_ok(pid);
    close(tok[1]);
    CHECK_ST(nd_mw_close(mw), ND_SUCCESS);
    t_side_close(&s);
    printf("send-with-invalidate naming a %s: %s\n", name_region ? "region" : "window",
           name_region ? "Terminate 0x09" : "delivered, the window invalid at once");
}

int main(void)
{
    setenv("ND_TRANSPORT", "iwarp", 1);
    signal(SIGPIPE, SIG_IGN);
    run(false);
    run(true);
    return 0;
}
