// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: what a peer that may not reach our memory writes into the bounce
 * channel we serve for it. The input fills the requests (kind, token, address, length,
 * atomic operands), their chunks and the producer counter, then our agent's serve runs
 * over them, up to three rounds with the counter moved again. The tokens the input picks
 * include real ones: a region registered for everything (atomics too), one without
 * remote rights, one deregistered. Whatever it is: no crash, nothing written outside the region that allows
 * it (guard bytes on both sides stay as they were), and every answer one the initiator
 * knows.
 */
#include <netdirect/netdirect.h>
#include "core/core.h"
#include "transports/shm/shm_bounce.h"
#include "fuzz_input.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#define REGION 65536u
#define GUARD 4096u

static nd_adapter *adapter;
static nd_port *port;
static uint8_t *memory;             /* guard | open region | guard | closed region | guard */
static uint32_t tokens[4];          /* open, closed (no remote rights), revoked, made up */
static _Atomic uint32_t no_atomics;
static nd_mr *kept_regions[2];
static int kept;

static uint32_t register_region(uint8_t *at, uint32_t flags, bool keep)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    nd_mr *mr;
    uint32_t token;

    if (nd_adapter_create_memory_region(adapter, port, &mr) != ND_SUCCESS ||
        nd_mr_register_atomic(mr, at, REGION, flags, keep) != 0)
        abort();
    token = nd_mr_get_remote_token(mr);
    if (keep)
        kept_regions[kept++] = mr;      /* for the whole run */
    else if (nd_mr_deregister(mr, &ov) != ND_SUCCESS || nd_mr_close(mr) != ND_SUCCESS)
        abort();
    return token;
}

static void setup(void)
{
    struct sockaddr_in lo = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

    if (nd_open_adapter_by_address((struct sockaddr *)&lo, sizeof(lo), &adapter) != ND_SUCCESS ||
        nd_port_create(&port) != ND_SUCCESS)
        abort();
    memory = aligned_alloc(4096, 3 * GUARD + 2 * REGION);
    if (!memory)
        abort();
    memset(memory, 0xa5, 3 * GUARD + 2 * REGION);
    tokens[0] = register_region(memory + GUARD, ND_MR_FLAG_ALLOW_LOCAL_WRITE | ND_MR_FLAG_ALLOW_REMOTE_READ |
                                ND_MR_FLAG_ALLOW_REMOTE_WRITE, true);
    tokens[1] = register_region(memory + 2 * GUARD + REGION, 0, true);
    tokens[2] = register_region(memory + 2 * GUARD + REGION, ND_MR_FLAG_ALLOW_REMOTE_WRITE, false);
    tokens[3] = 0x12345678u;
}

/* The guards and the closed region hold what setup wrote. */
static void check_untouched(void)
{
    static const struct { size_t off, len; } kept[] = {
        { 0, GUARD }, { GUARD + REGION, GUARD + REGION + GUARD }, { 3 * GUARD + 2 * REGION - GUARD, GUARD } };

    for (size_t k = 0; k < sizeof(kept) / sizeof(kept[0]); k++)
        for (size_t i = 0; i < kept[k].len; i++)
            if (memory[kept[k].off + i] != 0xa5)
                abort();
}

/* A request as the input makes it: mostly near the open region, sometimes anywhere. */
static void make_request(struct input *in, struct shm_bounce_req *r)
{
    uint32_t how = take(in, 1);

    memset(r, 0, sizeof(*r));
    r->op = how & 0x80 ? take(in, 4) : 1 + how % 4;
    r->token = how & 0x40 ? take(in, 4) : tokens[(how >> 2) % 4];
    r->addr = how & 0x20 ? ((uint64_t)take(in, 4) << 32 | take(in, 4))
                         : (uint64_t)(uintptr_t)memory + take(in, 3) % (3 * GUARD + 2 * REGION);
    r->len = how & 0x10 ? take(in, 4) : take(in, 2) % (REGION + 64);
    r->atomic = take(in, 1) % 10;
    r->add_or_cmp = take(in, 4);
    r->swap = take(in, 4);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool ready;
    struct input in = { data, size };
    struct shm_bounce_rights rights;
    struct shm_served *s;

    if (!ready) {
        setup();
        ready = true;
    }
    rights = (struct shm_bounce_rights){ .mtab = ((struct nd_adapter *)adapter)->mtab,
                                         .no_remote_atomic = &no_atomics };
    atomic_store(&no_atomics, take(&in, 1) & 1);
    s = shm_bounce_channel_new(&rights);
    if (!s)
        abort();
    struct shm_bounce_hdr *h = (struct shm_bounce_hdr *)s->map;
    for (int round = 0; round < 3 && in.left; round++) {
        uint32_t count = take(&in, 1) % (SHM_BOUNCE_ENTRIES + 4);

        for (uint32_t i = 0; i < count && i < SHM_BOUNCE_ENTRIES; i++) {
            uint32_t seq = s->served + i;
            struct shm_bounce_req *r = (struct shm_bounce_req *)(s->map + SHM_BOUNCE_REQS_OFF) + seq % SHM_BOUNCE_ENTRIES;
            make_request(&in, r);
            size_t n = in.left < 256 ? in.left : 256;

            memcpy(s->map + SHM_BOUNCE_DATA_OFF + (size_t)(seq % SHM_BOUNCE_ENTRIES) * SHM_BOUNCE_CHUNK, in.p, n);
        }
        atomic_store(&h->prod, take(&in, 1) & 1 ? take(&in, 4) : s->served + count);
        uint32_t before = s->served, answered = shm_bounce_serve(s);

        for (uint32_t i = 0; i < answered; i++) {
            int32_t st = ((struct shm_bounce_req *)(s->map + SHM_BOUNCE_REQS_OFF))[(before + i) % SHM_BOUNCE_ENTRIES].status;

            if (st != 0 && st != -EFAULT && st != -EINVAL && st != -EBADRQC && st != -EDEADLK)
                abort();
        }
        if (atomic_load(&h->done) != s->served || (s->touching & 1))
            abort();
        check_untouched();
    }
    shm_bounce_channel_free(s);
    return 0;
}
