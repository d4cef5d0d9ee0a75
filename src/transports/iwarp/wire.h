/* SPDX-License-Identifier: MIT */
/*
 * iWARP on the wire (RFC 5040, 5041, 5044, 6581): MPA request/reply frames, FPDU framing, DDP
 * tagged and untagged headers, the RDMAP opcodes and the Terminate message. Pure encode
 * and parse functions over byte buffers: nothing here trusts its input, nothing does I/O,
 * so the stream parser and the fuzzers share one implementation.
 */
#ifndef ND_IW_WIRE_H
#define ND_IW_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- CRC32c (Castagnoli), as MPA uses it: init ~0, final ~crc, written little-endian ---- */
uint32_t iw_crc32c_update(uint32_t crc, const void *buf, size_t len);    /* raw, no inversion */
static inline uint32_t iw_crc32c(const void *buf, size_t len)
{
    return ~iw_crc32c_update(~0u, buf, len);
}
/* The portable table version, whatever the CPU (for cross-checks). */
uint32_t iw_crc32c_table(uint32_t crc, const void *buf, size_t len);
/* "sse4.2" or "table": which implementation this CPU runs. */
const char *iw_crc32c_impl(void);

/* ---- MPA request / reply ---- */
#define MPA_FRAME_HDR 20u
#define MPA_FLAG_MARKERS 0x80u
#define MPA_FLAG_CRC 0x40u
#define MPA_FLAG_REJECT 0x20u
#define MPA_FLAG_ENHANCED 0x10u     /* RFC 6581: the private data starts with the IRD/ORD block */
/* Two of RFC 5044's reserved bits, used between netdirect peers only: a Request offers
 * netdirect's extensions, a Reply agrees. Two bits, because siw builds its Reply from the
 * Request's header and so echoes whatever reserved bit the Request had set. */
#define MPA_FLAG_ND_OFFER 0x01u
#define MPA_FLAG_ND_AGREE 0x02u
#define MPA_MAX_PD_RX 512u          /* RFC 5044 limit: what we accept */
#define MPA_MAX_PD_TX 256u          /* siw's limit, block included: what we send */
#define MPA_V2_P2P 0x8000u          /* IRD word */
#define MPA_V2_RTR_WRITE 0x8000u    /* ORD word */
#define MPA_V2_RTR_READ 0x4000u     /* ORD word */
#define MPA_V2_VALUE 0x3fffu

struct mpa_frame {
    bool reply;
    uint8_t flags;                  /* MPA_FLAG_*, reserved bits as received */
    uint8_t rev;                    /* 1 or 2 */
    bool enhanced;                  /* rev 2 with MPA_FLAG_ENHANCED: the v2 block is present */
    uint16_t ird_word, ord_word;    /* the block, control bits included (enhanced only) */
    uint16_t app_len;               /* private data after the block */
    const uint8_t *app;             /* points into the parsed buffer */
};

enum { MPA_NEED_MORE = 0, MPA_BAD = -1 };

/*
 * mpa_parse - parse one request (@want_reply false) or reply frame from @buf. Returns the
 * frame's length when complete, MPA_NEED_MORE when @len is short of it, MPA_BAD when the
 * bytes are not a frame we accept (wrong key, rev > 2, markers, oversize private data, a
 * short v2 block). The frame's length is known from its first 20 bytes: mpa_frame_len.
 */
int mpa_parse(const uint8_t *buf, size_t len, bool want_reply, struct mpa_frame *f);
/* Bytes of the whole frame, from its first MPA_FRAME_HDR bytes; 0 if they are not a header. */
size_t mpa_frame_len(const uint8_t *hdr);
/* Encode @f with @f->app_len bytes of @f->app; returns bytes written, 0 when @cap is short. */
size_t mpa_encode(uint8_t *out, size_t cap, const struct mpa_frame *f);

/* ---- DDP / RDMAP ---- */
enum iw_opcode {
    IW_OP_WRITE = 0, IW_OP_READ_REQ = 1, IW_OP_READ_RESP = 2, IW_OP_SEND = 3, IW_OP_SEND_INV = 4,
    IW_OP_SEND_SE = 5, IW_OP_SEND_SE_INV = 6, IW_OP_TERMINATE = 7,
    /* netdirect's own, only between two netdirect peers (MPA_FLAG_ND_AGREE), never to siw
     * (docs/design-iwarp.md, "Immediate data"). The 32-bit field RFC 5040 gives Send with
     * Invalidate's STag carries the immediate data. A Send with immediate: every segment as
     * a Send's. A Write with immediate: the Write's segments, then one untagged message of
     * no payload on the Send queue (it takes the next MSN and a receive) whose MO is the
     * Write's length. */
    IW_OP_ND_SEND_IMM = 0xc, IW_OP_ND_SEND_SE_IMM = 0xd, IW_OP_ND_WRITE_IMM = 0xe, IW_OP_ND_WRITE_SE_IMM = 0xf,
    /* netdirect's remote atomic, between netdirect peers only, in the slot RFC 7306 gives
     * its Atomic Request (docs/design-iwarp.md, "Atomics"): a Read Request on the Read
     * queue (its MSN, an IRD slot) of 8 bytes, followed by the operation and its operands;
     * the answer is an ordinary Read Response of the target's 8 bytes as they were. */
    IW_OP_ND_ATOMIC_REQ = 0xa,
};

#define IW_DDP_T 0x80u
#define IW_DDP_L 0x40u
#define IW_DDP_VERSION 1u
#define IW_RDMAP_VERSION 1u
#define IW_QN_SEND 0u
#define IW_QN_READ 1u
#define IW_QN_TERM 2u

#define IW_HDR_TAGGED 14u           /* ULPDU bytes of a tagged header */
#define IW_HDR_UNTAGGED 18u
#define IW_HDR_READ_REQ 46u         /* untagged + the 28-byte read request body */
#define IW_HDR_ATOMIC_REQ 66u       /* a read request + operation (4) and two operands (8 each) */
#define IW_HDR_TERM 22u             /* untagged + the terminate control word */
#define IW_MAX_HDR 80u              /* the largest header we parse, attachments included */
#define IW_FPDU_MAX_ULPDU 65535u
#define IW_TERM_ATTACH_MAX 48u

enum { IW_ATOMIC_FETCH_ADD = 0, IW_ATOMIC_CMP_SWAP = 1 };

struct iw_read_req {
    uint32_t sink_stag;
    uint64_t sink_to;
    uint32_t size;
    uint32_t src_stag;
    uint64_t src_to;
};

/* The Terminate control word and what came with it (RFC 5040 §4.8). */
struct iw_term {
    uint8_t layer, etype, ecode;
    bool m, d, r;                   /* segment length / DDP header / RDMAP header attached */
    bool siw_order;                 /* parsed from siw's little-endian bit-field layout */
    uint16_t attach_len;
    uint8_t attach[IW_TERM_ATTACH_MAX];
};

/* One FPDU header, decoded. */
struct iw_hdr {
    uint16_t ulpdu_len;             /* header + payload, the MPA length field */
    uint8_t opcode;
    bool tagged, last;
    uint8_t ddp_version, rdmap_version;
    uint32_t stag;                  /* tagged: sink STag */
    uint64_t to;                    /* tagged: tagged offset */
    uint32_t inval_stag;            /* untagged: RsvdULP (Invalidate STag for 4/6) */
    uint32_t qn, msn, mo;           /* untagged */
    uint16_t hdr_len;               /* bytes of the header within the ULPDU */
    struct iw_read_req rr;          /* opcode READ_REQ, ND_ATOMIC_REQ */
    uint32_t atomic_op;             /* ND_ATOMIC_REQ: IW_ATOMIC_FETCH_ADD or IW_ATOMIC_CMP_SWAP */
    uint64_t add_or_cmp, swap;      /* ND_ATOMIC_REQ: its operands */
    struct iw_term term;            /* opcode TERMINATE; last: parsing leaves it alone otherwise */
};

/* Header bytes (within the ULPDU) an FPDU with control word @ctrl carries; 0 if unknown. */
uint16_t iw_hdr_len_for(uint8_t ctrl0, uint8_t ctrl1);
/*
 * iw_hdr_parse - decode the header of the FPDU whose first @len bytes (MPA length field
 * included) are in @buf. Returns the header's length counted from the length field (2 +
 * hdr_len) when complete, 0 when more bytes are needed, -1 when the header is malformed
 * (unknown layout, ULPDU shorter than its header). Versions and opcode ranges are left for
 * the caller to check, so that it can answer each with the right Terminate.
 */
int iw_hdr_parse(const uint8_t *buf, size_t len, struct iw_hdr *h);
/* Encode @h (length field first); returns 2 + hdr_len. @h->ulpdu_len must be set. */
size_t iw_hdr_encode(uint8_t *out, const struct iw_hdr *h);

/* Pad bytes after a ULPDU of @ulpdu_len bytes, so that the CRC is 4-byte aligned. */
static inline uint32_t iw_pad(uint32_t ulpdu_len)
{
    return (uint32_t)(-(int32_t)(2 + ulpdu_len)) & 3u;
}
/* Whole FPDU bytes on the wire. */
static inline uint32_t iw_fpdu_len(uint32_t ulpdu_len)
{
    return 2 + ulpdu_len + iw_pad(ulpdu_len) + 4;
}

/* Terminate codes we emit (layer << 8 | etype << 4 ... kept as three fields). */
enum { IW_LAYER_RDMAP = 0, IW_LAYER_DDP = 1, IW_LAYER_LLP = 2 };
enum { IW_RDMAP_ET_CATASTROPHIC = 0, IW_RDMAP_ET_PROTECTION = 1, IW_RDMAP_ET_OPERATION = 2 };
enum { IW_DDP_ET_CATASTROPHIC = 0, IW_DDP_ET_TAGGED = 1, IW_DDP_ET_UNTAGGED = 2 };

/* Build a complete Terminate FPDU (RFC layout, untagged header QN 2 MSN 1 MO 0) with the
 * optional attachment; returns its length (CRC field zero; the caller fills it). */
size_t iw_term_encode(uint8_t *out, const struct iw_term *t);
/* Attach the header of the offending segment @h (payload @plen bytes) to @t, as RFC 5040
 * §4.8 lays it out: segment length, DDP header, and the RDMAP header of a Read Request. */
void iw_term_attach(struct iw_term *t, const struct iw_hdr *h, uint32_t plen);
/* Decode the DDP header attached to a received Terminate into @h (tagged: stag/to;
 * untagged: qn/msn/mo). false when none is attached or it is too short to read. */
bool iw_term_offender(const struct iw_term *t, struct iw_hdr *h);

/* Store/load big-endian fields. */
static inline void iw_put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static inline void iw_put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}
static inline void iw_put64(uint8_t *p, uint64_t v) { iw_put32(p, (uint32_t)(v >> 32)); iw_put32(p + 4, (uint32_t)v); }
static inline uint16_t iw_get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline uint32_t iw_get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint64_t iw_get64(const uint8_t *p) { return (uint64_t)iw_get32(p) << 32 | iw_get32(p + 4); }
static inline void iw_put_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}
static inline uint32_t iw_get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/*
 * A header's pieces at their offsets (@out at the MPA length field), shared by
 * iw_hdr_encode and the data path's writers below, which write a header straight from a
 * request's fields with no decoded header in between. @plen is the payload that follows;
 * each writer returns 2 + the header's length.
 */
static inline void iw_put_ctrl(uint8_t *out, bool tagged, bool last, uint8_t ddp_version, uint8_t rdmap_version,
                               uint8_t opcode, uint32_t ulpdu)
{
    iw_put16(out, (uint16_t)ulpdu);
    out[2] = (uint8_t)((tagged ? IW_DDP_T : 0) | (last ? IW_DDP_L : 0) | (ddp_version & 3));
    out[3] = (uint8_t)(rdmap_version << 6 | (opcode & 0x0f));
}

static inline void iw_put_tagged_fields(uint8_t *out, uint32_t stag, uint64_t to)
{
    iw_put32(out + 4, stag);
    iw_put64(out + 8, to);
}

/* RsvdULP (the Invalidate STag of Sends with Invalidate), QN, MSN, MO. */
static inline void iw_put_untagged_fields(uint8_t *out, uint32_t rsvd_ulp, uint32_t qn, uint32_t msn, uint32_t mo)
{
    iw_put32(out + 4, rsvd_ulp);
    iw_put32(out + 8, qn);
    iw_put32(out + 12, msn);
    iw_put32(out + 16, mo);
}

static inline void iw_put_read_req_fields(uint8_t *out, const struct iw_read_req *rr)
{
    iw_put32(out + 20, rr->sink_stag);
    iw_put64(out + 24, rr->sink_to);
    iw_put32(out + 32, rr->size);
    iw_put32(out + 36, rr->src_stag);
    iw_put64(out + 40, rr->src_to);
}

/* A Send of any of the four kinds, ours (versions 1, RsvdULP 0). */
static inline size_t iw_encode_untagged(uint8_t *out, uint8_t opcode, bool last, uint32_t qn, uint32_t msn,
                                        uint32_t mo, uint32_t plen)
{
    iw_put_ctrl(out, false, last, IW_DDP_VERSION, IW_RDMAP_VERSION, opcode, IW_HDR_UNTAGGED + plen);
    iw_put_untagged_fields(out, 0, qn, msn, mo);
    return 2 + IW_HDR_UNTAGGED;
}

/* The same with the 32-bit field after the control word set (immediate data). */
static inline size_t iw_encode_untagged_imm(uint8_t *out, uint8_t opcode, bool last, uint32_t qn, uint32_t msn,
                                            uint32_t mo, uint32_t plen, uint32_t imm)
{
    iw_put_ctrl(out, false, last, IW_DDP_VERSION, IW_RDMAP_VERSION, opcode, IW_HDR_UNTAGGED + plen);
    iw_put_untagged_fields(out, imm, qn, msn, mo);
    return 2 + IW_HDR_UNTAGGED;
}

/* A Write or Read Response: sink STag and tagged offset. */
static inline size_t iw_encode_tagged(uint8_t *out, uint8_t opcode, bool last, uint32_t stag, uint64_t to,
                                      uint32_t plen)
{
    iw_put_ctrl(out, true, last, IW_DDP_VERSION, IW_RDMAP_VERSION, opcode, IW_HDR_TAGGED + plen);
    iw_put_tagged_fields(out, stag, to);
    return 2 + IW_HDR_TAGGED;
}

static inline void iw_put_atomic_fields(uint8_t *out, uint32_t op, uint64_t add_or_cmp, uint64_t swap)
{
    iw_put32(out + 48, op);
    iw_put64(out + 52, add_or_cmp);
    iw_put64(out + 60, swap);
}

/* An atomic (netdirect's): a Read Request of 8 bytes with the operation behind it. */
static inline size_t iw_encode_atomic_req(uint8_t *out, uint32_t msn, const struct iw_read_req *rr, uint32_t op,
                                          uint64_t add_or_cmp, uint64_t swap)
{
    iw_put_ctrl(out, false, true, IW_DDP_VERSION, IW_RDMAP_VERSION, IW_OP_ND_ATOMIC_REQ, IW_HDR_ATOMIC_REQ);
    iw_put_untagged_fields(out, 0, IW_QN_READ, msn, 0);
    iw_put_read_req_fields(out, rr);
    iw_put_atomic_fields(out, op, add_or_cmp, swap);
    return 2 + IW_HDR_ATOMIC_REQ;
}

/* A Read Request (QN 1, MO 0, always the last and only segment of its message). */
static inline size_t iw_encode_read_req(uint8_t *out, uint32_t msn, const struct iw_read_req *rr)
{
    iw_put_ctrl(out, false, true, IW_DDP_VERSION, IW_RDMAP_VERSION, IW_OP_READ_REQ, IW_HDR_READ_REQ);
    iw_put_untagged_fields(out, 0, IW_QN_READ, msn, 0);
    iw_put_read_req_fields(out, rr);
    return 2 + IW_HDR_READ_REQ;
}

#endif
