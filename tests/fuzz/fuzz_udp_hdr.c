// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the udp transport's header parser on datagrams anyone may send to a UD
 * QP's port. Whatever the bytes: no read outside the input, a length within it, and every
 * header that parses re-encodes to the bytes it came from (the reserved bits aside).
 */
#include <netdirect/netdirect.h>
#include "transports/udp/udp.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct udp_hdr h;
    uint8_t out[UDP_HDR_MAX], grh[40];
    int n = udp_hdr_parse(data, size, &h);

    if (n < 0)
        return 0;
    if ((size_t)n > size || (n != 20 && n != 24) || h.has_imm != (n == 24))
        abort();
    if (udp_hdr_build(out, &h) != (uint32_t)n || out[0] != data[0] || memcmp(out + 12, data + 12, 4) ||
        (h.has_imm && memcmp(out + 20, data + 20, 4)))
        abort();
    /* The GRH of a datagram from and to addresses the bytes name. */
    struct sockaddr_in a = { .sin_family = AF_INET };

    memcpy(&a.sin_addr, data + 12, 4);
    udp_grh_build(grh, (struct sockaddr *)&a, (struct sockaddr *)&a, (uint32_t)size);
    if (grh[20] != 0x45)
        abort();
    return 0;
}
