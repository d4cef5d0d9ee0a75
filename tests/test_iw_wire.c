// SPDX-License-Identifier: MIT
/*
 * iWARP wire format: CRC32c vectors, worked layouts as
 * encoder and parser checks, and every frame of the siw captures (tests/data/siw) parsed
 * and re-encoded byte for byte, with the CRC each would carry checked against the decode.
 */
#include <netdirect/netdirect.h>
#include "transports/iwarp/wire.h"
#include "t_util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int hexval(char c)
{
    return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}

static size_t unhex(const char *s, uint8_t *out)
{
    size_t n = 0;

    for (; s[0] && s[1]; s += 2) {
        while (*s == ' ' || *s == '|')
            s++;
        if (!s[0] || !s[1])
            break;
        out[n++] = (uint8_t)(hexval(s[0]) << 4 | hexval(s[1]));
    }
    return n;
}

static void expect_bytes(const char *what, const uint8_t *got, size_t n, const char *hex)
{
    uint8_t want[512];
    size_t m = unhex(hex, want);

    if (m != n || memcmp(got, want, n)) {
        fprintf(stderr, "%s: got %zu bytes:", what, n);
        for (size_t i = 0; i < n; i++)
            fprintf(stderr, " %02x", got[i]);
        fprintf(stderr, "\n");
        CHECK(0);
    }
}

static void test_crc(void)
{
    uint8_t b[32];
    uint8_t wire[4];

    memset(b, 0, 32);
    iw_put_le32(wire, iw_crc32c(b, 32));
    expect_bytes("crc zeros", wire, 4, "aa36918a");
    memset(b, 0xff, 32);
    iw_put_le32(wire, iw_crc32c(b, 32));
    expect_bytes("crc ones", wire, 4, "43aba862");
    for (int i = 0; i < 32; i++)
        b[i] = (uint8_t)i;
    iw_put_le32(wire, iw_crc32c(b, 32));
    expect_bytes("crc inc", wire, 4, "4e79dd46");
    for (int i = 0; i < 32; i++)
        b[i] = (uint8_t)(31 - i);
    iw_put_le32(wire, iw_crc32c(b, 32));
    expect_bytes("crc dec", wire, 4, "5cdb3f11");
    CHECK(iw_crc32c("123456789", 9) == 0xe3069283u);
    /* Incremental updates across odd boundaries equal one pass. */
    uint8_t big[1000];
    for (int i = 0; i < 1000; i++)
        big[i] = (uint8_t)(i * 7 + 3);
    uint32_t c = ~0u;
    c = iw_crc32c_update(c, big, 3);
    c = iw_crc32c_update(c, big + 3, 500);
    c = iw_crc32c_update(c, big + 503, 497);
    CHECK(~c == iw_crc32c(big, 1000));
    CHECK(~iw_crc32c_table(~0u, big, 1000) == iw_crc32c(big, 1000));
}

static void test_mpa(void)
{
    uint8_t out[600];
    struct mpa_frame f = { .rev = 1 }, g;
    uint8_t pd[16];
    size_t n;

    n = mpa_encode(out, sizeof(out), &f);
    expect_bytes("7.1", out, n, "4d504120494420526571204672616d65 00 01 0000");
    CHECK(mpa_parse(out, n, false, &g) == 20 && g.rev == 1 && !g.enhanced && g.app_len == 0);
    CHECK(mpa_parse(out, n, true, &g) == MPA_BAD);   /* a request is not a reply */
    CHECK(mpa_parse(out, 19, false, &g) == MPA_NEED_MORE);

    f = (struct mpa_frame){ .rev = 2, .enhanced = true, .ird_word = 1, .ord_word = 1 };
    n = mpa_encode(out, sizeof(out), &f);
    expect_bytes("7.2", out, n, "4d504120494420526571204672616d65 10020004 00010001");
    CHECK(mpa_parse(out, n, false, &g) == 24 && g.enhanced && g.ird_word == 1 && g.ord_word == 1);

    for (int i = 0; i < 16; i++)
        pd[i] = (uint8_t)i;
    f = (struct mpa_frame){ .rev = 1, .app = pd, .app_len = 16 };
    n = mpa_encode(out, sizeof(out), &f);
    expect_bytes("7.3", out, n, "4d504120494420526571204672616d65 00010010 000102030405060708090a0b0c0d0e0f");
    CHECK(mpa_parse(out, n, false, &g) == 36 && g.app_len == 16 && !memcmp(g.app, pd, 16));
    CHECK(mpa_parse(out, n - 1, false, &g) == MPA_NEED_MORE);

    f = (struct mpa_frame){ .rev = 2, .enhanced = true, .ird_word = 1, .ord_word = 1, .app = pd, .app_len = 16 };
    n = mpa_encode(out, sizeof(out), &f);
    expect_bytes("7.4", out, n,
                 "4d504120494420526571204672616d65 10020014 00010001 000102030405060708090a0b0c0d0e0f");
    CHECK(mpa_parse(out, n, false, &g) == 40 && g.app_len == 16 && !memcmp(g.app, pd, 16));

    f = (struct mpa_frame){ .reply = true, .rev = 2, .enhanced = true, .ird_word = 1, .ord_word = 1 };
    n = mpa_encode(out, sizeof(out), &f);
    expect_bytes("7.5", out, n, "4d504120494420526570204672616d65 10020004 00010001");
    CHECK(mpa_parse(out, n, true, &g) == 24);
    f.flags = MPA_FLAG_REJECT;
    n = mpa_encode(out, sizeof(out), &f);
    CHECK(out[16] == 0x30);

    /* What we refuse: markers, rev 3, a short v2 block, oversize private data, a wrong key. */
    f = (struct mpa_frame){ .rev = 1, .flags = MPA_FLAG_MARKERS };
    n = mpa_encode(out, sizeof(out), &f);
    CHECK(mpa_parse(out, n, false, &g) == MPA_BAD);
    f = (struct mpa_frame){ .rev = 3 };
    n = mpa_encode(out, sizeof(out), &f);
    CHECK(mpa_parse(out, n, false, &g) == MPA_BAD);
    f = (struct mpa_frame){ .rev = 2, .flags = MPA_FLAG_ENHANCED, .app = pd, .app_len = 2 };
    n = mpa_encode(out, sizeof(out), &f);
    CHECK(mpa_parse(out, n, false, &g) == MPA_BAD);
    f = (struct mpa_frame){ .rev = 1 };
    n = mpa_encode(out, sizeof(out), &f);
    iw_put16(out + 18, 513);
    CHECK(mpa_parse(out, sizeof(out), false, &g) == MPA_BAD);
    out[0] = 'X';
    CHECK(mpa_parse(out, 5, false, &g) == MPA_BAD);
}

/* Encode @h + payload with pad and CRC as the wire carries it. */
static size_t fpdu(uint8_t *out, struct iw_hdr *h, const void *payload, uint32_t plen, bool crc)
{
    size_t n;

    h->ulpdu_len = (uint16_t)(iw_hdr_len_for(h->tagged ? IW_DDP_T : 0, h->opcode) + plen);
    h->ddp_version = IW_DDP_VERSION;
    h->rdmap_version = IW_RDMAP_VERSION;
    n = iw_hdr_encode(out, h);
    if (plen)
        memcpy(out + n, payload, plen);
    n += plen;
    memset(out + n, 0, iw_pad(h->ulpdu_len));
    n += iw_pad(h->ulpdu_len);
    iw_put_le32(out + n, crc ? iw_crc32c(out, n) : 0);
    return n + 4;
}

static void test_fpdus(void)
{
    uint8_t out[256];
    struct iw_hdr h, p;
    size_t n;

    h = (struct iw_hdr){ .tagged = true, .last = true, .opcode = IW_OP_WRITE, .stag = 0x12345601,
                         .to = 0x00007f0000001000ull };
    n = fpdu(out, &h, "ABCDEFGH", 8, true);
    expect_bytes("7.6", out, n, "0016 c140 12345601 00007f0000001000 4142434445464748 8c92c32d");
    CHECK(iw_hdr_parse(out, n, &p) == 16 && p.tagged && p.last && p.opcode == IW_OP_WRITE &&
            p.stag == 0x12345601 && p.to == 0x7f0000001000ull && p.ulpdu_len == 22);
    CHECK(iw_hdr_parse(out, 15, &p) == 0);

    h = (struct iw_hdr){ .last = true, .opcode = IW_OP_SEND, .qn = 0, .msn = 1 };
    n = fpdu(out, &h, "hello", 5, true);
    expect_bytes("7.7", out, n, "0017 4143 00000000 00000000 00000001 00000000 68656c6c6f 000000 b990b10c");
    CHECK(iw_hdr_parse(out, n, &p) == 20 && p.msn == 1 && p.qn == 0 && p.mo == 0 && p.ulpdu_len == 23);

    h = (struct iw_hdr){ .last = true, .opcode = IW_OP_READ_REQ, .qn = 1, .msn = 1,
                         .rr = { 0x00abcd02, 0x7f0000002000ull, 8, 0x12345601, 0x7f0000001000ull } };
    n = fpdu(out, &h, NULL, 0, true);
    expect_bytes("7.8", out, n,
                 "002e 4141 00000000 00000001 00000001 00000000 00abcd02 00007f0000002000 00000008 "
                 "12345601 00007f0000001000 985fc1a9");
    CHECK(iw_hdr_parse(out, n, &p) == 48 && p.rr.size == 8 && p.rr.src_stag == 0x12345601 &&
            p.rr.sink_to == 0x7f0000002000ull && p.rr.src_to == 0x7f0000001000ull);

    h = (struct iw_hdr){ .tagged = true, .last = true, .opcode = IW_OP_READ_RESP, .stag = 0x00abcd02,
                         .to = 0x7f0000002000ull };
    n = fpdu(out, &h, "ABCDEFGH", 8, true);
    expect_bytes("7.9", out, n, "0016 c142 00abcd02 00007f0000002000 4142434445464748 348191ac");

    h = (struct iw_hdr){ .tagged = true, .last = true, .opcode = IW_OP_WRITE, .stag = 1 };
    n = fpdu(out, &h, NULL, 0, true);
    expect_bytes("7.10 write rtr", out, n, "000e c140 00000001 0000000000000000 ebd34c5f");
    h = (struct iw_hdr){ .last = true, .opcode = IW_OP_READ_REQ, .qn = 1, .msn = 1, .rr = { .src_stag = 1 } };
    n = fpdu(out, &h, NULL, 0, true);
    expect_bytes("7.10 read rtr", out, n,
                 "002e4141 00000000 00000001 00000001 00000000 00000000 0000000000000000 00000000 00000001 "
                 "0000000000000000 ba10e3c9");
    h = (struct iw_hdr){ .tagged = true, .last = true, .opcode = IW_OP_READ_RESP };
    n = fpdu(out, &h, NULL, 0, true);
    expect_bytes("7.10 zero read resp", out, n, "000e c142 00000000 0000000000000000 6975d6ca");

    struct iw_term t = { .layer = IW_LAYER_LLP, .etype = 0, .ecode = 2 };
    n = iw_term_encode(out, &t);
    iw_put_le32(out + n - 4, iw_crc32c(out, n - 4));
    expect_bytes("7.10 terminate", out, n, "0016 4147 00000000 00000002 00000001 00000000 20020000 7fe42585");
    CHECK(iw_hdr_parse(out, n, &p) == 24 && p.opcode == IW_OP_TERMINATE && p.term.layer == IW_LAYER_LLP &&
            p.term.ecode == 2 && !p.term.siw_order);
    /* siw's little-endian bit-field order, as captured: 21 02 03 00 = DDP, untagged, M+D. */
    out[20] = 0x21;
    out[21] = 0x02;
    out[22] = 0x03;
    CHECK(iw_hdr_parse(out, n, &p) == 24 && p.term.siw_order && p.term.layer == IW_LAYER_DDP &&
            p.term.etype == IW_DDP_ET_UNTAGGED && p.term.m && p.term.d && !p.term.r);

    /* Malformed: a ULPDU shorter than its own header. */
    h = (struct iw_hdr){ .tagged = true, .last = true, .opcode = IW_OP_WRITE };
    n = fpdu(out, &h, NULL, 0, false);
    iw_put16(out, 10);
    CHECK(iw_hdr_parse(out, n, &p) == -1);
}

/* ---- the captures ---- */

struct expect_frame {
    char name[64], dir[4];
    unsigned off, len;
    char crc[9];
    bool seen;
};

static struct expect_frame *frames;
static size_t nframes;

static void load_frames(const char *dir)
{
    char path[512], line[256];
    FILE *f;

    snprintf(path, sizeof(path), "%s/frames.txt", dir);
    f = fopen(path, "r");
    CHECK(f != NULL);
    while (fgets(line, sizeof(line), f)) {
        frames = realloc(frames, (nframes + 1) * sizeof(*frames));
        struct expect_frame *e = &frames[nframes];
        memset(e, 0, sizeof(*e));
        if (sscanf(line, "%63s %3s %u %u %8s", e->name, e->dir, &e->off, &e->len, e->crc) == 5)
            nframes++;
    }
    fclose(f);
}

/* Find the decode's line for this frame and check the CRC it would carry. */
static void check_frame(const char *file, const uint8_t *frame, unsigned off, unsigned len, bool mpa)
{
    char name[64], dir[4], crc[9];
    const char *dot = strchr(file, '.');
    bool found = false;

    snprintf(name, sizeof(name), "%.*s", (int)(dot - file), file);
    snprintf(dir, sizeof(dir), "%.3s", strstr(file, "c2s") ? "c2s" : "s2c");
    snprintf(crc, sizeof(crc), "%08x", mpa ? 0 : __builtin_bswap32(iw_crc32c(frame, len - 4)));
    for (size_t i = 0; i < nframes; i++) {
        struct expect_frame *e = &frames[i];

        if (e->seen || strcmp(e->name, name) || strcmp(e->dir, dir) || e->off != off || e->len != len)
            continue;
        if (!mpa && strcmp(e->crc, crc))
            continue;
        e->seen = found = true;
        break;
    }
    if (!found)
        fprintf(stderr, "%s off=%u len=%u crc=%s: no matching decode line\n", file, off, len, crc);
    CHECK(found);
}

static unsigned walk_stream(const char *dir, const char *file)
{
    char path[512];
    uint8_t *buf, re[IW_MAX_HDR + 8];
    size_t size, off = 0;
    unsigned count = 0;
    struct mpa_frame m;
    FILE *f;
    int n;

    snprintf(path, sizeof(path), "%s/%s", dir, file);
    f = fopen(path, "rb");
    CHECK(f != NULL);
    fseek(f, 0, SEEK_END);
    size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc(size + 1);
    CHECK(fread(buf, 1, size, f) == size);
    fclose(f);

    n = mpa_parse(buf, size, strstr(file, "s2c") != NULL, &m);
    CHECK(n > 0);
    CHECK(mpa_encode(re, sizeof(re), &m) == (size_t)n && !memcmp(re, buf, (size_t)n));
    check_frame(file, buf, 0, (unsigned)n, true);
    off = (size_t)n;
    count++;
    while (off < size) {
        struct iw_hdr h;
        int hl = iw_hdr_parse(buf + off, size - off, &h);
        uint32_t total;

        CHECK(hl > 0);
        total = iw_fpdu_len(h.ulpdu_len);
        CHECK(off + total <= size);
        CHECK(h.ddp_version == 1 && h.rdmap_version == 1);
        /* Re-encode the header; payload and pad are taken as received (siw's pads may be stale). */
        CHECK(iw_hdr_encode(re, &h) == (size_t)hl);
        if (memcmp(re, buf + off, (size_t)hl)) {
            fprintf(stderr, "%s off=%zu: header re-encode differs\n", file, off);
            CHECK(0);
        }
        CHECK(iw_get32(buf + off + total - 4) == 0);      /* CRC off in every capture */
        check_frame(file, buf + off, (unsigned)off, total, false);
        off += total;
        count++;
    }
    free(buf);
    return count;
}

static void test_captures(void)
{
    const char *dir = ND_TEST_DATA "/siw";
    unsigned total = 0, files = 0;
    struct dirent *d;
    DIR *dp;

    load_frames(dir);
    dp = opendir(dir);
    CHECK(dp != NULL);
    while ((d = readdir(dp))) {
        size_t l = strlen(d->d_name);

        if (l > 4 && !strcmp(d->d_name + l - 4, ".bin")) {
            total += walk_stream(dir, d->d_name);
            files++;
        }
    }
    closedir(dp);
    for (size_t i = 0; i < nframes; i++)
        if (!frames[i].seen)
            fprintf(stderr, "decode line not matched: %s %s off=%u\n", frames[i].name, frames[i].dir, frames[i].off);
    printf("captures: %u streams, %u frames parsed and re-encoded, %zu decode lines\n", files, total, nframes);
    CHECK(files == 38 && total == nframes);
    free(frames);
}

/* The data path's header writers (iw_encode_*) against the general encoder, over fields
 * drawn at random (all bits of every field exercised) and the edge values. */
static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void same_header(const char *what, const uint8_t *fast, size_t nfast, struct iw_hdr *h)
{
    uint8_t ref[2 + IW_MAX_HDR];
    size_t nref;

    h->ddp_version = IW_DDP_VERSION;
    h->rdmap_version = IW_RDMAP_VERSION;
    h->ulpdu_len = (uint16_t)(iw_hdr_len_for(h->tagged ? IW_DDP_T : 0, h->opcode) + h->ulpdu_len);
    nref = iw_hdr_encode(ref, h);
    if (nfast != nref || memcmp(fast, ref, nref) != 0) {
        fprintf(stderr, "%s: fast header differs from iw_hdr_encode (%zu vs %zu bytes)\n", what, nfast, nref);
        exit(1);
    }
}

static void test_fast_encoders(void)
{
    uint64_t s = 0x9e3779b97f4a7c15ull;
    uint8_t out[2 + IW_MAX_HDR];

    for (int i = 0; i < 20000; i++) {
        uint32_t plen = i < 4 ? (uint32_t[]){ 0, 1, 65535 - IW_HDR_READ_REQ, 3 }[i] : (uint32_t)(rnd(&s) % 60000);
        bool last = rnd(&s) & 1;
        uint8_t send_ops[] = { IW_OP_SEND, IW_OP_SEND_SE, IW_OP_SEND_INV, IW_OP_SEND_SE_INV };
        uint8_t op = send_ops[rnd(&s) % 4];
        uint32_t qn = (uint32_t)rnd(&s), msn = (uint32_t)rnd(&s), mo = (uint32_t)rnd(&s);
        struct iw_hdr h = { .opcode = op, .last = last, .qn = qn, .msn = msn, .mo = mo, .ulpdu_len = (uint16_t)plen };

        same_header("untagged", out, iw_encode_untagged(out, op, last, qn, msn, mo, plen), &h);
        uint32_t stag = (uint32_t)rnd(&s);
        uint64_t to = rnd(&s);
        op = rnd(&s) & 1 ? IW_OP_WRITE : IW_OP_READ_RESP;
        h = (struct iw_hdr){ .tagged = true, .opcode = op, .last = last, .stag = stag, .to = to,
                             .ulpdu_len = (uint16_t)plen };
        same_header("tagged", out, iw_encode_tagged(out, op, last, stag, to, plen), &h);
        struct iw_read_req rr = { (uint32_t)rnd(&s), rnd(&s), (uint32_t)rnd(&s), (uint32_t)rnd(&s), rnd(&s) };
        h = (struct iw_hdr){ .opcode = IW_OP_READ_REQ, .last = true, .qn = IW_QN_READ, .msn = msn, .rr = rr };
        same_header("read request", out, iw_encode_read_req(out, msn, &rr), &h);
    }
}

int main(void)
{
    test_fast_encoders();
    test_crc();
    test_mpa();
    test_fpdus();
    test_captures();
    printf("crc32c implementation: %s\n", iw_crc32c_impl());
    return 0;
}
