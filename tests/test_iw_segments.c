// SPDX-License-Identifier: MIT
/*
 * Inbound iwarp placement under any segmentation. A forked raw-TCP peer frames a mix of
 * bulk and small FPDUs (Writes of full-size FPDUs with a short last one, zero-length
 * Writes, Sends of 0 bytes to 200 KB split in FPDUs of 16 bytes to 64 KB) and writes the
 * byte stream in chunks of random size, so that reads end anywhere: inside a header, a
 * payload, a pad, a CRC. Every byte must land where its header says, receives spanning
 * several SGEs included, and nothing else may change. Run with the CRC off and on, and with
 * our side polling (an application thread reads) or blocked (the engine reads).
 */
#include "t_iwpeer.h"

enum kind { WRITE, SEND, RTR };

struct item {
    enum kind kind;
    uint32_t len, fpdu;             /* payload bytes, and the most per FPDU */
    uint32_t mr_off;                /* WRITE: where in the region */
};

#define MR_LEN (4u << 20)
#define RECV_AREA (1u << 20)        /* receive buffers are laid out from here */
#define GAP 64u                     /* untouched bytes between receive buffers */

static const struct item plan[] = {
    { WRITE, 1u << 20, 32748, 0 },  /* 32 full FPDUs and one of 640 bytes, as on loopback */
    { RTR, 0, 0, 0 },
    { SEND, 8, 65480, 0 },
    { SEND, 200000, 65480, 0 },     /* into three SGEs: boundaries inside FPDUs */
    { WRITE, 100000, 4000, 0x200000 },
    { SEND, 0, 65480, 0 },
    { SEND, 1, 65480, 0 },
    { SEND, 100, 16, 0 },
    { SEND, 70000, 9000, 0 },
    { WRITE, 300000, 65521, 0x300000 },
    { SEND, 8, 65480, 0 },
};
#define NITEMS (sizeof(plan) / sizeof(plan[0]))

struct stream {
    uint8_t *p;
    size_t n;
    bool crc;
};

static void put(struct stream *s, struct iw_hdr *h, const uint8_t *payload, uint32_t plen)
{
    s->n += t_iw_fpdu(s->p + s->n, h, payload, plen, s->crc, false);
}

/* The whole stream the peer sends: every item of the plan, each payload filled with the
 * item's index as seed. */
static size_t build(struct stream *s, uint32_t stag, uint64_t base)
{
    uint8_t *data = malloc(1u << 20);
    uint32_t msn = 0;

    CHECK(data != NULL);
    for (uint32_t i = 0; i < NITEMS; i++) {
        const struct item *it = &plan[i];
        uint32_t off = 0;

        t_fill(data, it->len, i);
        if (it->kind == RTR) {
            struct iw_hdr h = { .tagged = true, .last = true, .opcode = IW_OP_WRITE, .stag = 1 };

            put(s, &h, NULL, 0);
            continue;
        }
        if (it->kind == SEND)
            msn++;
        do {
            uint32_t k = it->len - off < it->fpdu ? it->len - off : it->fpdu;
            struct iw_hdr h = { .last = off + k == it->len };

            if (it->kind == WRITE) {
                h.tagged = true;
                h.opcode = IW_OP_WRITE;
                h.stag = stag;
                h.to = base + it->mr_off + off;
            } else {
                h.opcode = IW_OP_SEND;
                h.qn = IW_QN_SEND;
                h.msn = msn;
                h.mo = off;
            }
            put(s, &h, data + off, k);
            off += k;
        } while (off < it->len);
    }
    free(data);
    return s->n;
}

/* Chunks of 1-20 bytes, 100-5000, or up to 200,000, in a sequence fixed by @seed. */
static void write_chunked(int fd, const uint8_t *p, size_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;

    while (n) {
        x = x * 1103515245u + 12345u;
        uint32_t r = x >> 8, pick = r % 3;
        size_t k = pick == 0 ? 1 + r % 20 : pick == 1 ? 100 + r % 4900 : 1 + r % 200000;

        if (k > n)
            k = n;
        ssize_t w = send(fd, p, k, MSG_NOSIGNAL);

        CHECK(w > 0);
        p += w;
        n -= (size_t)w;
    }
}

static void peer(uint16_t port, bool crc, uint32_t stag, uint64_t base, int done_wr, int go_rd)
{
    struct stream s = { .p = malloc(4u << 20), .crc = crc };
    int fd = t_iw_dial(port);
    char c;

    CHECK(s.p != NULL);
    t_iw_handshake(fd, crc);
    write_chunked(fd, s.p, build(&s, stag, base), crc ? 7 : 3);
    CHECK(write(done_wr, "w", 1) == 1);
    CHECK(read(go_rd, &c, 1) == 1);  /* keep the connection until our side has checked */
    close(fd);
    free(s.p);
}

/* Receive buffers for the plan's Sends, in order: three SGEs for the large ones, one else. */
static uint32_t post_receives(struct t_side *s, uint32_t *where)
{
    uint32_t off = RECV_AREA, n = 0;

    for (uint32_t i = 0; i < NITEMS; i++) {
        if (plan[i].kind != SEND)
            continue;
        uint32_t len = plan[i].len, a = len / 3 + 1, b = 99;
        nd_sge sge[3] = { { s->buf + off, len + 16, s->token } };
        uint32_t nsge = 1;

        if (len >= 1000) {
            sge[0].buffer_length = a;
            sge[1] = (nd_sge){ s->buf + off + a + GAP, b, s->token };
            sge[2] = (nd_sge){ s->buf + off + a + b + 2 * GAP, len - a - b + 16, s->token };
            nsge = 3;
        }
        where[i] = off;
        CHECK_ST(nd_qp_receive(s->qp, (void *)(uintptr_t)i, sge, nsge), ND_SUCCESS);
        off += len + 16 + 3 * GAP;
        n++;
    }
    return n;
}

/* The bytes of Send @i as received: its SGEs in order, the gaps between them untouched. */
static void check_send(const struct t_side *s, uint32_t i, uint32_t off)
{
    uint32_t len = plan[i].len, a = len / 3 + 1, b = 99;
    uint8_t *want = malloc(len + 1), *got = malloc(len + 1);
    static const uint8_t zero[GAP];

    CHECK(want && got);
    t_fill(want, len, i);
    if (len >= 1000) {
        memcpy(got, s->buf + off, a);
        memcpy(got + a, s->buf + off + a + GAP, b);
        memcpy(got + a + b, s->buf + off + a + b + 2 * GAP, len - a - b);
        CHECK(memcmp(s->buf + off + a, zero, GAP) == 0 && memcmp(s->buf + off + a + b + GAP, zero, GAP) == 0);
    } else {
        memcpy(got, s->buf + off, len);
    }
    CHECK(memcmp(got, want, len) == 0);
    free(want);
    free(got);
}

static void check_region(const struct t_side *s, const uint32_t *where)
{
    uint8_t *want = malloc(1u << 20);
    size_t covered = 0;

    CHECK(want != NULL);
    for (uint32_t i = 0; i < NITEMS; i++) {
        if (plan[i].kind == WRITE) {
            t_fill(want, plan[i].len, i);
            CHECK(memcmp(s->buf + plan[i].mr_off, want, plan[i].len) == 0);
            covered += plan[i].len;
        } else if (plan[i].kind == SEND) {
            check_send(s, i, where[i]);
        }
    }
    /* Just past the Writes that do not end where another begins: still zero. */
    CHECK(s->buf[plan[4].mr_off + plan[4].len] == 0 && s->buf[plan[9].mr_off + plan[9].len] == 0);
    CHECK(covered == (1u << 20) + 100000 + 300000);
    free(want);
}

static void run(bool crc, bool engine)
{
    struct t_side s;
    uint32_t where[NITEMS] = { 0 };
    int done[2], go[2];
    char c;

    t_side_open(&s, MR_LEN, 16, 3);
    uint32_t stag = nd_mr_get_remote_token(s.mr), sends = post_receives(&s, where);
    uint16_t port = t_listen(&s);
    CHECK(pipe(done) == 0 && pipe(go) == 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(done[0]);
        close(go[1]);
        peer(port, crc, stag, (uint64_t)(uintptr_t)s.buf, done[1], go[0]);
        _exit(0);
    }
    close(done[1]);
    close(go[0]);
    t_accept(&s, 8, NULL, 0);
    if (engine)                     /* blocked while the peer writes: the engine reads it all */
        CHECK(read(done[0], &c, 1) == 1);
    for (uint32_t got = 0, i = 0; got < sends; got++, i++) {
        nd_result r = t_poll_one(s.cq, 10000);

        while (plan[i].kind != SEND)
            i++;
        CHECK(r.request_type == ND_REQUEST_TYPE_RECEIVE && r.status == ND_SUCCESS);
        CHECK((uintptr_t)r.request_context == i && r.bytes_transferred == plan[i].len);
    }
    /* The last Send was placed after every Write before it: all of it is in place now. */
    check_region(&s, where);
    CHECK(write(go[1], "x", 1) == 1);
    t_expect_child_ok(pid);
    t_side_close(&s);
    close(done[0]);
    close(go[1]);
    printf("crc %-3s %-6s placed %u Sends and %u bytes of Writes\n", crc ? "on" : "off",
           engine ? "engine" : "poller", sends, (1u << 20) + 100000 + 300000);
}

int main(void)
{
    setenv("ND_TRANSPORT", "iwarp", 1);
    for (int crc = 0; crc < 2; crc++)
        for (int engine = 0; engine < 2; engine++)
            run(crc, engine);
    return 0;
}
