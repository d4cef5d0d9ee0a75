// SPDX-License-Identifier: MIT
/*
 * The Terminate a remote access error gets says which error it was (RFC 5040 §7.4, RDMAP
 * remote protection): an STag we never issued is 0x00 (invalid STag); a range one byte past
 * the end or before the start, a tagged offset that wraps, a Read of 2^32-1 bytes are 0x01
 * (base or bounds); a region without the right (a Write to read-only memory, a Read of
 * write-only memory) is 0x02 (access rights). A scripted raw-TCP peer sends each access on
 * a connection of its own and checks the Terminate's three fields.
 */
#include "t_iwpeer.h"

struct probe {
    const char *name;
    bool read;                      /* a Read Request (else a Write) */
    int region;                     /* 0: read-write, 1: read-only, 2: write-only, -1: no region */
    int64_t offset;                 /* from the region's start */
    uint32_t len;
    uint8_t ecode;                  /* expected */
};

static const struct probe probes[] = {
    { "write-unknown-stag", false, -1, 0, 8, 0x00 },
    { "write-past-end", false, 0, 4096 - 7, 8, 0x01 },
    { "write-before-start", false, 0, -1, 8, 0x01 },
    { "write-to-wrap", false, 0, 0, 8, 0x01 },      /* TO set to 2^64 - 4 below */
    { "read-4g", true, 0, 0, 0xffffffffu, 0x01 },
    { "read-past-end", true, 0, 1, 4096, 0x01 },
    { "write-read-only", false, 1, 0, 8, 0x02 },
    { "read-write-only", true, 2, 0, 8, 0x02 },
};
#define NPROBES (sizeof(probes) / sizeof(probes[0]))

static uint8_t *region_buf[3];
static uint32_t region_token[3];

static void peer(uint16_t port, const struct probe *p)
{
    int fd = t_iw_dial(port);
    uint8_t frame[256];
    struct iw_hdr h = { .last = true };
    uint64_t to = p->region >= 0 ? (uint64_t)(uintptr_t)region_buf[p->region] + (uint64_t)p->offset : 0x1000;
    uint32_t stag = p->region >= 0 ? region_token[p->region] : 0x00abcd01u;
    size_t n;

    if (!strcmp(p->name, "write-to-wrap"))
        to = UINT64_MAX - 3;
    t_iw_handshake(fd, false);
    if (p->read) {
        h.opcode = IW_OP_READ_REQ;
        h.qn = IW_QN_READ;
        h.msn = 1;
        h.rr = (struct iw_read_req){ .sink_stag = 0x1234, .sink_to = 0x10000, .size = p->len, .src_stag = stag,
                                     .src_to = to };
        n = t_iw_fpdu(frame, &h, NULL, 0, false, false);
    } else {
        h.tagged = true;
        h.opcode = IW_OP_WRITE;
        h.stag = stag;
        h.to = to;
        n = t_iw_fpdu(frame, &h, NULL, p->len, false, false);
    }
    CHECK(write(fd, frame, n) == (ssize_t)n);
    struct iw_hdr t;
    if (!t_iw_read_terminate(fd, &t)) {
        fprintf(stderr, "%s: no Terminate\n", p->name);
        exit(1);
    }
    if (t.term.layer != IW_LAYER_RDMAP || t.term.etype != IW_RDMAP_ET_PROTECTION || t.term.ecode != p->ecode) {
        fprintf(stderr, "%s: Terminate layer %u etype %u ecode 0x%02x, expected RDMAP protection 0x%02x\n", p->name,
                t.term.layer, t.term.etype, t.term.ecode, p->ecode);
        exit(1);
    }
    close(fd);
}

static nd_mr *region(struct t_side *s, int i, uint32_t flags)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    nd_mr *mr;

    region_buf[i] = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(region_buf[i] != MAP_FAILED);
    CHECK_ST(nd_adapter_create_memory_region(s->a, s->port, &mr), ND_SUCCESS);
    CHECK_ST(nd_mr_register(mr, region_buf[i], 4096, flags, &ov), ND_SUCCESS);
    region_token[i] = nd_mr_get_remote_token(mr);
    return mr;
}

static void run(const struct probe *p)
{
    struct t_side s;
    nd_mr *mr[3];
    uint16_t port;
    pid_t pid;

    t_side_open(&s, 4096, 4, 1);
    mr[0] = region(&s, 0, ND_MR_FLAG_ALLOW_LOCAL_WRITE | ND_MR_FLAG_ALLOW_REMOTE_READ | ND_MR_FLAG_ALLOW_REMOTE_WRITE);
    mr[1] = region(&s, 1, ND_MR_FLAG_ALLOW_REMOTE_READ);
    mr[2] = region(&s, 2, ND_MR_FLAG_ALLOW_LOCAL_WRITE | ND_MR_FLAG_ALLOW_REMOTE_WRITE);
    nd_sge rs = { s.buf, 64, s.token };
    CHECK_ST(nd_qp_receive(s.qp, (void *)1, &rs, 1), ND_SUCCESS);
    port = t_listen(&s);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        peer(port, p);
        _exit(0);
    }
    t_accept(&s, 8, NULL, 0);
    nd_result r = t_poll_one(s.cq, 5000);       /* the connection ends: the receive flushes */
    CHECK(r.request_context == (void *)1 && r.status != ND_SUCCESS);
    t_expect_child_ok(pid);
    for (int i = 0; i < 3; i++) {
        nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };

        CHECK_ST(nd_mr_deregister(mr[i], &ov), ND_SUCCESS);
        CHECK_ST(nd_mr_close(mr[i]), ND_SUCCESS);
        munmap(region_buf[i], 4096);
    }
    t_side_close(&s);
    printf("%-20s Terminate RDMAP protection 0x%02x\n", p->name, p->ecode);
}

int main(void)
{
    setenv("ND_TRANSPORT", "iwarp", 1);
    signal(SIGPIPE, SIG_IGN);
    for (size_t i = 0; i < NPROBES; i++)
        run(&probes[i]);
    return 0;
}
