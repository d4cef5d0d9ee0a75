// SPDX-License-Identifier: MIT
#include "core.h"
#include "ring.h"

#include <string.h>
#include <unistd.h>

static bool arm_wants(uint32_t arm_type, bool solicited, bool failed)
{
    if (arm_type == ND_ARM_ANY)
        return true;
    /* A solicited arm fires on solicited receives and on every error completion (as IB). */
    return arm_type == ND_ARM_SOLICITED && (solicited || failed);
}

struct nd_cqe *nd_ring_next(struct nd_ring_producer *p)
{
    /* Free space from what we know; read the shared consumer index only when it runs out. */
    if (p->prod - p->cons_seen > p->mask) {
        uint32_t cons = atomic_load_explicit(&p->hdr->cons, memory_order_acquire);

        if (p->prod - cons > p->mask)   /* full, or a consumer index that cannot be */
            return NULL;
        p->cons_seen = cons;
    }
    return &p->ents[p->prod & p->mask];
}

void nd_ring_commit(struct nd_ring_producer *p, struct nd_cqe *slot)
{
    struct nd_ring_hdr *hdr = p->hdr;
    uint32_t arm, gen;
    uint64_t one = 1;
    /* Decided from what we wrote, before publishing: a peer's ring is memory that peer may
     * write too, and nothing read from it afterwards is ours. */
    bool solicited = slot->flags & ND_CQE_SOLICITED, failed = slot->status != 0;

    p->prod++;
    atomic_store_explicit(&hdr->prod, p->prod, memory_order_relaxed);
    /*
     * Dekker with nd_cq_notify: we publish then read the arm word, the consumer writes the
     * arm word then looks at the entry, each side with a full barrier in between, so an
     * entry is either found by the consumer's peek or signalled here. The publishing
     * exchange is that barrier on our side (cheaper than a store and a fence).
     */
    __atomic_exchange_n(&slot->seq, p->prod, __ATOMIC_SEQ_CST);
    arm = atomic_load_explicit(p->arm, memory_order_seq_cst);
    if (!arm_wants(ND_ARM_TYPE(arm), solicited, failed))
        return;
    gen = ND_ARM_GEN(arm);
    if (hdr->signalled_gen == gen)
        return;
    hdr->signalled_gen = gen;
    /* A failure is EAGAIN, a saturated counter: the fd is readable already. */
    ssize_t w = write(p->signal_fd, &one, sizeof(one));
    (void)w;
}

int nd_ring_produce(struct nd_ring_producer *p, const struct nd_cqe *cqe)
{
    struct nd_cqe *slot = nd_ring_next(p);

    if (!slot)
        return -1;
    memcpy((uint8_t *)slot + sizeof(slot->seq), (const uint8_t *)cqe + sizeof(cqe->seq),
           sizeof(*cqe) - sizeof(cqe->seq));
    nd_ring_commit(p, slot);
    return 0;
}
