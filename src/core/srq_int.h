/* SPDX-License-Identifier: MIT */
/*
 * Shared receive queues. The SRQ owns a region (a memfd) that the peers of every queue
 * pair attached to it map read-write: a ring of posted receive slots, in posting order,
 * and each slot's buffer list. A peer's send claims the oldest posted slot with one
 * compare-and-swap on the ring's head, places the message, and writes the completion into
 * the receiving queue pair's inbound ring naming the slot. The owner's private table
 * keeps each slot's context and state, and trusts nothing it reads back.
 */
#ifndef ND_SRQ_INT_H
#define ND_SRQ_INT_H

#include "qp_int.h"

#define ND_SRQ_MAGIC 0x4e445351u

struct nd_srq_ctl {
    uint32_t magic;
    uint32_t entries;               /* power of two >= depth */
    uint32_t max_sge;
    uint32_t reserved;
    _Atomic uint32_t head;          /* claimed by peers (CAS) */
    uint8_t pad0[44];
    _Atomic uint32_t tail;          /* posted by the owner */
    _Atomic uint32_t waiting;       /* a peer holds a send for want of a receive */
    uint8_t pad1[56];
};

struct nd_srq_layout {
    size_t ring, slots, slot_stride, size;
};

void nd_srq_layout(uint32_t entries, uint32_t max_sge, struct nd_srq_layout *l);

/*
 * nd_srq_claim - (peer side) claim the oldest posted receive of a mapped SRQ region.
 * Returns 1 with *slot, 0 when none is posted, -1 when the ring's indices are impossible.
 */
int nd_srq_claim(struct nd_srq_ctl *ctl, const uint32_t *ring, uint32_t entries, uint32_t *slot);

struct nd_srq_share {
    struct nd_fd_ref region;        /* as peers name it */
    uint32_t entries, max_sge;
};

/* For a connection: the region's descriptor and geometry. */
void nd_srq_export(nd_srq *srq, struct nd_srq_share *out);
uint32_t nd_srq_entries(nd_srq *srq);
uint32_t nd_srq_max_sge(nd_srq *srq);

/* The SRQ's region as a local transport claims from it (the way a same-host peer does). */
struct nd_srq_view {
    uint8_t *region;
    struct nd_srq_layout layout;
    struct nd_srq_ctl *ctl;
    const uint32_t *ring;
    uint32_t entries, max_sge;
};
void nd_srq_view(nd_srq *srq, struct nd_srq_view *v);
/* Its protection domain (verbs; 0 for ND), set before receives are posted. */
void nd_srq_set_pd(nd_srq *srq, uint16_t pd);
uint16_t nd_srq_pd(const nd_srq *srq);
/* Is @srq a live SRQ of adapter @a? */
bool nd_srq_valid_of(const nd_srq *srq, const struct nd_adapter *a);
void nd_srq_attach_qp(nd_srq *srq, int delta);

/*
 * nd_srq_complete - (owner side, CQ lock held) a peer's completion names @slot: check it
 * was posted and claimed, scatter an inline message from @data, fill @r, free the slot.
 * Returns ND_XLATE_OK or ND_XLATE_BAD; *overrun when the receive failed (r->status: the
 * message did not fit, or its buffers are no longer registered): the QP fails.
 */
enum nd_xlate nd_srq_complete(nd_srq *srq, uint32_t slot, const struct nd_cqe *e, const uint8_t *data,
                              nd_result *r, bool *overrun);

#endif
