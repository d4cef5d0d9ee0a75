/* SPDX-License-Identifier: MIT */
/*
 * Completion rings: the layout that a producer, possibly in another process, writes and
 * a CQ consumes. Each entry is one cache line whose sequence word, written last, marks
 * it valid: a consumer that polls touches one line per completion, and a message of up
 * to ND_CQE_INLINE_MAX bytes travels inside its completion. Everything here lives in
 * memory the producer can scribble on, so the consumer copies each entry once and
 * validates the copy (see docs/design-cq.md).
 */
#ifndef ND_RING_H
#define ND_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Arm word encoding: generation << 2 | type. The consumer bumps the generation on every arm. */
enum nd_arm_type { ND_ARM_NONE = 0, ND_ARM_SOLICITED = 1, ND_ARM_ANY = 2 };
#define ND_ARM_WORD(gen, type) (((uint32_t)(gen) << 2) | (uint32_t)(type))
#define ND_ARM_TYPE(word) ((word) & 3u)
#define ND_ARM_GEN(word) ((word) >> 2)

#define ND_CQE_SOLICITED 0x1u
#define ND_CQE_INLINE 0x2u          /* the message is in the receiver's slot, not yet placed */
#define ND_CQE_INLINE_DATA 0x4u     /* the message is in data[] of this entry */

#define ND_CQE_IMM 0x8u             /* immediate data in the last 4 bytes of data[] */
#define ND_CQE_RDMA_IMM 0x10u       /* the receive was consumed by an RDMA Write with immediate */
#define ND_CQE_INV 0x20u            /* Send with Invalidate: the STag, where immediate data goes */
#define ND_CQE_INV_ASK 0x40u        /* ... which the receiver must still invalidate (shm) */
/* The receive's buffers were not writable when the message came: nothing was placed, and
 * the receive fails as a local protection error (status 0, bytes 0). */
#define ND_CQE_LOC_PROT 0x80u

#define ND_CQE_INLINE_MAX 36u
/* A message that rides in an entry with immediate data leaves it the last 4 bytes. */
#define ND_CQE_IMM_INLINE_MAX (ND_CQE_INLINE_MAX - 4u)

/* One completion as written by a producer: 64 bytes, no pointers. */
struct nd_cqe {
    uint32_t seq;               /* index + 1 once valid; stored last, with release order */
    uint32_t wr_index;          /* the request's index, validated by the ring's owner */
    int32_t status;             /* the core's status (core.h) */
    uint32_t bytes;
    uint8_t type;               /* nd_request_type */
    uint8_t flags;              /* ND_CQE_* */
    uint16_t inline_len;
    uint32_t credit_posted;     /* piggyback: receives the producer's side has posted */
    uint32_t credit_consumed;   /* piggyback: entries the producer's side consumed of the reverse ring */
    uint8_t data[ND_CQE_INLINE_MAX];
};

_Static_assert(sizeof(struct nd_cqe) == 64, "a completion is one cache line");

/*
 * Ring header. prod is a hint the producer keeps for counting (overrun checks, flushes);
 * validity comes from each entry's seq. cons is published by the consumer when it moves.
 * signalled_gen is the producer's own record of the arm generation it last signalled, so
 * a ring signals at most once per arm.
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
    uint32_t cons_seen;             /* the consumer index as last learned: free space */
    struct nd_ring_hdr *hdr;
    struct nd_cqe *ents;
    uint32_t mask;                  /* entries - 1, a power of two minus one */
    const _Atomic uint32_t *arm;
    int signal_fd;
};

/*
 * nd_ring_produce - publish @cqe (its seq is filled in here). Returns 0, or -1 when the
 * ring is full (the caller treats it as a broken connection). Signals the CQ (one eventfd
 * write) only when it is armed for this kind of entry and this ring has not yet signalled
 * the current arm.
 */
int nd_ring_produce(struct nd_ring_producer *p, const struct nd_cqe *cqe);

/*
 * The same in two steps, for the data path: nd_ring_next gives the next entry (NULL when
 * the ring is full), the caller fills every field but seq in place with nd_cqe_set, and
 * nd_ring_commit publishes it as nd_ring_produce does. An entry built on the stack and
 * copied costs a store-forwarding stall per 16-byte piece (its fields are narrow stores,
 * the copy wide loads).
 */
struct nd_cqe *nd_ring_next(struct nd_ring_producer *p);
void nd_ring_commit(struct nd_ring_producer *p, struct nd_cqe *slot);

/* Every field of @slot but seq and data[]. */
static inline void nd_cqe_set(struct nd_cqe *slot, uint32_t wr_index, int32_t status, uint32_t bytes, uint8_t type,
                              uint8_t flags, uint32_t credit_posted, uint32_t credit_consumed)
{
    slot->wr_index = wr_index;
    slot->status = status;
    slot->bytes = bytes;
    slot->type = type;
    slot->flags = flags;
    slot->inline_len = 0;
    slot->credit_posted = credit_posted;
    slot->credit_consumed = credit_consumed;
}

/* Immediate data as the sender gave it (verbs: already in network order), or the STag of a
 * Send with Invalidate, in data[]. */
static inline void nd_cqe_set_imm(struct nd_cqe *slot, uint32_t imm)
{
    __builtin_memcpy(slot->data + ND_CQE_IMM_INLINE_MAX, &imm, sizeof(imm));
}

static inline uint32_t nd_cqe_imm(const struct nd_cqe *e)
{
    uint32_t imm;

    __builtin_memcpy(&imm, e->data + ND_CQE_IMM_INLINE_MAX, sizeof(imm));
    return imm;
}

/* Learn a newer consumer index (piggybacked by the peer); never moves backwards. */
static inline void nd_ring_learn_cons(struct nd_ring_producer *p, uint32_t cons)
{
    if ((int32_t)(cons - p->cons_seen) > 0 && cons - p->cons_seen <= p->prod - p->cons_seen)
        p->cons_seen = cons;
}

/* Is entry @index valid (written for this lap)? */
static inline bool nd_cqe_valid(const struct nd_cqe *ents, uint32_t mask, uint32_t index)
{
    return __atomic_load_n(&ents[index & mask].seq, __ATOMIC_ACQUIRE) == index + 1;
}

/* The first index at or after @from whose entry is not valid yet (at most a lap on). */
static inline uint32_t nd_ring_valid_end(const struct nd_cqe *ents, uint32_t mask, uint32_t from)
{
    uint32_t i = from;

    while (i - from <= mask && nd_cqe_valid(ents, mask, i))
        i++;
    return i;
}

static inline size_t nd_ring_bytes(uint32_t entries)
{
    return sizeof(struct nd_ring_hdr) + (size_t)entries * sizeof(struct nd_cqe);
}

#endif
