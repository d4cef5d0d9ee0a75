// SPDX-License-Identifier: MIT
/*
 * Our FPDUs follow TCP's current MSS up to ND_IWARP_FPDU_MAX:
 * never larger than either, and larger ones once the MSS grew (on loopback it starts at
 * 32,768 while the window is small and grows to 65,483). A forked raw-TCP peer reads every
 * FPDU we send, answers our fences, and reports the largest; our side writes 256 KiB
 * messages for a while, then its FPDU size must be what TCP_MAXSEG and the knob say now.
 * Run with the default knob (32 KiB) and with MPA's limit (the MSS alone decides).
 */
#include "t_iwpeer.h"
#include <netdirect/netdirect.h>
#include "core/qp_int.h"
#include "transports/iwarp/iwarp.h"

#define MSG (256u << 10)
#define RUN_MS 60                   /* several IW_MSS_RECHECK_NS of traffic */

struct report {
    uint32_t first, largest, count;
};

/* Our FPDUs until we close: sizes counted, zero-length Reads (fences) answered. */
static void peer(uint16_t port, int report_wr)
{
    static uint8_t buf[1u << 17];
    struct iw_hdr rtr = { .tagged = true, .last = true, .opcode = IW_OP_WRITE, .stag = 1 };
    struct report rep = { 0 };
    uint8_t out[64];
    size_t have = 0;
    int fd = t_iw_dial(port);

    t_iw_handshake(fd, false);
    size_t n = t_iw_fpdu(out, &rtr, NULL, 0, false, false);
    CHECK(write(fd, out, n) == (ssize_t)n);   /* the initiator speaks first */
    for (;;) {
        ssize_t r = read(fd, buf + have, sizeof(buf) - have);
        struct iw_hdr h;

        if (r <= 0)
            break;
        have += (size_t)r;
        while (have >= 2 && iw_hdr_parse(buf, have, &h) > 0 && have >= iw_fpdu_len(h.ulpdu_len)) {
            uint32_t len = iw_fpdu_len(h.ulpdu_len);

            if (!rep.count++)
                rep.first = len;
            if (len > rep.largest)
                rep.largest = len;
            if (!h.tagged && h.opcode == IW_OP_READ_REQ && h.rr.size == 0) {
                struct iw_hdr a = { .tagged = true, .last = true, .opcode = IW_OP_READ_RESP,
                                    .stag = h.rr.sink_stag, .to = h.rr.sink_to };

                n = t_iw_fpdu(out, &a, NULL, 0, false, false);
                CHECK(write(fd, out, n) == (ssize_t)n);
            }
            memmove(buf, buf + len, have - len);
            have -= len;
        }
    }
    CHECK(write(report_wr, &rep, sizeof(rep)) == sizeof(rep));
    close(fd);
}

/* Our connection's FPDU size now, and what TCP_MAXSEG and the knob give for it. */
static void fpdu_sizes(nd_qp *qp, uint32_t *used, uint32_t *path)
{
    nd_lock_acquire(&qp->lock);
    struct iw_conn *c = iw_conn_of(qp->conn);

    CHECK(c != NULL);
    *used = c->fpdu_max;
    *path = iw_path_fpdu_max(c->sock, iw_fpdu_cap());
    nd_lock_release(&qp->lock);
}

static void run(const char *knob)
{
    struct t_side s;
    struct report rep;
    int rp[2];
    uint32_t start, used = 0, path = 1, msgs = 0;

    if (knob)
        setenv("ND_IWARP_FPDU_MAX", knob, 1);
    else
        unsetenv("ND_IWARP_FPDU_MAX");
    t_side_open(&s, MSG, 4, 1);
    uint16_t port = t_listen(&s);
    CHECK(pipe(rp) == 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(rp[0]);
        peer(port, rp[1]);
        _exit(0);
    }
    close(rp[1]);
    t_accept(&s, 8, NULL, 0);
    fpdu_sizes(s.qp, &start, &path);
    nd_sge src = { s.buf, MSG, s.token };
    /* Until the size in force is what TCP says now: the MSS may grow between two looks. */
    for (uint64_t t0 = t_now_ms(); t_now_ms() - t0 < RUN_MS || msgs < 8 || used != path; msgs++) {
        CHECK(t_now_ms() - t0 < 5000);
        CHECK_ST(nd_qp_write(s.qp, NULL, &src, 1, 0x10000, 0x4321, 0), ND_SUCCESS);
        nd_result r = t_poll_one(s.cq, 5000);
        CHECK(r.request_type == ND_REQUEST_TYPE_WRITE && r.status == ND_SUCCESS);
        fpdu_sizes(s.qp, &used, &path);
    }
    t_side_close(&s);
    CHECK(read(rp[0], &rep, sizeof(rep)) == sizeof(rep));
    t_expect_child_ok(pid);
    close(rp[0]);
    /* Nothing larger than the size in force; that size is what TCP says; the peer saw it. */
    CHECK(rep.count > msgs && rep.largest <= used && rep.largest > used - 64);
    CHECK(used <= (knob ? 65544u : 32768u));
    printf("ND_IWARP_FPDU_MAX %-7s %u messages of %u KiB: FPDUs of %u bytes at first, %u later (now allowed: "
           "%u); largest seen %u\n", knob ? knob : "unset:", msgs, MSG >> 10, start, used, path, rep.largest);
}

int main(void)
{
    setenv("ND_TRANSPORT", "iwarp", 1);
    run(NULL);
    run("65544");
    return 0;
}
