/* SPDX-License-Identifier: MIT */
/*
 * Completion rings: the layout that a producer, possibly in another process, writes and
 * a CQ consumes. Everything here lives in memory the producer can scribble on, so the
 * consumer copies each entry once and validates it (see docs/design-cq.md).
 */
#ifndef ND_RING_H
#define ND_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Arm word encoding: generation << 2 | type. The consumer bumps the generation on every arm. */
enum nd_arm_type { ND_ARM_NONE = 0, ND_ARM_SOLICITED = 1, ND_ARM_ANY = 2 };
#define ND_ARM_WORD(gen, type) (((uint32_t)(gen) << 2) | (uint32_t)(type))
#define ND_ARM_TYPE(word) ((word) & 3u)
#define ND_ARM_GEN(word) ((word) >> 2)

#define ND_CQE_SOLICITED 0x1u
#define ND_CQE_INLINE 0x2u       /* the message is in the receiver's slot, not yet placed */

/* One completion as written by a producer: 16 bytes, no pointers. */
struct nd_cqe {
    uint32_t wr_index;      /* the producer-side index of the request, validated by the owner */
    int32_t status;         /* nd_status */
    uint32_t bytes;
    uint8_t type;           /* nd_request_type */
    uint8_t flags;          /* ND_CQE_SOLICITED */
    uint16_t reserved;
};

/*
 * Ring header. Producer and consumer indices sit on separate cache lines; both are
 * free-running 32-bit counters (entries = prod - cons, at most the ring size).
 * signalled_gen is the producer's own record of the arm generation it last signalled,
 * so a ring signals at most once per arm.
 */
struct nd_ring_hdr {
    _Atomic uint32_t prod;
    uint32_t signalled_gen;
    uint8_t pad0[56];
    _Atomic uint32_t cons;
    uint8_t pad1[60];
};

/* What a producer needs: the ring, the CQ's arm word (read-only for a peer) and its eventfd. */
struct nd_ring_producer {
    uint32_t prod;                  /* private copy: the shared one is never read back */
    struct nd_ring_hdr *hdr;
    struct nd_cqe *ents;
    uint32_t mask;                  /* entries - 1, a power of two minus one */
    const _Atomic uint32_t *arm;
    int signal_fd;
};

/*
 * nd_ring_produce - publish @cqe. Returns 0, -1 when the ring is full or its consumer
 * index is impossible (a broken or hostile consumer: the caller ends the connection).
 * Signals the CQ (one eventfd write) only when it is armed for this kind of entry and
 * this ring has not yet signalled the current arm.
 */
int nd_ring_produce(struct nd_ring_producer *p, const struct nd_cqe *cqe);

static inline size_t nd_ring_bytes(uint32_t entries)
{
    return sizeof(struct nd_ring_hdr) + (size_t)entries * sizeof(struct nd_cqe);
}

#endif
