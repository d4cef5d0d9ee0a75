// SPDX-License-Identifier: MIT
/*
 * Registered ordinary memory becomes transparent huge pages after Register returns
 * (ND_MR_HUGE_PAGES, src/core/hugepages.c): a region registered with the knob on gets all
 * its whole 2 MiB blocks collapsed, one registered with it at 0 keeps its 4 KiB pages, a
 * region whose first block has no page resident gets every other block and that one is
 * not populated; all keep their bytes. Regions deregistered at once and an adapter
 * closed right after, while the worker may be inside a block, neither hang nor lose data. The thread blocks the
 * application's signals. Skips (77) where the kernel cannot collapse
 * (before 6.1) or has no huge page to give.
 */
#include "t_proc.h"
#include "nd_smaps.h"

#include <errno.h>
#include <sys/mman.h>
#include <sys/prctl.h>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
#define MIB ((size_t)1 << 20)
#define REGION (10 * MIB)
#define BIG (64 * MIB)

/* Can this kernel collapse at all, here and now? */
static void probe_collapse(void)
{
    uint8_t *scratch = mmap(NULL, 4 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    CHECK(scratch != MAP_FAILED);
    memset(scratch, 1, 4 * MIB);
    if (madvise(tool_huge_align_up(scratch), 2 * MIB, MADV_COLLAPSE) != 0) {
        fprintf(stderr, "skip: MADV_COLLAPSE: %s\n", strerror(errno));
        exit(T_SKIP);
    }
    munmap(scratch, 4 * MIB);
}

static void fill(uint8_t *p, size_t len, uint8_t seed)
{
    for (size_t i = 0; i < len; i++)
        p[i] = (uint8_t)(i * 7 + seed + (i >> 12));
}

static bool intact(const uint8_t *p, size_t len, uint8_t seed)
{
    for (size_t i = 0; i < len; i++)
        if (p[i] != (uint8_t)(i * 7 + seed + (i >> 12)))
            return false;
    return true;
}

static nd_mr *register_with(nd_adapter *a, nd_port *port, const char *knob, void *buf, size_t len)
{
    nd_overlapped ov = { 0 };
    nd_mr *mr;

    CHECK(setenv("ND_MR_HUGE_PAGES", knob, 1) == 0);
    CHECK_ST(nd_adapter_create_memory_region(a, port, &mr), ND_SUCCESS);
    CHECK_ST(nd_mr_register(mr, buf, len, ND_MR_FLAG_ALLOW_REMOTE_WRITE, &ov), ND_SUCCESS);
    return mr;
}

/* Regions in mappings of their own (a guard page between them keeps their VMAs apart),
 * faulted in as 4 KiB pages whatever the system's THP setting. */
static uint8_t *map_regions(size_t len, int n)
{
    size_t stride = len + 4096;
    uint8_t *base = mmap(NULL, stride * (size_t)n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    CHECK(base != MAP_FAILED);
    CHECK(prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) == 0);
    for (int i = 0; i < n; i++) {
        fill(base + stride * (size_t)i, len, (uint8_t)i);
        CHECK(mprotect(base + stride * (size_t)i + len, 4096, PROT_NONE) == 0);
    }
    CHECK(prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0) == 0);
    for (int i = 0; i < n; i++)
        CHECK(tool_huge_kib(base + stride * (size_t)i) == 0);
    return base;
}

int main(void)
{
    probe_collapse();
    nd_adapter *a = t_open_loopback();
    nd_port *port;
    uint8_t *base = map_regions(REGION, 3), *off = base, *sparse = base + REGION + 4096;
    uint8_t *on = base + 2 * (REGION + 4096), *hole = tool_huge_align_up(sparse);
    long blocks_kib = tool_whole_blocks_kib(on, REGION);

    CHECK(madvise(hole, 2 * MIB, MADV_DONTNEED) == 0);     /* reads as zeros from now on */
    CHECK_ST(nd_port_create(&port), ND_SUCCESS);
    /* Jobs run in order: once the last region is done, the others would have been too. */
    nd_mr *mr_off = register_with(a, port, "0", off, REGION);
    nd_mr *mr_sparse = register_with(a, port, "1", sparse, REGION);
    nd_mr *mr_on = register_with(a, port, "1", on, REGION);
    long got = tool_wait_huge_kib(on, blocks_kib, 20000);
    if (got < blocks_kib) {
        fprintf(stderr, "registered region: %ld of %ld KiB huge pages after 20 s\n", got, blocks_kib);
        return 1;
    }
    CHECK(t_library_threads_block_signals() >= 1);     /* nd-hugepages */
    CHECK(tool_huge_kib(off) == 0);
    CHECK(tool_huge_kib(sparse) == tool_whole_blocks_kib(sparse, REGION) - 2048);
    for (size_t i = 0; i < 2 * MIB; i++)
        CHECK(hole[i] == 0);
    fill(hole, 2 * MIB, (uint8_t)(1 + (hole - sparse) * 7 + ((hole - sparse) >> 12)));
    CHECK(intact(off, REGION, 0) && intact(sparse, REGION, 1) && intact(on, REGION, 2));
    CHECK_ST(nd_mr_deregister(mr_on, &(nd_overlapped){ 0 }), ND_SUCCESS);
    CHECK_ST(nd_mr_close(mr_on), ND_SUCCESS);
    CHECK_ST(nd_mr_close(mr_sparse), ND_SUCCESS);
    CHECK_ST(nd_mr_close(mr_off), ND_SUCCESS);
    CHECK(intact(off, REGION, 0) && intact(sparse, REGION, 1) && intact(on, REGION, 2));

    /* Work withdrawn at once (a region's MR holds the adapter, so the queue is empty when
     * the adapter goes; the worker may still be in a block of the last region). */
    uint8_t *big = map_regions(BIG, 2);
    nd_mr *gone = register_with(a, port, "1", big, BIG);
    nd_mr *left = register_with(a, port, "1", big + BIG + 4096, BIG);
    CHECK_ST(nd_mr_close(gone), ND_SUCCESS);
    CHECK_ST(nd_mr_close(left), ND_SUCCESS);
    CHECK_ST(nd_adapter_close(a), ND_SUCCESS);
    CHECK_ST(nd_port_close(port), ND_SUCCESS);
    CHECK(intact(big, BIG, 0) && intact(big + BIG + 4096, BIG, 1));
    munmap(base, 3 * (REGION + 4096));
    munmap(big, 2 * (BIG + 4096));
    return 0;
}
