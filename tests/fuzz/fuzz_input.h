/* SPDX-License-Identifier: MIT */
/* Reading a fuzz input as a stream of big-endian fields; past its end, fields read as 0. */
#ifndef FUZZ_INPUT_H
#define FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>

struct input {
    const uint8_t *p;
    size_t left;
};

static inline uint32_t take(struct input *in, unsigned bytes)
{
    uint32_t v = 0;

    while (bytes--) {
        v = v << 8 | (in->left ? *in->p : 0);
        if (in->left) {
            in->p++;
            in->left--;
        }
    }
    return v;
}

#endif
