// SPDX-License-Identifier: MIT
/*
 * nd_copy (src/core/copy.h), the copy of message bytes on the data path: every length
 * from 0 to 200 at every source and destination offset within 8 lands byte for byte,
 * and not a byte before or after the destination range changes.
 */
#include "t_util.h"
#include <netdirect/netdirect.h>
#include "core/copy.h"

#include <stdint.h>

int main(void)
{
    uint8_t src[256], dst[256], want[256];

    for (size_t i = 0; i < sizeof(src); i++)
        src[i] = (uint8_t)(i * 37 + 11);
    for (size_t n = 0; n <= 200; n++)
        for (size_t so = 0; so < 8; so++)
            for (size_t d_off = 0; d_off < 8; d_off++) {
                memset(dst, 0xA5, sizeof(dst));
                memset(want, 0xA5, sizeof(want));
                memcpy(want + 16 + d_off, src + so, n);
                nd_copy(dst + 16 + d_off, src + so, n);
                CHECK(memcmp(dst, want, sizeof(dst)) == 0);
            }
    return 0;
}
