/* SPDX-License-Identifier: MIT */
/* A test completion ring: what a transport's queue pair attaches to a CQ. */
#ifndef T_RING_H
#define T_RING_H

#include "t_util.h"
#include <netdirect/netdirect.h>
#include "core/cq_int.h"

#define T_RING_ENTRIES 64

struct t_ring {
    struct nd_ring_hdr hdr;
    struct nd_cqe ents[T_RING_ENTRIES];
    struct nd_ring_producer prod;
    struct nd_cq_src *src;
    int broken;
};

/* Request contexts are wr_index + 1; indexes of 1000 and above are invalid. */
static inline enum nd_xlate t_ring_translate(void *ctx, const struct nd_cqe *e, nd_result *r)
{
    if (e->wr_index >= 1000 || e->type > ND_REQUEST_TYPE_WRITE)
        return ND_XLATE_BAD;
    r->status = e->status;
    r->bytes_transferred = e->bytes;
    r->qp_context = ctx;
    r->request_context = (void *)(uintptr_t)(e->wr_index + 1);
    r->request_type = (nd_request_type)e->type;
    return ND_XLATE_OK;
}

static inline void t_ring_broken(void *ctx)
{
    ((struct t_ring *)ctx)->broken++;
}

static const struct nd_cq_src_ops t_ring_ops = {
    .translate = t_ring_translate,
    .broken = t_ring_broken,
};

static inline struct t_ring *t_ring_attach(nd_cq *cq)
{
    struct t_ring *r = aligned_alloc(64, (sizeof(struct t_ring) + 63) & ~(size_t)63);

    CHECK(r);
    memset(r, 0, sizeof(*r));
    CHECK_ST(nd_cq_attach(cq, &r->hdr, r->ents, T_RING_ENTRIES, &t_ring_ops, r, &r->src), ND_SUCCESS);
    nd_cq_local_producer(cq, &r->hdr, r->ents, T_RING_ENTRIES, &r->prod);
    return r;
}

static inline void t_ring_put(struct t_ring *r, uint32_t wr, nd_status st, uint32_t bytes, uint8_t type,
                              uint8_t flags)
{
    struct nd_cqe e = { .wr_index = wr, .status = st, .bytes = bytes, .type = type, .flags = flags };

    CHECK(nd_ring_produce(&r->prod, &e) == 0);
}

#endif
