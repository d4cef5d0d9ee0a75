/* SPDX-License-Identifier: MIT */
/*
 * nd_copy: memcpy for message bytes whose length is known only at run time. Messages that
 * ride in a completion entry are a few bytes; for a length bounded that way GCC expands
 * memcpy inline with a `rep movsq` for the middle part, microcoded and slow to start on
 * this CPU even for a count of zero (an 8-byte message took that path twice per hop: the
 * sender's gather and the receiver's scatter). Up to 64 bytes this copies with two
 * overlapping fixed-size moves instead; longer copies are memcpy's.
 */
#ifndef ND_COPY_H
#define ND_COPY_H

#include <stddef.h>
#include <string.h>

static inline void nd_copy(void *dst, const void *src, size_t n)
{
    unsigned char *d = dst;
    const unsigned char *s = src;

    if (n > 64) {
        memcpy(d, s, n);
    } else if (n >= 32) {
        __builtin_memcpy(d, s, 32);
        __builtin_memcpy(d + n - 32, s + n - 32, 32);
    } else if (n >= 16) {
        __builtin_memcpy(d, s, 16);
        __builtin_memcpy(d + n - 16, s + n - 16, 16);
    } else if (n >= 8) {
        __builtin_memcpy(d, s, 8);
        __builtin_memcpy(d + n - 8, s + n - 8, 8);
    } else if (n >= 4) {
        __builtin_memcpy(d, s, 4);
        __builtin_memcpy(d + n - 4, s + n - 4, 4);
    } else if (n) {
        d[0] = s[0];
        d[n / 2] = s[n / 2];
        d[n - 1] = s[n - 1];
    }
}

#endif
