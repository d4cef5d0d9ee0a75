/* SPDX-License-Identifier: MIT */
/*
 * The bounce channel's layout, shared by its two ends (shm_bounce.c) and the agent thread
 * that serves the target's end (shm_agent.c). The target makes the channel and maps it;
 * the initiator maps it too and writes requests and their bytes into it. Neither trusts
 * what the other wrote: the target copies each request out before it reads it and checks
 * it against its own token table; the initiator checks the counters the target moves.
 */
#ifndef ND_SHM_BOUNCE_H
#define ND_SHM_BOUNCE_H

#include "shm.h"
#include "core/mem_int.h"

#include <stdatomic.h>

#define SHM_BOUNCE_MAGIC 0x4e444243u    /* "NDBC" */
#define SHM_BOUNCE_VERSION 1u
#define SHM_BOUNCE_ENTRIES 16u          /* requests in flight; entry i owns chunk i */
#define SHM_BOUNCE_CHUNK (128u << 10)   /* a request's bytes at most */
#define SHM_BOUNCE_REQS_OFF 4096u
#define SHM_BOUNCE_DATA_OFF 8192u
#define SHM_BOUNCE_BYTES ((size_t)SHM_BOUNCE_DATA_OFF + (size_t)SHM_BOUNCE_ENTRIES * SHM_BOUNCE_CHUNK)

struct shm_bounce_hdr {
    uint32_t magic, version, entries, chunk;
    uint8_t pad0[64 - 16];
    /* Each counter on its own line: the initiator writes prod, the target done. */
    _Atomic uint32_t prod;          /* requests written (free-running) */
    uint8_t pad1[64 - 4];
    _Atomic uint32_t done;          /* requests answered, in order */
    uint8_t pad2[64 - 4];
    /* Set by the target's agent before it sleeps; an initiator that finds it set after
     * moving prod clears it and rings the agent's eventfd (each side stores, fences, then
     * loads what the other stored, so a wake-up is never lost). */
    _Atomic uint32_t asleep;
    uint8_t pad3[64 - 4];
};

/* One request, and the target's answer in the same entry (status, old). */
struct shm_bounce_req {
    uint32_t op;                    /* enum shm_bounce_op */
    uint32_t token;
    uint64_t addr;
    uint32_t len;                   /* 1..SHM_BOUNCE_CHUNK; 8 for an atomic */
    uint32_t atomic;                /* ND_REQUEST_TYPE_FETCH_ADD or _CMP_SWAP */
    uint64_t add_or_cmp, swap;
    int32_t status;                 /* 0 or a negative errno */
    uint32_t pad;
    uint64_t old;                   /* an atomic's original value */
    uint8_t pad2[64 - 56];
};

_Static_assert(sizeof(struct shm_bounce_hdr) <= SHM_BOUNCE_REQS_OFF, "the header fits its page");
_Static_assert(sizeof(struct shm_bounce_req) == 64, "a request is a cache line");
_Static_assert(SHM_BOUNCE_REQS_OFF + SHM_BOUNCE_ENTRIES * sizeof(struct shm_bounce_req) <= SHM_BOUNCE_DATA_OFF,
               "the requests fit their page");

/* What the target serves with: its own queue pair's rights, read by the agent. */
struct shm_bounce_rights {
    const struct nd_mtab_entry *mtab;   /* our own token table */
    uint16_t pd, recv_pd;
    const _Atomic uint32_t *no_remote_atomic;
};

/* The target's end of one channel. The agent list and served are the agent's (under its
 * lock); touching is odd while the agent is inside a copy into or out of our registered
 * memory (Deregister's barrier waits it out, shm_bounce_quiesce). */
struct shm_served {
    uint8_t *map;                   /* SHM_BOUNCE_BYTES */
    int fd;                         /* the channel's memfd, published for the peer */
    /* Requests answered (ours, never read back from the map), and whether the peer wrote
     * impossible counters (no more service): written under serving, read by anyone. */
    _Atomic uint32_t served;
    _Atomic bool broken;
    _Atomic uint32_t touching;
    /* Held (1) by whoever serves: the agent, or a thread of ours polling the queue pair's
     * CQ (shm_progress), which does the agent's work when it is there to do it. */
    _Atomic uint32_t serving;
    /* When a poller last came by (nd_now_ns): while one comes by often, the agent leaves
     * the channel to it, neither serving it nor marking it asleep (no wake-ups), so that
     * it does not spin beside a poller for two CPUs' worth of one copy. */
    _Atomic uint64_t polled_ns;
    struct shm_bounce_rights rights;
    struct shm_served *prev, *next;
    uint32_t generation;            /* the agent's when it was added (a fork starts another) */
};

/* A channel made and mapped (not yet served), or NULL; its end. */
struct shm_served *shm_bounce_channel_new(const struct shm_bounce_rights *rights);
void shm_bounce_channel_free(struct shm_served *s);
/* Answer every request written so far (its caller holds serving): how many. */
uint32_t shm_bounce_serve(struct shm_served *s);
/* Does @s hold a request not yet answered? */
bool shm_bounce_pending(const struct shm_served *s);
/* Has a poller come by within SHM_BOUNCE_POLLED_NS of @now? */
#define SHM_BOUNCE_POLLED_NS (1000ull * 1000)
static inline bool shm_bounce_polled(const struct shm_served *s, uint64_t now)
{
    return now - atomic_load_explicit(&s->polled_ns, memory_order_relaxed) < SHM_BOUNCE_POLLED_NS;
}

#endif
