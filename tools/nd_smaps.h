/* SPDX-License-Identifier: MIT */
/* How much of a mapping is transparent huge pages (tools, benchmarks and tests). */
#ifndef ND_SMAPS_H
#define ND_SMAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define TOOL_HUGE_BYTES ((uintptr_t)2 << 20)

/* The first 2 MiB boundary at or after @p. */
static inline uint8_t *tool_huge_align_up(const void *p)
{
    return (uint8_t *)(((uintptr_t)p + TOOL_HUGE_BYTES - 1) & ~(TOOL_HUGE_BYTES - 1));
}

/* KiB in the whole, aligned 2 MiB blocks of [p, p+len): what registration makes huge. */
static inline long tool_whole_blocks_kib(const void *p, size_t len)
{
    uintptr_t start = (uintptr_t)tool_huge_align_up(p), end = ((uintptr_t)p + len) & ~(TOOL_HUGE_BYTES - 1);

    return end > start ? (long)((end - start) / 1024) : 0;
}

/* AnonHugePages of the mapping (VMA) of this process that holds @addr, in KiB; -1 if none. */
static inline long tool_huge_kib(const void *addr)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    bool inside = false;
    long kib = -1;

    if (!f)
        return -1;
    while (kib < 0 && fgets(line, sizeof(line), f)) {
        unsigned long lo, hi;
        long v;

        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
            inside = (uintptr_t)addr >= lo && (uintptr_t)addr < hi;
        else if (inside && sscanf(line, "AnonHugePages: %ld kB", &v) == 1)
            kib = v;
    }
    fclose(f);
    return kib;
}

/* Wait until the mapping holding @addr has @want_kib of huge pages, at most @timeout_ms:
 * the last reading (netdirect collapses registered memory in a thread of its own). */
static inline long tool_wait_huge_kib(const void *addr, long want_kib, unsigned timeout_ms)
{
    struct timespec tick = { 0, 1000000 };
    long kib = tool_huge_kib(addr);

    for (unsigned waited = 0; kib < want_kib && waited < timeout_ms; waited++) {
        nanosleep(&tick, NULL);
        kib = tool_huge_kib(addr);
    }
    return kib;
}

#endif
