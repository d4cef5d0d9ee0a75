/* SPDX-License-Identifier: MIT */
/* The CQ as the transports see it: rings to attach, an arm word and a signal to hand out. */
#ifndef ND_CQ_INT_H
#define ND_CQ_INT_H

#include "core.h"
#include "lock.h"
#include "ring.h"

#include <stdio.h>

struct nd_cq_src;

/* What the ring's owner says of one entry it was handed. */
enum nd_xlate {
    ND_XLATE_OK,        /* a result was written: consume the entry */
    ND_XLATE_SKIP,      /* stale (superseded): consume it, no result */
    ND_XLATE_DEFER,     /* not yet: another ring must deliver first; stop here for now */
    ND_XLATE_KEEP,      /* a result was written for an earlier request: offer this entry again */
    ND_XLATE_BAD,       /* impossible: the ring is broken */
};

struct nd_cq_src_ops {
    /*
     * Turn a copied entry into a result using the owner's private request table: the
     * index must be in range and in order, the byte count possible, the status one a
     * completion may carry. Called with the CQ lock held (never the QP lock first).
     */
    enum nd_xlate (*translate)(void *ctx, const struct nd_cqe *entry, nd_result *result);
    /* Optional: an entry translated ND_XLATE_OK is consumed and its consumer index is
     * published; only now may the owner free the request it completed. Freed earlier, a
     * post on another thread could complete into a ring that still looks full. */
    void (*retire)(void *ctx, const struct nd_cqe *entry);
    /* The ring broke the protocol. Called with the CQ lock held: must not call into the CQ. */
    void (*broken)(void *ctx);
    /* Optional: let the owner move deferred work before the CQ looks (CQ lock held).
     * Returns whether it may have produced entries. */
    bool (*progress)(void *ctx);
    /* Optional: the poller is about to sleep; nothing may wait for its next poll (CQ lock held). */
    void (*idle)(void *ctx);
    /* Optional: the CQ failed (overrun, catastrophic error); its queue pairs become
     * unusable. Called with the CQ lock held, once per ring. */
    void (*cq_failed)(void *ctx, int status);
};

struct nd_cq {
    uint32_t magic;
    struct nd_adapter *adapter;
    struct nd_ovobj ov;             /* the port and the pending notifies */
    struct nd_lock lock;
    uint32_t depth;
    uint16_t group;
    uintptr_t affinity;
    int error;                /* sticky; 0 while healthy */
    _Atomic uint32_t *arm;          /* in the adapter's shared region; producers read it */
    uint32_t arm_slot;
    uint32_t arm_gen;
    uint32_t n_any, n_sol;          /* pending notifies by type */
    int signal_fd;                  /* eventfd: producers write it, the port polls it */
    uint64_t serial;                /* unique in this process (with nd_process_nonce: on the host) */
    uint32_t port_source;
    atomic_uint ov_waiters;         /* threads blocked in nd_get_overlapped_result */
    atomic_uint users;              /* queue pairs using this CQ */
    struct nd_cq_src **src;
    uint32_t nsrc, cap, next_scan;
    uint32_t ndefer_capable;        /* rings whose owner may defer (queue pairs) */
    bool deferred;                  /* a ring deferred during this GetResults */
    uint32_t full_polls;            /* GetResults calls that filled their array */
    uint32_t n_err;                 /* pending ERRORS notifies: GetResults checks for an overrun */
    /* Results of rings detached with entries left (a queue pair closed with requests
     * outstanding: its flushes), returned before anything else; under the lock. */
    nd_result *orphans;
    uint32_t orphan_head, norphans, orphan_cap, orphans_reported;
    struct nd_mem_user mem_user;    /* scatters into receives: Deregister waits it out */
    /* Set only inside nd_cq_get_wc (under the lock): the results being written
     * are struct nd_wc, whose verbs fields the translations fill. An ND poll leaves it
     * false and pays nothing. */
    bool wants_wc;
};

/* The completion of result @r of the poll under way, for its verbs fields; NULL for an ND
 * poll or a salvage (whose results have none). */
static inline struct nd_wc *nd_cq_wc_of(const struct nd_cq *cq, nd_result *r)
{
    return cq->wants_wc ? (struct nd_wc *)r : NULL;
}

int nd_cq_create(struct nd_adapter *a, struct nd_port *port, uint32_t depth, uint16_t group,
                       uintptr_t affinity, struct nd_cq **out);

/* Attach a ring of @entries (a power of two) whose producer may live in another process. */
int nd_cq_attach(struct nd_cq *cq, struct nd_ring_hdr *hdr, const struct nd_cqe *ents,
                       uint32_t entries, const struct nd_cq_src_ops *ops, void *ctx,
                       struct nd_cq_src **src);
/* Detach a ring. Its entries not yet returned are translated now (the owner's request
 * table is still there) and kept by the CQ for GetResults; an armed CQ is signalled. */
void nd_cq_detach(struct nd_cq *cq, struct nd_cq_src *src);

/* A producer in this process for a ring attached to @cq. */
void nd_cq_local_producer(struct nd_cq *cq, struct nd_ring_hdr *hdr, struct nd_cqe *ents,
                          uint32_t entries, struct nd_ring_producer *p);

/* Break the CQ with a sticky error (catastrophic error, overrun): every notify completes with it. */
void nd_cq_fail(struct nd_cq *cq, int status);
void nd_cq_debug_dump(struct nd_cq *cq, FILE *f);

#endif
