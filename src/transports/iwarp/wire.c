// SPDX-License-Identifier: MIT
/* iWARP encode/parse: see wire.h; the layouts are RFC 5044 (MPA), 5041 (DDP) and 5040 (RDMAP). */
#include "wire.h"

#include <pthread.h>
#include <stddef.h>
#include <string.h>

/* ---- CRC32c ---- */

/*
 * The SSE4.2 crc32 instruction does 8 bytes per instruction, which keeps CRC (when a peer
 * asks for it) well below the cost of the copy it rides along with; the table version is
 * for CPUs without it and is what the tests cross-check against.
 */
static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static bool have_sse42;

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;

        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
#if defined(__x86_64__)
    __builtin_cpu_init();
    have_sse42 = __builtin_cpu_supports("sse4.2");
#endif
}

static uint32_t crc_sw(uint32_t crc, const uint8_t *p, size_t len)
{
    while (len && ((uintptr_t)p & 7)) {
        crc = crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
        len--;
    }
    while (len >= 8) {
        uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;

        crc = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^ crc_table[5][(lo >> 16) & 0xff] ^
              crc_table[4][lo >> 24] ^ crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
              crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
        p += 8;
        len -= 8;
    }
    while (len--)
        crc = crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const uint8_t *p, size_t len)
{
    uint64_t c = crc;

    while (len && ((uintptr_t)p & 7)) {
        c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
        len--;
    }
    while (len >= 8) {
        uint64_t v;

        memcpy(&v, p, 8);
        c = __builtin_ia32_crc32di(c, v);
        p += 8;
        len -= 8;
    }
    while (len--)
        c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
    return (uint32_t)c;
}
#endif

uint32_t iw_crc32c_update(uint32_t crc, const void *buf, size_t len)
{
    pthread_once(&crc_once, crc_init);
#if defined(__x86_64__)
    if (have_sse42)
        return crc_hw(crc, buf, len);
#endif
    return crc_sw(crc, buf, len);
}

uint32_t iw_crc32c_table(uint32_t crc, const void *buf, size_t len)
{
    pthread_once(&crc_once, crc_init);
    return crc_sw(crc, buf, len);
}

const char *iw_crc32c_impl(void)
{
    pthread_once(&crc_once, crc_init);
    return have_sse42 ? "sse4.2" : "table";
}

/* ---- MPA ---- */

static const char mpa_key_req[16] = { 'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R', 'e', 'q', ' ', 'F', 'r', 'a', 'm', 'e' };
static const char mpa_key_rep[16] = { 'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R', 'e', 'p', ' ', 'F', 'r', 'a', 'm', 'e' };

size_t mpa_frame_len(const uint8_t *hdr)
{
    return MPA_FRAME_HDR + iw_get16(hdr + 18);
}

int mpa_parse(const uint8_t *buf, size_t len, bool want_reply, struct mpa_frame *f)
{
    size_t pd, total;

    if (len < MPA_FRAME_HDR)
        return memcmp(buf, want_reply ? mpa_key_rep : mpa_key_req, len < 16 ? len : 16) ? MPA_BAD : MPA_NEED_MORE;
    if (memcmp(buf, want_reply ? mpa_key_rep : mpa_key_req, 16))
        return MPA_BAD;
    pd = iw_get16(buf + 18);
    total = MPA_FRAME_HDR + pd;
    memset(f, 0, sizeof(*f));
    f->reply = want_reply;
    f->flags = buf[16];
    f->rev = buf[17];
    /* Markers are never used (siw has none); revision 0 is the pre-IETF framing. */
    if (pd > MPA_MAX_PD_RX || f->rev < 1 || f->rev > 2 || (f->flags & MPA_FLAG_MARKERS))
        return MPA_BAD;
    if (!want_reply && (f->flags & MPA_FLAG_REJECT))
        return MPA_BAD;
    if (len < total)
        return MPA_NEED_MORE;
    f->enhanced = f->rev == 2 && (f->flags & MPA_FLAG_ENHANCED);
    if (f->enhanced) {
        if (pd < 4)
            return MPA_BAD;
        f->ird_word = iw_get16(buf + 20);
        f->ord_word = iw_get16(buf + 22);
        f->app = buf + 24;
        f->app_len = (uint16_t)(pd - 4);
    } else {
        f->app = buf + 20;
        f->app_len = (uint16_t)pd;
    }
    return (int)total;
}

size_t mpa_encode(uint8_t *out, size_t cap, const struct mpa_frame *f)
{
    size_t block = f->enhanced ? 4 : 0, total = MPA_FRAME_HDR + block + f->app_len;

    if (total > cap || block + f->app_len > 0xffff)
        return 0;
    memcpy(out, f->reply ? mpa_key_rep : mpa_key_req, 16);
    out[16] = (uint8_t)(f->flags | (f->enhanced ? MPA_FLAG_ENHANCED : 0));
    out[17] = f->rev;
    iw_put16(out + 18, (uint16_t)(block + f->app_len));
    if (f->enhanced) {
        iw_put16(out + 20, f->ird_word);
        iw_put16(out + 22, f->ord_word);
    }
    if (f->app_len)
        memcpy(out + 20 + block, f->app, f->app_len);
    return total;
}

/* ---- DDP / RDMAP headers ---- */

uint16_t iw_hdr_len_for(uint8_t ctrl0, uint8_t ctrl1)
{
    if (ctrl0 & IW_DDP_T)
        return IW_HDR_TAGGED;
    switch (ctrl1 & 0x0f) {
    case IW_OP_READ_REQ:
        return IW_HDR_READ_REQ;
    case IW_OP_ND_ATOMIC_REQ:
        return IW_HDR_ATOMIC_REQ;
    case IW_OP_TERMINATE:
        return IW_HDR_TERM;
    default:
        return IW_HDR_UNTAGGED;
    }
}

/* The Terminate control word: RFC order, or siw's little-endian bit-field order. */
static void term_parse(const uint8_t *p, size_t attach_len, struct iw_term *t)
{
    uint8_t b0 = p[0], b2 = p[2];

    t->ecode = p[1];
    t->siw_order = (b2 & 0x07) && !(b2 & 0xe0);
    if (t->siw_order) {
        t->layer = b0 & 0x0f;
        t->etype = b0 >> 4;
        t->m = b2 & 1;
        t->d = b2 & 2;
        t->r = b2 & 4;
    } else {
        t->layer = b0 >> 4;
        t->etype = b0 & 0x0f;
        t->m = b2 & 0x80;
        t->d = b2 & 0x40;
        t->r = b2 & 0x20;
    }
    t->attach_len = (uint16_t)(attach_len < IW_TERM_ATTACH_MAX ? attach_len : IW_TERM_ATTACH_MAX);
    memcpy(t->attach, p + 4, t->attach_len);
}

int iw_hdr_parse(const uint8_t *buf, size_t len, struct iw_hdr *h)
{
    uint16_t need;

    if (len < 4)
        return 0;
    /* Everything but the Terminate's words, most of the size: this runs for every FPDU. */
    memset(h, 0, offsetof(struct iw_hdr, term));
    h->ulpdu_len = iw_get16(buf);
    h->tagged = buf[2] & IW_DDP_T;
    h->last = buf[2] & IW_DDP_L;
    h->ddp_version = buf[2] & 3;
    h->rdmap_version = buf[3] >> 6;
    h->opcode = buf[3] & 0x0f;
    need = iw_hdr_len_for(buf[2], buf[3]);
    if (!h->tagged && h->opcode == IW_OP_TERMINATE && h->ulpdu_len > need)
        need = (uint16_t)(h->ulpdu_len < need + IW_TERM_ATTACH_MAX ? h->ulpdu_len : need + IW_TERM_ATTACH_MAX);
    if (h->ulpdu_len < need)
        return -1;
    if (len < (size_t)2 + need)
        return 0;
    h->hdr_len = need;
    buf += 2;
    if (h->tagged) {
        h->stag = iw_get32(buf + 2);
        h->to = iw_get64(buf + 6);
        return 2 + need;
    }
    h->inval_stag = iw_get32(buf + 2);
    h->qn = iw_get32(buf + 6);
    h->msn = iw_get32(buf + 10);
    h->mo = iw_get32(buf + 14);
    if (h->opcode == IW_OP_READ_REQ || h->opcode == IW_OP_ND_ATOMIC_REQ) {
        h->rr.sink_stag = iw_get32(buf + 18);
        h->rr.sink_to = iw_get64(buf + 22);
        h->rr.size = iw_get32(buf + 30);
        h->rr.src_stag = iw_get32(buf + 34);
        h->rr.src_to = iw_get64(buf + 38);
        if (h->opcode == IW_OP_ND_ATOMIC_REQ) {
            h->atomic_op = iw_get32(buf + 46);
            h->add_or_cmp = iw_get64(buf + 50);
            h->swap = iw_get64(buf + 58);
        }
    } else if (h->opcode == IW_OP_TERMINATE) {
        term_parse(buf + 18, need - IW_HDR_TERM, &h->term);
    }
    return 2 + need;
}

static void term_ctrl_encode(uint8_t *p, const struct iw_term *t)
{
    if (t->siw_order) {
        p[0] = (uint8_t)(t->etype << 4 | (t->layer & 0x0f));
        p[2] = (uint8_t)((t->m ? 1 : 0) | (t->d ? 2 : 0) | (t->r ? 4 : 0));
    } else {
        p[0] = (uint8_t)(t->layer << 4 | (t->etype & 0x0f));
        p[2] = (uint8_t)((t->m ? 0x80 : 0) | (t->d ? 0x40 : 0) | (t->r ? 0x20 : 0));
    }
    p[1] = t->ecode;
    p[3] = 0;
    memcpy(p + 4, t->attach, t->attach_len);
}

size_t iw_hdr_encode(uint8_t *out, const struct iw_hdr *h)
{
    uint8_t *p = out + 2;
    uint16_t n = iw_hdr_len_for(h->tagged ? IW_DDP_T : 0, h->opcode);

    iw_put_ctrl(out, h->tagged, h->last, h->ddp_version, h->rdmap_version, h->opcode, h->ulpdu_len);
    if (h->tagged) {
        iw_put_tagged_fields(out, h->stag, h->to);
        return 2 + n;
    }
    iw_put_untagged_fields(out, h->inval_stag, h->qn, h->msn, h->mo);
    if (h->opcode == IW_OP_READ_REQ || h->opcode == IW_OP_ND_ATOMIC_REQ) {
        iw_put_read_req_fields(out, &h->rr);
        if (h->opcode == IW_OP_ND_ATOMIC_REQ)
            iw_put_atomic_fields(out, h->atomic_op, h->add_or_cmp, h->swap);
    } else if (h->opcode == IW_OP_TERMINATE) {
        term_ctrl_encode(p + 18, &h->term);
        n = (uint16_t)(n + h->term.attach_len);
    }
    return 2 + n;
}

size_t iw_term_encode(uint8_t *out, const struct iw_term *t)
{
    struct iw_hdr h = { .opcode = IW_OP_TERMINATE, .last = true, .ddp_version = IW_DDP_VERSION,
                        .rdmap_version = IW_RDMAP_VERSION, .qn = IW_QN_TERM, .msn = 1, .term = *t };
    uint32_t ulpdu = IW_HDR_TERM + t->attach_len, pad = iw_pad(ulpdu);
    size_t n;

    h.term.siw_order = false;
    h.ulpdu_len = (uint16_t)ulpdu;
    n = iw_hdr_encode(out, &h);
    memset(out + n, 0, pad + 4);
    return n + pad + 4;
}

void iw_term_attach(struct iw_term *t, const struct iw_hdr *h, uint32_t plen)
{
    uint8_t buf[2 + IW_MAX_HDR];
    struct iw_hdr copy = *h;
    size_t n;

    if (!h->tagged && h->opcode == IW_OP_TERMINATE)
        return;                     /* never quote a Terminate */
    copy.ulpdu_len = (uint16_t)plen;
    n = iw_hdr_encode(buf, &copy);
    if (n > IW_TERM_ATTACH_MAX)
        return;
    memcpy(t->attach, buf, n);
    t->attach_len = (uint16_t)n;
    t->m = t->d = true;
    t->r = !h->tagged && h->opcode == IW_OP_READ_REQ;
}

bool iw_term_offender(const struct iw_term *t, struct iw_hdr *h)
{
    const uint8_t *p = t->attach + 2;

    if (!t->d || t->attach_len < 4)
        return false;
    memset(h, 0, sizeof(*h));
    h->tagged = p[0] & IW_DDP_T;
    h->last = p[0] & IW_DDP_L;
    h->opcode = p[1] & 0x0f;
    if (h->tagged) {
        if (t->attach_len < 2 + IW_HDR_TAGGED)
            return false;
        h->stag = iw_get32(p + 2);
        h->to = iw_get64(p + 6);
        return true;
    }
    if (t->attach_len < 2 + IW_HDR_UNTAGGED)
        return false;
    h->qn = iw_get32(p + 6);
    h->msn = iw_get32(p + 10);
    h->mo = iw_get32(p + 14);
    return true;
}
