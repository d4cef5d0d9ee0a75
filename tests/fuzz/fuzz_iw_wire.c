// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the iWARP wire parsers on bytes a peer controls. The MPA request and
 * reply parsers, then the input read as a stream of FPDU headers (as the receive path walks
 * it) with the Terminate attachment decoder. Whatever the bytes: no read outside the
 * input, lengths that agree with the buffer, and every header that parses re-encodes to
 * the bytes it came from.
 */
#include <netdirect/netdirect.h>
#include "transports/iwarp/wire.h"

#include <stdlib.h>
#include <string.h>

static void check_mpa(const uint8_t *data, size_t size, bool reply)
{
    struct mpa_frame f;
    int n = mpa_parse(data, size, reply, &f);

    if (n > 0) {
        uint8_t out[20 + 4 + MPA_MAX_PD_RX];
        size_t m;

        if ((size_t)n > size || f.app + f.app_len > data + n || f.rev < 1 || f.rev > 2)
            abort();
        m = mpa_encode(out, sizeof(out), &f);
        if (m != (size_t)n || memcmp(out, data, 16) != 0)
            abort();
    }
}

static void walk_fpdus(const uint8_t *p, size_t len)
{
    while (len >= 4) {
        struct iw_hdr h, o;
        uint8_t out[2 + IW_MAX_HDR];
        int r = iw_hdr_parse(p, len, &h);
        size_t total;

        if (r <= 0)
            return;
        if ((size_t)r > len || h.hdr_len + 2u != (unsigned)r || h.ulpdu_len < h.hdr_len)
            abort();
        if (iw_hdr_encode(out, &h) != (size_t)r)
            abort();
        /* Bytes the parser ignores (reserved bits) may differ; the fields must not. */
        struct iw_hdr again;
        if (iw_hdr_parse(out, (size_t)r, &again) != r || again.opcode != h.opcode || again.stag != h.stag ||
            again.to != h.to || again.msn != h.msn || again.mo != h.mo || again.qn != h.qn)
            abort();
        if (h.opcode == IW_OP_TERMINATE && !h.tagged)
            (void)iw_term_offender(&h.term, &o);
        total = iw_fpdu_len(h.ulpdu_len);
        if (total > len)
            return;
        p += total;
        len -= total;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_mpa(data, size, false);
    check_mpa(data, size, true);
    walk_fpdus(data, size);
    (void)iw_crc32c(data, size);
    if (iw_crc32c_update(~0u, data, size) != iw_crc32c_table(~0u, data, size))
        abort();
    return 0;
}
