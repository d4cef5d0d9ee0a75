/* SPDX-License-Identifier: MIT */
/* The shared receive queue as a transport consumes it. */
#ifndef ND_SRQ_INT_H
#define ND_SRQ_INT_H

#include "core.h"

struct nd_srq_entry {
    void *request_context;
    uint32_t nsge;
    uint32_t length;            /* sum of the SGE lengths */
    nd_sge *sge;                /* max_request_sge slots */
};

/*
 * nd_srq_take - remove the oldest posted receive into @out (SGEs copied into @sge_buf,
 * which holds max_request_sge entries). Releases the SRQ's notifies when the posted count
 * falls below the threshold. Returns false when the SRQ is empty.
 */
bool nd_srq_take(nd_srq *srq, struct nd_srq_entry *out, nd_sge *sge_buf);
uint32_t nd_srq_posted(nd_srq *srq);

#endif
