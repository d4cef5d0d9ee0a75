/* SPDX-License-Identifier: MIT */
/*
 * A raw-TCP iwarp peer for tests that need bytes no netdirect peer would send: it dials,
 * speaks MPA as siw does, and frames FPDUs itself. Internal tests only (wire.h).
 */
#ifndef T_IWPEER_H
#define T_IWPEER_H

#include "t_conn.h"
#include <netdirect/netdirect.h>
#include "transports/iwarp/wire.h"

#include <netinet/tcp.h>

static inline int t_iw_dial(uint16_t port)
{
    struct sockaddr_in sin = t_ipv4(t_my_ip(), port);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

    CHECK(fd >= 0 && connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

static inline void t_iw_read_exact(int fd, uint8_t *p, size_t n)
{
    while (n) {
        ssize_t r = read(fd, p, n);

        CHECK(r > 0);
        p += r;
        n -= (size_t)r;
    }
}

/* MPA request (rev 2, the RFC 6581 block, no P2P), then the reply. With @nd the request
 * offers netdirect's extensions, as a netdirect peer's does (and the reply must agree). */
static inline void t_iw_handshake_as(int fd, bool crc, bool nd)
{
    struct mpa_frame f = { .reply = false, .flags = (crc ? MPA_FLAG_CRC : 0) | (nd ? MPA_FLAG_ND_OFFER : 0),
                           .rev = 2, .enhanced = true, .ird_word = 8, .ord_word = 8 };
    uint8_t buf[MPA_FRAME_HDR + MPA_MAX_PD_RX];
    size_t n = mpa_encode(buf, sizeof(buf), &f), total;

    CHECK(n && write(fd, buf, n) == (ssize_t)n);
    t_iw_read_exact(fd, buf, MPA_FRAME_HDR);
    total = mpa_frame_len(buf);
    CHECK(total >= MPA_FRAME_HDR && total <= sizeof(buf));
    t_iw_read_exact(fd, buf + MPA_FRAME_HDR, total - MPA_FRAME_HDR);
    CHECK(mpa_parse(buf, total, true, &f) == (int)total && !(f.flags & MPA_FLAG_REJECT));
    CHECK(!!(f.flags & MPA_FLAG_CRC) == crc);
    CHECK(!!(f.flags & MPA_FLAG_ND_AGREE) == nd);
}

/* As siw sends it: no netdirect extensions. */
static inline void t_iw_handshake(int fd, bool crc)
{
    t_iw_handshake_as(fd, crc, false);
}

/* One FPDU: header @h, @plen payload bytes from @payload (NULL: bytes of 0x5a), pad, then
 * the CRC (0 when @crc is off; a wrong one with @bad_crc). Returns the bytes written. */
static inline size_t t_iw_fpdu(uint8_t *out, struct iw_hdr *h, const uint8_t *payload, uint32_t plen, bool crc,
                               bool bad_crc)
{
    size_t n;

    h->ddp_version = IW_DDP_VERSION;
    h->rdmap_version = IW_RDMAP_VERSION;
    h->ulpdu_len = (uint16_t)(iw_hdr_len_for(h->tagged ? IW_DDP_T : 0, h->opcode) + plen);
    n = iw_hdr_encode(out, h);
    if (payload)
        memcpy(out + n, payload, plen);
    else
        memset(out + n, 0x5a, plen);
    n += plen;
    memset(out + n, 0, iw_pad(h->ulpdu_len));
    n += iw_pad(h->ulpdu_len);
    iw_put_le32(out + n, bad_crc ? 0x12345678u : crc ? iw_crc32c(out, n) : 0);
    return n + 4;
}

/* Read what our side sends until a Terminate arrives (into @t); false on a close, or on
 * nothing for 5 s, first. */
static inline bool t_iw_read_terminate(int fd, struct iw_hdr *t)
{
    uint8_t buf[4096];
    size_t have = 0;
    struct pollfd pfd = { .fd = fd, .events = POLLIN };

    while (poll(&pfd, 1, 5000) == 1) {
        ssize_t r = read(fd, buf + have, sizeof(buf) - have);

        if (r <= 0)
            return false;
        have += (size_t)r;
        if (iw_hdr_parse(buf, have, t) > 0)
            return !t->tagged && t->opcode == IW_OP_TERMINATE;
    }
    return false;
}

#endif
