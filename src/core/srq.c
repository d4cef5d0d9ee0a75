// SPDX-License-Identifier: MIT
/* Shared receive queues: a ring of posted receives and the limit ("threshold") event. */
#include "srq_int.h"

#include <stdlib.h>
#include <string.h>

struct nd_srq {
    uint32_t magic;
    struct nd_adapter *adapter;
    struct nd_ovobj ov;             /* pending notifies */
    pthread_mutex_t lock;
    uint32_t depth, max_sge, threshold;
    uint16_t group;
    uintptr_t affinity;
    uint32_t head, count;           /* ring of depth entries */
    struct nd_srq_entry *ring;
    nd_sge *sges;                   /* depth * max_sge */
    atomic_uint users;              /* queue pairs attached */
};

static bool srq_valid(const struct nd_srq *s)
{
    return s && s->magic == ND_MAGIC_SRQ;
}

static nd_status srq_alloc_ring(struct nd_srq *s, uint32_t depth)
{
    struct nd_srq_entry *ring = calloc(depth, sizeof(*ring));
    nd_sge *sges = calloc((size_t)depth * s->max_sge, sizeof(*sges));

    if (!ring || !sges) {
        free(ring);
        free(sges);
        return ND_NO_MEMORY;
    }
    /* Move what is posted, oldest first, to the start of the new ring. */
    for (uint32_t i = 0; i < s->count; i++) {
        struct nd_srq_entry *from = &s->ring[(s->head + i) % s->depth];

        ring[i] = *from;
        ring[i].sge = &sges[(size_t)i * s->max_sge];
        memcpy(ring[i].sge, from->sge, from->nsge * sizeof(nd_sge));
    }
    for (uint32_t i = s->count; i < depth; i++)
        ring[i].sge = &sges[(size_t)i * s->max_sge];
    free(s->ring);
    free(s->sges);
    s->ring = ring;
    s->sges = sges;
    s->head = 0;
    s->depth = depth;
    return ND_SUCCESS;
}

ND_API nd_status nd_adapter_create_shared_receive_queue(nd_adapter *a, nd_port *port, uint32_t depth,
                                                        uint32_t max_request_sge,
                                                        uint32_t notify_threshold, uint16_t group,
                                                        uintptr_t affinity, nd_srq **out)
{
    struct nd_srq *s;

    if (!nd_adapter_valid(a))
        return ND_INVALID_HANDLE;
    if (!nd_port_valid(port))
        return ND_INVALID_PARAMETER_2;
    if (depth == 0 || depth > nd_limits.max_shared_receive_queue_depth)
        return ND_INVALID_PARAMETER_3;
    if (max_request_sge == 0 || max_request_sge > nd_limits.max_receive_sge)
        return ND_INVALID_PARAMETER_4;
    if (notify_threshold > depth)
        return ND_INVALID_PARAMETER_5;
    if (!out)
        return ND_INVALID_PARAMETER_8;
    s = calloc(1, sizeof(*s));
    if (!s)
        return ND_NO_MEMORY;
    s->max_sge = max_request_sge;
    s->depth = 0;
    if (srq_alloc_ring(s, depth) != ND_SUCCESS) {
        free(s);
        return ND_NO_MEMORY;
    }
    s->threshold = notify_threshold;
    s->group = group;
    s->affinity = affinity;
    s->adapter = a;
    pthread_mutex_init(&s->lock, NULL);
    nd_ovobj_init(&s->ov, port, NULL);
    nd_adapter_ref(a);
    nd_port_ref(port);
    s->magic = ND_MAGIC_SRQ;
    *out = s;
    return ND_SUCCESS;
}

static void srq_complete_all(struct nd_srq *s, nd_status status, struct nd_ovbatch *b)
{
    for (nd_overlapped *ov = nd_ov_take_all(&s->ov), *next; ov; ov = next) {
        next = nd_ov_next(ov);
        nd_ov_finish(ov, status, 0, b);
    }
}

ND_API nd_status nd_srq_cancel_overlapped_requests(nd_srq *s)
{
    struct nd_ovbatch b;

    if (!srq_valid(s))
        return ND_INVALID_HANDLE;
    nd_ovbatch_init(&b, s->ov.port);
    pthread_mutex_lock(&s->lock);
    srq_complete_all(s, ND_CANCELED, &b);
    pthread_mutex_unlock(&s->lock);
    nd_port_deliver(&b);
    return ND_SUCCESS;
}

ND_API nd_status nd_srq_close(nd_srq *s)
{
    if (!srq_valid(s))
        return ND_INVALID_HANDLE;
    if (atomic_load(&s->users) != 0)
        return ND_DEVICE_BUSY;
    nd_srq_cancel_overlapped_requests(s);
    s->magic = ND_MAGIC_DEAD;
    nd_port_unref(s->ov.port);
    nd_adapter_unref(s->adapter);
    pthread_mutex_destroy(&s->lock);
    free(s->ring);
    free(s->sges);
    free(s);
    return ND_SUCCESS;
}

ND_API nd_status nd_srq_get_notify_affinity(nd_srq *s, uint16_t *group, uintptr_t *affinity)
{
    if (!srq_valid(s))
        return ND_INVALID_HANDLE;
    if (!group)
        return ND_INVALID_PARAMETER_1;
    if (!affinity)
        return ND_INVALID_PARAMETER_2;
    *group = s->group;
    *affinity = s->affinity;
    return ND_SUCCESS;
}

ND_API nd_status nd_srq_modify(nd_srq *s, uint32_t depth, uint32_t notify_threshold)
{
    nd_status st = ND_SUCCESS;

    if (!srq_valid(s))
        return ND_INVALID_HANDLE;
    if (depth > nd_limits.max_shared_receive_queue_depth)
        return ND_INVALID_PARAMETER_1;
    pthread_mutex_lock(&s->lock);
    if (depth && depth < s->count)
        st = ND_BUFFER_OVERFLOW;
    else if (notify_threshold > (depth ? depth : s->depth))
        st = ND_INVALID_PARAMETER_2;
    else if (depth && depth != s->depth)
        st = srq_alloc_ring(s, depth);
    if (st == ND_SUCCESS && notify_threshold)
        s->threshold = notify_threshold;
    pthread_mutex_unlock(&s->lock);
    return st;
}

ND_API nd_status nd_srq_notify(nd_srq *s, nd_overlapped *ov)
{
    nd_status st = ND_PENDING;

    if (!srq_valid(s))
        return ND_INVALID_HANDLE;
    if (!ov)
        return ND_INVALID_PARAMETER_1;
    pthread_mutex_lock(&s->lock);
    if (s->threshold == 0)
        st = ND_INVALID_DEVICE_STATE;
    else if (s->count < s->threshold)
        st = ND_SUCCESS;            /* already below: no lost limit event */
    else
        nd_ov_start(&s->ov, ov);
    pthread_mutex_unlock(&s->lock);
    return st;
}

ND_API nd_status nd_srq_receive(nd_srq *s, void *ctx, const nd_sge *sge, uint32_t nsge)
{
    struct nd_srq_entry *e;
    uint64_t total = 0;
    nd_status st = ND_SUCCESS;

    if (!srq_valid(s))
        return ND_INVALID_HANDLE;
    if (nsge && !sge)
        return ND_INVALID_PARAMETER_2;
    if (nsge > s->max_sge)
        return ND_DATA_OVERRUN;
    for (uint32_t i = 0; i < nsge; i++)
        total += sge[i].buffer_length;
    if (total > nd_limits.max_transfer_length)
        return ND_BUFFER_OVERFLOW;
    pthread_mutex_lock(&s->lock);
    if (s->count == s->depth) {
        st = ND_NO_MORE_ENTRIES;
    } else {
        e = &s->ring[(s->head + s->count) % s->depth];
        e->request_context = ctx;
        e->nsge = nsge;
        e->length = (uint32_t)total;
        if (nsge)
            memcpy(e->sge, sge, nsge * sizeof(*sge));
        s->count++;
    }
    pthread_mutex_unlock(&s->lock);
    return st;
}

bool nd_srq_take(nd_srq *s, struct nd_srq_entry *out, nd_sge *sge_buf)
{
    struct nd_ovbatch b;
    bool got = false;

    nd_ovbatch_init(&b, s->ov.port);
    pthread_mutex_lock(&s->lock);
    if (s->count) {
        struct nd_srq_entry *e = &s->ring[s->head];

        *out = *e;
        out->sge = sge_buf;
        memcpy(sge_buf, e->sge, e->nsge * sizeof(nd_sge));
        s->head = (s->head + 1) % s->depth;
        s->count--;
        got = true;
        /* The limit event is one-shot: it releases every pending notify, then disarms. */
        if (s->count < s->threshold)
            srq_complete_all(s, ND_SUCCESS, &b);
    }
    pthread_mutex_unlock(&s->lock);
    nd_port_deliver(&b);
    return got;
}

uint32_t nd_srq_posted(nd_srq *s)
{
    uint32_t n;

    pthread_mutex_lock(&s->lock);
    n = s->count;
    pthread_mutex_unlock(&s->lock);
    return n;
}

ND_API nd_status nd_srq_get_overlapped_result(nd_srq *s, nd_overlapped *ov, int wait)
{
    if (!srq_valid(s))
        return ND_INVALID_HANDLE;
    return nd_get_overlapped_result(ov, wait);
}
