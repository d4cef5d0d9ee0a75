// SPDX-License-Identifier: MIT
#include "core.h"
#include "ring.h"

#include <unistd.h>

static bool arm_wants(uint32_t arm_type, const struct nd_cqe *cqe)
{
    if (arm_type == ND_ARM_ANY)
        return true;
    /* A solicited arm fires on solicited receives and on every error completion (as IB). */
    return arm_type == ND_ARM_SOLICITED &&
           ((cqe->flags & ND_CQE_SOLICITED) || cqe->status != 0);
}

int nd_ring_produce(struct nd_ring_producer *p, const struct nd_cqe *cqe)
{
    struct nd_ring_hdr *hdr = p->hdr;
    uint32_t cons = atomic_load_explicit(&hdr->cons, memory_order_acquire);
    uint32_t arm, gen;
    uint64_t one = 1;

    if (p->prod - cons > p->mask)   /* full, or a consumer index that cannot be */
        return -1;
    p->ents[p->prod & p->mask] = *cqe;
    p->prod++;
    atomic_store_explicit(&hdr->prod, p->prod, memory_order_release);
    /*
     * Dekker with nd_cq_notify: we publish then read the arm word, the consumer writes the
     * arm word then reads prod. With a full fence on both sides at least one of us sees
     * the other, so an entry is either found by the consumer's peek or signalled here.
     */
    atomic_thread_fence(memory_order_seq_cst);
    arm = atomic_load_explicit(p->arm, memory_order_relaxed);
    if (!arm_wants(ND_ARM_TYPE(arm), cqe))
        return 0;
    gen = ND_ARM_GEN(arm);
    if (hdr->signalled_gen == gen)
        return 0;
    hdr->signalled_gen = gen;
    /* EAGAIN means the counter is saturated: the fd is readable already. */
    if (write(p->signal_fd, &one, sizeof(one)) < 0)
        return 0;
    return 0;
}
