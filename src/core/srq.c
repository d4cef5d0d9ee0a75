// SPDX-License-Identifier: MIT
/* Shared receive queues: posted slots in a shared ring, the limit ("threshold") event. */
#include "srq_int.h"
#include "copy.h"
#include "log.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { SLOT_FREE = 0, SLOT_POSTED = 1 };

struct srq_slot {                   /* private: what the owner posted */
    void *ctx;
    uint32_t nsge, total;
    uint8_t state;
    nd_sge *sge;
};

struct nd_srq {
    uint32_t magic;
    struct nd_adapter *adapter;
    struct nd_ovobj ov;             /* pending notifies */
    struct nd_lock lock;            /* posting, slots (data path: see lock.h) */
    struct nd_mtab_memo reg_memo;   /* under lock: the registration its posts used last */
    uint16_t pd;                    /* protection domain (verbs; 0 for ND) */
    uint32_t depth, max_sge, threshold, entries;
    uint16_t group;
    uintptr_t affinity;
    struct nd_fd_ref region_ref;    /* our memfd, as peers name it */
    uint8_t *region;
    struct nd_srq_layout layout;
    struct nd_srq_ctl *ctl;
    uint32_t *ring;
    struct srq_slot *slots;
    nd_sge *sges;
    uint32_t *free_ids;             /* stack of free slot ids */
    uint32_t nfree;
    uint32_t outstanding;           /* posted, claimed or not, not yet completed */
    atomic_uint users;              /* queue pairs attached */
};

static size_t align_up(size_t n, size_t a)
{
    return (n + a - 1) & ~(a - 1);
}

void nd_srq_layout(uint32_t entries, uint32_t max_sge, struct nd_srq_layout *l)
{
    l->ring = sizeof(struct nd_srq_ctl);
    l->slot_stride = align_up(sizeof(struct nd_rwqe) + (size_t)max_sge * sizeof(struct nd_rwqe_sge), 16);
    l->slots = align_up(l->ring + (size_t)entries * sizeof(uint32_t), ND_CACHELINE);
    l->size = align_up(l->slots + (size_t)entries * l->slot_stride, 4096);
}

int nd_srq_claim(struct nd_srq_ctl *ctl, const uint32_t *ring, uint32_t entries, uint32_t *slot)
{
    for (;;) {
        uint32_t h = atomic_load_explicit(&ctl->head, memory_order_acquire);
        uint32_t t = atomic_load_explicit(&ctl->tail, memory_order_acquire);
        uint32_t s;

        if (h == t)
            return 0;
        if (t - h > entries)
            return -1;
        /* Read the slot id before claiming: the owner reuses a ring position only once
         * the head has passed it, so what we read stays ours if the CAS succeeds. */
        s = __atomic_load_n(&ring[h & (entries - 1)], __ATOMIC_RELAXED);
        if (atomic_compare_exchange_weak_explicit(&ctl->head, &h, h + 1, memory_order_acq_rel,
                                                  memory_order_relaxed)) {
            *slot = s;
            return 1;
        }
    }
}

static bool srq_valid(const struct nd_srq *s)
{
    return s && s->magic == ND_MAGIC_SRQ;
}

static uint32_t pow2_at_least(uint32_t n)
{
    uint32_t p = 1;

    while (p < n)
        p <<= 1;
    return p;
}

static int srq_region(struct nd_srq *s)
{
    nd_srq_layout(s->entries, s->max_sge, &s->layout);
    int fd = nd_memfd_sealed("netdirect-srq", s->layout.size);

    if (fd < 0)
        return -ENOBUFS;
    if (!nd_fd_ref_of(fd, &s->region_ref) ||
        (s->region = mmap(NULL, s->layout.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
        close(fd);
        s->region = NULL;
        return -ENOBUFS;
    }
    s->ctl = (struct nd_srq_ctl *)s->region;
    s->ctl->magic = ND_SRQ_MAGIC;
    s->ctl->entries = s->entries;
    s->ctl->max_sge = s->max_sge;
    s->ring = (uint32_t *)(s->region + s->layout.ring);
    return 0;
}

static void srq_free(struct nd_srq *s)
{
    if (s->region) {
        munmap(s->region, s->layout.size);
        close(s->region_ref.fd);
    }
    free(s->slots);
    free(s->sges);
    free(s->free_ids);
    free(s);
}

ND_DOOR int ndc_adapter_create_shared_receive_queue(nd_adapter *a, nd_port *port, uint32_t depth,
                                                    uint32_t max_request_sge, uint32_t notify_threshold,
                                                    uint16_t group, uintptr_t affinity, nd_srq **out)
{
    struct nd_srq *s;

    if (!nd_adapter_valid(a))
        return -EBADF;
    if (!nd_port_valid(port))
        return ND_EARG(2);
    if (depth == 0 || depth > nd_caps.max_srq_wr)
        return ND_EARG(3);
    if (max_request_sge == 0 || max_request_sge > nd_caps.max_recv_sge)
        return ND_EARG(4);
    if (notify_threshold > depth)
        return ND_EARG(5);
    if (!out)
        return ND_EARG(8);
    s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->depth = depth;
    s->max_sge = max_request_sge;
    /* Room for the largest depth Modify may set, so the shared layout never moves. */
    s->entries = pow2_at_least(nd_caps.max_srq_wr);
    s->slots = calloc(s->entries, sizeof(*s->slots));
    s->sges = calloc((size_t)s->entries * s->max_sge, sizeof(*s->sges));
    s->free_ids = calloc(s->entries, sizeof(*s->free_ids));
    if (!s->slots || !s->sges || !s->free_ids || srq_region(s) != 0) {
        srq_free(s);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < s->entries; i++) {
        s->slots[i].sge = &s->sges[(size_t)i * s->max_sge];
        s->free_ids[s->nfree++] = s->entries - 1 - i;
    }
    s->threshold = notify_threshold;
    s->group = group;
    s->affinity = affinity;
    s->adapter = a;
    nd_lock_init(&s->lock);
    nd_ovobj_init(&s->ov, port, NULL);
    nd_adapter_ref(a);
    nd_port_ref(port);
    s->magic = ND_MAGIC_SRQ;
    *out = s;
    return 0;
}

static void srq_complete_all(struct nd_srq *s, int status, struct nd_ovbatch *b)
{
    for (nd_overlapped *ov = nd_ov_take_all(&s->ov), *next; ov; ov = next) {
        next = nd_ov_next(ov);
        nd_ov_finish(ov, status, 0, b);
    }
}

/* Receives posted and not yet claimed by a peer. */
static uint32_t srq_posted(struct nd_srq *s)
{
    return atomic_load_explicit(&s->ctl->tail, memory_order_relaxed) -
           atomic_load_explicit(&s->ctl->head, memory_order_acquire);
}

/* The limit event is one-shot: it releases every pending notify (lock held). */
static void srq_check_limit(struct nd_srq *s, struct nd_ovbatch *b)
{
    if (s->ov.head && srq_posted(s) < s->threshold)
        srq_complete_all(s, 0, b);
}

ND_DOOR int ndc_srq_cancel_overlapped_requests(nd_srq *s)
{
    struct nd_ovbatch b;

    if (!srq_valid(s))
        return -EBADF;
    nd_ovbatch_init(&b, s->ov.port);
    nd_lock_acquire(&s->lock);
    srq_complete_all(s, -ECANCELED, &b);
    nd_lock_release(&s->lock);
    nd_port_deliver(&b);
    return 0;
}

ND_DOOR int ndc_srq_close(nd_srq *s)
{
    if (!srq_valid(s))
        return -EBADF;
    if (atomic_load(&s->users) != 0)
        return -EBUSY;
    ndc_srq_cancel_overlapped_requests(s);
    s->magic = ND_MAGIC_DEAD;
    nd_port_unref(s->ov.port);
    nd_adapter_unref(s->adapter);
    nd_lock_destroy(&s->lock);
    srq_free(s);
    return 0;
}

ND_DOOR int ndc_srq_get_notify_affinity(nd_srq *s, uint16_t *group, uintptr_t *affinity)
{
    if (!srq_valid(s))
        return -EBADF;
    if (!group)
        return ND_EARG(1);
    if (!affinity)
        return ND_EARG(2);
    *group = s->group;
    *affinity = s->affinity;
    return 0;
}

ND_DOOR int ndc_srq_modify(nd_srq *s, uint32_t depth, uint32_t notify_threshold)
{
    int st = 0;

    if (!srq_valid(s))
        return -EBADF;
    if (depth > nd_caps.max_srq_wr)
        return ND_EARG(1);
    nd_lock_acquire(&s->lock);
    if (depth && depth < s->outstanding)
        st = -EOVERFLOW;
    else if (notify_threshold > (depth ? depth : s->depth))
        st = ND_EARG(2);
    if (st == 0) {
        if (depth)
            s->depth = depth;
        if (notify_threshold)
            s->threshold = notify_threshold;
    }
    nd_lock_release(&s->lock);
    return st;
}

ND_DOOR int ndc_srq_notify(nd_srq *s, nd_overlapped *ov)
{
    int st = -EINPROGRESS;

    if (!srq_valid(s))
        return -EBADF;
    if (!ov)
        return ND_EARG(1);
    if (nd_ov_is_pending(ov))
        return -EINVAL;    /* still in use by an earlier request */
    nd_lock_acquire(&s->lock);
    if (s->threshold == 0)
        st = -EBADFD;
    else if (srq_posted(s) < s->threshold)
        st = 0;            /* already below: no lost limit event */
    else
        nd_ov_start(&s->ov, ov);
    nd_lock_release(&s->lock);
    return st;
}

ND_DOOR int ndc_srq_receive(nd_srq *s, void *ctx, const nd_sge *sge, uint32_t nsge)
{
    uint64_t total = 0;
    int st = 0;

    if (!srq_valid(s))
        return -EBADF;
    if (nsge && !sge)
        return ND_EARG(2);
    if (nsge > s->max_sge)
        return -EMSGSIZE;
    for (uint32_t i = 0; i < nsge; i++)
        total += sge[i].buffer_length;
    if (total > nd_caps.max_msg_size)
        return -EOVERFLOW;
    nd_lock_acquire(&s->lock);
    if (!nd_sges_registered(s->adapter, &s->reg_memo, sge, nsge, ND_ACCESS_LOCAL_WRITE)) {
        st = -EFAULT;
    } else if (s->outstanding >= s->depth || !s->nfree) {
        st = -ENOSPC;
    } else {
        uint32_t id = s->free_ids[--s->nfree], t = atomic_load_explicit(&s->ctl->tail, memory_order_relaxed);
        struct srq_slot *slot = &s->slots[id];
        struct nd_rwqe *w = (struct nd_rwqe *)(s->region + s->layout.slots + (size_t)id * s->layout.slot_stride);

        slot->ctx = ctx;
        slot->nsge = nsge;
        slot->total = (uint32_t)total;
        slot->state = SLOT_POSTED;
        if (nsge)
            memcpy(slot->sge, sge, nsge * sizeof(*sge));
        w->nsge = nsge;
        w->total = (uint32_t)total;
        for (uint32_t i = 0; i < nsge; i++)
            w->sge[i] = (struct nd_rwqe_sge){ (uintptr_t)sge[i].buffer, sge[i].buffer_length,
                                              sge[i].memory_region_token };
        __atomic_store_n(&s->ring[t & (s->entries - 1)], id, __ATOMIC_RELAXED);
        atomic_store_explicit(&s->ctl->tail, t + 1, memory_order_release);
        s->outstanding++;
    }
    nd_lock_release(&s->lock);
    return st;
}

ND_DOOR int ndc_srq_get_overlapped_result(nd_srq *s, nd_overlapped *ov, int wait)
{
    if (!srq_valid(s))
        return -EBADF;
    return ndc_get_overlapped_result(ov, wait);
}

void nd_srq_export(nd_srq *s, struct nd_srq_share *out)
{
    out->region = s->region_ref;
    out->entries = s->entries;
    out->max_sge = s->max_sge;
}

uint32_t nd_srq_max_sge(nd_srq *s)
{
    return s->max_sge;
}

void nd_srq_view(nd_srq *s, struct nd_srq_view *v)
{
    v->region = s->region;
    v->layout = s->layout;
    v->ctl = s->ctl;
    v->ring = s->ring;
    v->entries = s->entries;
    v->max_sge = s->max_sge;
}

uint32_t nd_srq_entries(nd_srq *s)
{
    return s->entries;
}

void nd_srq_attach_qp(nd_srq *s, int delta)
{
    atomic_fetch_add(&s->users, (unsigned)delta);
}

bool nd_srq_valid_of(const nd_srq *s, const struct nd_adapter *a)
{
    return srq_valid(s) && s->adapter == a;
}

enum nd_xlate nd_srq_complete(nd_srq *s, uint32_t id, const struct nd_cqe *e, const uint8_t *data,
                              nd_result *r, bool *overrun)
{
    struct nd_ovbatch b;
    struct srq_slot *slot;

    nd_ovbatch_init(&b, s->ov.port);
    nd_lock_acquire(&s->lock);
    if (id >= s->entries || s->slots[id].state != SLOT_POSTED) {
        nd_lock_release(&s->lock);
        return ND_XLATE_BAD;
    }
    slot = &s->slots[id];
    *overrun = e->status == -EMSGSIZE || e->bytes > slot->total;
    r->status = *overrun ? -EMSGSIZE : 0;
    if (!*overrun && data) {
        uint32_t left = e->bytes;

        for (uint32_t i = 0; i < slot->nsge && left; i++) {
            uint32_t n = slot->sge[i].buffer_length < left ? slot->sge[i].buffer_length : left;

            /* Checked again: a region deregistered since the post is not touched. */
            if (n && nd_mtab_check_local(s->adapter, &s->reg_memo, slot->sge[i].memory_region_token,
                                         (uintptr_t)slot->sge[i].buffer, n, ND_ACCESS_LOCAL_WRITE) != 0) {
                r->status = -EFAULT;
                *overrun = true;
                break;
            }
            nd_copy(slot->sge[i].buffer, data, n);
            data += n;
            left -= n;
        }
    }
    r->bytes_transferred = *overrun ? 0 : e->bytes;
    r->request_context = slot->ctx;
    slot->state = SLOT_FREE;
    s->free_ids[s->nfree++] = id;
    s->outstanding--;
    srq_check_limit(s, &b);
    nd_lock_release(&s->lock);
    nd_port_deliver(&b);
    return ND_XLATE_OK;
}

void nd_srq_set_pd(nd_srq *srq, uint16_t pd)
{
    nd_lock_acquire(&srq->lock);
    srq->pd = pd;
    srq->reg_memo = (struct nd_mtab_memo){ .pd = pd };
    nd_lock_release(&srq->lock);
}

uint16_t nd_srq_pd(const nd_srq *srq)
{
    return srq->pd;
}
