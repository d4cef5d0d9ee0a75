// SPDX-License-Identifier: MIT
/*
 * Completion queues. A CQ consumes any number of single-producer rings (one per queue
 * pair and direction), each in memory shared only with that ring's producer. Producers
 * read the CQ's arm word and signal its eventfd; nothing else of the CQ is writable by
 * them. See docs/design-cq.md for the protocol and its memory ordering.
 */
#include "cq_int.h"
#include "transport.h"
#include "log.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct nd_cq_src {
    struct nd_ring_hdr *hdr;        /* shared with the producer */
    const struct nd_cqe *ents;
    uint32_t mask;
    uint32_t cons;                  /* private copy; published to hdr->cons */
    uint32_t reported;              /* entries before this index have satisfied a notify */
    uint32_t seen;                  /* entries before this index are known valid (counting) */
    const struct nd_cq_src_ops *ops;
    void *ctx;
    bool broken;
};

#define CQ_SPIN_NS (20ull * 1000)   /* how long a CQ wait spins before it sleeps */

static void cq_wait(struct nd_ovobj *obj, nd_overlapped *ov);
static uint32_t queued_entries(struct nd_cq *cq);
static uint32_t queued_entries_upto(struct nd_cq *cq, uint32_t limit);
static void cq_fail_locked(struct nd_cq *cq, int status, struct nd_ovbatch *b);
static void poke_waiters(struct nd_cq *cq);
static void cq_poll(struct nd_ovobj *obj);
static const struct nd_ovobj_ops cq_ov_ops = { .wait = cq_wait, .poll = cq_poll };

static struct nd_cq *cq_of_ovobj(struct nd_ovobj *obj)
{
    return (struct nd_cq *)((char *)obj - offsetof(struct nd_cq, ov));
}

static void src_break(struct nd_cq_src *s)
{
    if (s->broken)
        return;
    s->broken = true;
    nd_log(ND_LOG_WARN, ND_SUB_CQ, "completion ring %p broke the protocol; detaching it", (void *)s);
    if (s->ops->broken)
        s->ops->broken(s->ctx);
}

/* Returns whether any ring may have new entries. */
static bool cq_run_progress(struct nd_cq *cq)
{
    bool moved = false;

    for (uint32_t i = 0; i < cq->nsrc; i++)
        if (cq->src[i]->ops->progress && !cq->src[i]->broken)
            moved |= cq->src[i]->ops->progress(cq->src[i]->ctx);
    return moved;
}

static void cq_run_idle(struct nd_cq *cq)
{
    for (uint32_t i = 0; i < cq->nsrc; i++)
        if (cq->src[i]->ops->idle && !cq->src[i]->broken)
            cq->src[i]->ops->idle(cq->src[i]->ctx);
}

static uint32_t src_drain(struct nd_cq *cq, struct nd_cq_src *s, nd_result *out, uint32_t max);

/* Fill @results[n..max) from the rings, starting at the rotating scan position. An empty
 * ring costs one load here: most polls find every ring empty. */
static uint32_t drain_all(struct nd_cq *cq, nd_result *results, uint32_t n, uint32_t max)
{
    uint32_t k = cq->next_scan;

    for (uint32_t i = 0; i < cq->nsrc && n < max; i++, k = k + 1 == cq->nsrc ? 0 : k + 1) {
        struct nd_cq_src *s = cq->src[k];

        if (nd_cqe_valid(s->ents, s->mask, s->cons))
            n += src_drain(cq, s, results + n, max - n);
    }
    return n;
}

static uint32_t src_drain(struct nd_cq *cq, struct nd_cq_src *s, nd_result *out, uint32_t max)
{
    uint32_t n = 0;

    if (s->broken)
        return 0;
    while (n < max && nd_cqe_valid(s->ents, s->mask, s->cons)) {
        struct nd_cqe e;
        enum nd_xlate x;

        /* Copy once, then validate the copy: the producer may rewrite the slot. */
        memcpy(&e, &s->ents[s->cons & s->mask], sizeof(e));
        x = s->ops->translate(s->ctx, &e, &out[n]);
        if (x == ND_XLATE_DEFER) {
            cq->deferred = true;
            break;
        }
        if (x == ND_XLATE_BAD) {
            src_break(s);
            break;
        }
        if (x == ND_XLATE_KEEP) {
            n++;
            continue;
        }
        /* Published entry by entry, before the owner frees the request (ops->retire):
         * a free request slot then always has a free ring entry behind it. An empty
         * poll stores nothing on the line the producer reads. */
        s->cons++;
        atomic_store_explicit(&s->hdr->cons, s->cons, memory_order_release);
        if (x == ND_XLATE_OK) {
            if (s->ops->retire)
                s->ops->retire(s->ctx, &e);
            n++;
        }
    }
    return n;
}

static uint32_t take_orphans(struct nd_cq *cq, nd_result *out, uint32_t max)
{
    uint32_t n = cq->norphans < max ? cq->norphans : max;

    memcpy(out, cq->orphans + cq->orphan_head, n * sizeof(*out));
    cq->orphan_head += n;
    cq->norphans -= n;
    cq->orphans_reported = cq->orphans_reported > n ? cq->orphans_reported - n : 0;
    if (!cq->norphans)
        cq->orphan_head = 0;
    return n;
}

/* Inlined into both callers: for ND's, @wants_wc is a constant false and costs nothing. */
static inline __attribute__((always_inline)) uint32_t get_results(struct nd_cq *cq, nd_result *results,
                                                                  bool wants_wc, uint32_t max)
{
    struct nd_ovbatch b;
    bool overran = false;
    uint32_t n = 0;

    nd_lock_acquire(&cq->lock);
    if (wants_wc)
        cq->wants_wc = true;
    if (ND_UNLIKELY(cq->norphans))
        n = take_orphans(cq, results, max);
    /* A pending Notify(ERRORS) is owed an overrun as soon as one exists: count first.
     * The entries still come out (nothing is lost); the CQ's queue pairs stop. */
    if (ND_UNLIKELY(cq->n_err) && n + queued_entries_upto(cq, cq->depth) > cq->depth)
        overran = true;
    if (ND_UNLIKELY(overran)) {
        nd_ovbatch_init(&b, cq->ov.port);
        cq_fail_locked(cq, -EOVERFLOW, &b);
    }
    /* What is already in the rings goes first; transports are moved (a system call for
     * iwarp) only when that does not fill the caller's array. */
    n = drain_all(cq, results, n, max);
    /* A second look only after progress moved something: an empty poll stays one pass. */
    if (n < max && cq_run_progress(cq))
        n = drain_all(cq, results, n, max);
    /* A ring that deferred to another may deliver now that the other drained. */
    if (cq->deferred) {
        cq->deferred = false;
        for (uint32_t i = 0; i < cq->nsrc && n < max; i++)
            n += src_drain(cq, cq->src[i], results + n, max - n);
    }
    if (++cq->next_scan >= cq->nsrc)
        cq->next_scan = 0;
    /* Rings cannot lose entries, but ND makes a CQ holding more than its depth fatal. What
     * we returned plus what is still queued tells, at no cost when everything was drained. */
    /* A full array may hide more: count what remains on every 16th such call (a CQ
     * polled one result at a time would otherwise pay for the count on every poll). */
    if (ND_UNLIKELY(cq->error == 0 &&
                    (n > cq->depth || (n == max && (++cq->full_polls & 15) == 0 &&
                                       n + queued_entries_upto(cq, cq->depth - n) > cq->depth)))) {
        nd_ovbatch_init(&b, cq->ov.port);
        cq_fail_locked(cq, -EOVERFLOW, &b);
        overran = true;
    }
    if (wants_wc)
        cq->wants_wc = false;
    nd_lock_release(&cq->lock);
    if (ND_UNLIKELY(overran)) {
        nd_port_deliver(&b);
        poke_waiters(cq);
    }
    /* Only on the extension path (the verbs front end, whose programs may spin on one CQ
     * while another QP's traffic runs): ND's poll stays as it was, to the instruction. */
    if (wants_wc && !n && ND_UNLIKELY(__atomic_load_n(&nd_lend_wanted, __ATOMIC_RELAXED)))
        nd_transports_lend();
    return n;
}

ND_DOOR uint32_t ndc_cq_get_results(nd_cq *cq, nd_result *results, uint32_t max)
{
    if (!cq || cq->magic != ND_MAGIC_CQ || !results)
        return 0;
    return get_results(cq, results, false, max);
}

uint32_t nd_cq_get_wc(nd_cq *cq, struct nd_wc *wc, uint32_t max)
{
    if (!cq || cq->magic != ND_MAGIC_CQ || !wc)
        return 0;
    /* Every translation stores the whole request type, which zeroes the verbs flags: only
     * the rare completions that carry more set them. */
    return get_results(cq, (nd_result *)wc, true, max);
}

/* Does @s hold an entry that GetResults has not returned and no notify has reported? */
static bool src_triggers(struct nd_cq_src *s, uint32_t arm_type)
{
    uint32_t start;

    if (s->broken)
        return false;
    start = (int32_t)(s->reported - s->cons) > 0 ? s->reported : s->cons;
    if (arm_type == ND_ARM_ANY)
        return nd_cqe_valid(s->ents, s->mask, start);
    for (uint32_t i = start; i - start <= s->mask && nd_cqe_valid(s->ents, s->mask, i); i++) {
        struct nd_cqe e;

        memcpy(&e, &s->ents[i & s->mask], sizeof(e));
        if ((e.flags & ND_CQE_SOLICITED) || e.status != 0)
            return true;
    }
    return false;
}

/* Entries queued, counted until the count passes @limit (enough to tell an overrun). */
static uint32_t queued_entries_upto(struct nd_cq *cq, uint32_t limit)
{
    uint32_t total = 0;

    for (uint32_t i = 0; i < cq->nsrc && total <= limit; i++) {
        struct nd_cq_src *s = cq->src[i];

        if (s->broken)
            continue;
        /* Resume where the last count stopped: each entry is looked at once, not once
         * per GetResults call (a deep CQ polled one result at a time stays O(1)). */
        if ((int32_t)(s->seen - s->cons) < 0)
            s->seen = s->cons;
        while (s->seen - s->cons <= s->mask && total + (s->seen - s->cons) <= limit &&
               nd_cqe_valid(s->ents, s->mask, s->seen))
            s->seen++;
        total += s->seen - s->cons;
    }
    return total;
}

static uint32_t queued_entries(struct nd_cq *cq)
{
    return queued_entries_upto(cq, UINT32_MAX - 1);
}

static uint32_t armed_type(const struct nd_cq *cq)
{
    return cq->n_any ? ND_ARM_ANY : cq->n_sol ? ND_ARM_SOLICITED : ND_ARM_NONE;
}

static void arm_store(struct nd_cq *cq, uint32_t type)
{
    if (type != ND_ARM_NONE)
        cq->arm_gen++;
    atomic_store_explicit(cq->arm, ND_ARM_WORD(cq->arm_gen, type), memory_order_relaxed);
    /* Pairs with the fence in nd_ring_produce: arm, then peek. */
    atomic_thread_fence(memory_order_seq_cst);
}

/* Complete pending notifies: all of them (error), or the ANY/SOLICITED ones (event). */
static void complete_notifies(struct nd_cq *cq, int status, bool all, struct nd_ovbatch *b)
{
    nd_overlapped *ov = nd_ov_take_all(&cq->ov), *next;

    for (; ov; ov = next) {
        next = nd_ov_next(ov);
        if (all || ov->internal_reserved != ND_CQ_NOTIFY_ERRORS)
            nd_ov_finish(ov, status, 0, b);
        else
            nd_ov_requeue(&cq->ov, ov);   /* keeps an ERRORS request pending, in order */
    }
    cq->n_any = cq->n_sol = 0;
    if (all)
        cq->n_err = 0;
    if (!all)
        for (uint32_t i = 0; i < cq->nsrc; i++) {
            struct nd_cq_src *src = cq->src[i];
            uint32_t from = (int32_t)(src->reported - src->cons) > 0 ? src->reported : src->cons;

            src->reported = nd_ring_valid_end(src->ents, src->mask, from);
        }
    arm_store(cq, ND_ARM_NONE);
}

static void cq_fail_locked(struct nd_cq *cq, int status, struct nd_ovbatch *b)
{
    if (cq->error)
        return;
    cq->error = status;
    nd_log(ND_LOG_WARN, ND_SUB_CQ, "CQ %p failed: %s", (void *)cq, nd_err_name(status));
    complete_notifies(cq, status, true, b);
    for (uint32_t i = 0; i < cq->nsrc; i++)
        if (cq->src[i]->ops->cq_failed)
            cq->src[i]->ops->cq_failed(cq->src[i]->ctx, status);
}

/* Under the lock: detect an overrun, and release the notifies an entry satisfies. */
static bool cq_progress(struct nd_cq *cq, struct nd_ovbatch *b)
{
    uint32_t type = armed_type(cq);

    if (cq->error)
        return false;
    cq_run_progress(cq);
    if (queued_entries_upto(cq, cq->depth) > cq->depth) {
        cq_fail_locked(cq, -EOVERFLOW, b);
        return true;
    }
    if (type == ND_ARM_NONE)
        return false;
    /* Orphans are flushes (errors): they satisfy either kind of arm, once. */
    if (cq->norphans > cq->orphans_reported) {
        cq->orphans_reported = cq->norphans;
        complete_notifies(cq, 0, false, b);
        return true;
    }
    for (uint32_t i = 0; i < cq->nsrc; i++)
        if (src_triggers(cq->src[i], type)) {
            complete_notifies(cq, 0, false, b);
            return true;
        }
    return false;
}

static void poke_waiters(struct nd_cq *cq)
{
    uint64_t one = 1;

    if (atomic_load(&cq->ov_waiters) && write(cq->signal_fd, &one, sizeof(one)) < 0)
        nd_log(ND_LOG_WARN, ND_SUB_CQ, "eventfd write failed: %m");
}

/*
 * A wake-up that released nothing: the signal was spent on an entry GetResults had already
 * taken (its producer saw the arm after our last drain), and the ring will not signal this
 * generation again. Re-arm with a fresh generation, then look once more: an entry
 * published before the new arm word is seen by this look, any later one signals again.
 */
static bool cq_rearm_and_look(struct nd_cq *cq, struct nd_ovbatch *b)
{
    uint32_t type = armed_type(cq);

    if (type == ND_ARM_NONE || cq->error)
        return false;
    arm_store(cq, type);
    return cq_progress(cq, b);
}

/* The port saw the CQ's eventfd fire. */
static void cq_on_signal(void *obj, struct nd_ovbatch *b)
{
    struct nd_cq *cq = obj;
    uint64_t v;

    nd_lock_acquire(&cq->lock);
    if (cq_progress(cq, b)) {
        nd_lock_release(&cq->lock);
        return;
    }
    nd_lock_release(&cq->lock);
    /*
     * Nothing to do: reset the counter, so a peer that saturated it cannot keep later
     * signals from producing edges. epoll re-polls an edge-triggered fd when it reports
     * it, so a signal landing before this read is swallowed with the counter; the look
     * after the re-arm below covers the entry it was for.
     */
    if (read(cq->signal_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
        nd_log(ND_LOG_WARN, ND_SUB_CQ, "eventfd read failed: %m");
    nd_lock_acquire(&cq->lock);
    cq_rearm_and_look(cq, b);
    nd_lock_release(&cq->lock);
}

/* Every pending notify is reaped through ndc_get_overlapped_result (none goes to a port,
 * where a thread may sleep on our signal). */
static bool notifies_all_waited(struct nd_cq *cq)
{
    for (nd_overlapped *p = cq->ov.head; p; p = nd_ov_next(p))
        if (!(p->flags & ND_OV_FLAG_NO_PORT))
            return false;
    return true;
}

static void cq_poll(struct nd_ovobj *obj)
{
    struct nd_cq *cq = cq_of_ovobj(obj);
    struct nd_ovbatch b;

    nd_ovbatch_init(&b, cq->ov.port);
    nd_lock_acquire(&cq->lock);
    cq_progress(cq, &b);
    nd_lock_release(&cq->lock);
    nd_port_deliver(&b);
}

void nd_cq_look(struct nd_cq *cq)
{
    cq_poll(&cq->ov);
}

static void cq_wait(struct nd_ovobj *obj, nd_overlapped *ov)
{
    struct nd_cq *cq = cq_of_ovobj(obj);
    struct nd_ovbatch b;
    uint64_t v;

    bool woke = false, quiet, spin = nd_spin_enter();
    uint64_t spin_end = nd_now_ns() + CQ_SPIN_NS;

    /*
     * While we spin, producers need not signal: when every pending notify is reaped by a
     * waiter (none goes to a port) and no other thread sleeps on this CQ, disarm, and arm
     * again (then look) before sleeping. Spares the peer a system call per completion.
     */
    nd_lock_acquire(&cq->lock);
    quiet = atomic_fetch_add(&cq->ov_waiters, 1) == 0 && spin && notifies_all_waited(cq);
    if (quiet)
        arm_store(cq, ND_ARM_NONE);
    nd_lock_release(&cq->lock);
    /* Spin a moment before sleeping: a wake-up across CPUs costs tens of microseconds, and the
     * answer to a message just sent is often a microsecond away. */
    while (spin && nd_ov_is_pending(ov) && nd_now_ns() < spin_end) {
        nd_ovbatch_init(&b, cq->ov.port);
        nd_lock_acquire(&cq->lock);
        cq_progress(cq, &b);
        nd_lock_release(&cq->lock);
        nd_port_deliver(&b);
        nd_cpu_relax();
    }
    if (spin)
        nd_spin_leave();
    if (quiet && nd_ov_is_pending(ov)) {
        nd_ovbatch_init(&b, cq->ov.port);
        nd_lock_acquire(&cq->lock);
        cq_rearm_and_look(cq, &b);
        nd_lock_release(&cq->lock);
        nd_port_deliver(&b);
    }
    while (nd_ov_is_pending(ov)) {
        struct pollfd pfd = { .fd = cq->signal_fd, .events = POLLIN };

        int timeout;

        nd_ovbatch_init(&b, cq->ov.port);
        nd_lock_acquire(&cq->lock);
        if (!cq_progress(cq, &b) && woke)
            cq_rearm_and_look(cq, &b);      /* a spent signal: see cq_rearm_and_look */
        timeout = cq->ndefer_capable ? 10 : -1;
        if (nd_ov_is_pending(ov))
            cq_run_idle(cq);
        nd_lock_release(&cq->lock);
        nd_port_deliver(&b);
        if (!nd_ov_is_pending(ov))
            break;
        /* With queue pairs attached, wake now and then so their deferred work (held
         * sends, a peer that died without a word) moves even if nothing signals. */
        woke = poll(&pfd, 1, timeout) > 0;
        if (woke && read(cq->signal_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
            nd_log(ND_LOG_WARN, ND_SUB_CQ, "eventfd read failed: %m");
    }
    atomic_fetch_sub(&cq->ov_waiters, 1);
}

ND_DOOR int ndc_cq_notify(nd_cq *cq, uint32_t type, nd_overlapped *ov)
{
    struct nd_ovbatch b;
    int st = -EINPROGRESS;

    if (!cq || cq->magic != ND_MAGIC_CQ)
        return -EBADF;
    if (type > ND_CQ_NOTIFY_SOLICITED)
        return ND_EARG(1);
    if (!ov)
        return ND_EARG(2);
    if (nd_ov_is_pending(ov))
        return -EINVAL;    /* still in use by an earlier request */
    nd_ovbatch_init(&b, cq->ov.port);
    nd_lock_acquire(&cq->lock);
    if (cq->error) {
        st = cq->error;
    } else if (type == ND_CQ_NOTIFY_ERRORS) {
        nd_ov_start(&cq->ov, ov);
        ov->internal_reserved = type;
        cq->n_err++;
    } else {
        bool any = type == ND_CQ_NOTIFY_ANY || cq->n_any;

        arm_store(cq, any ? ND_ARM_ANY : ND_ARM_SOLICITED);
        nd_ov_start(&cq->ov, ov);
        ov->internal_reserved = type;
        *(type == ND_CQ_NOTIFY_ANY ? &cq->n_any : &cq->n_sol) += 1;
        /* Peek after arming (no lost wake-up). Our own request then completes
         * synchronously: take it back out of the batch rather than queue it. */
        if (cq_progress(cq, &b)) {
            st = nd_ov_result(ov);
            nd_ovbatch_remove(&b, ov);
        } else {
            cq_run_idle(cq);        /* the caller is about to wait for the notify */
        }
    }
    nd_lock_release(&cq->lock);
    nd_port_deliver(&b);
    return st;
}

int nd_cq_arm_to_port(struct nd_cq *cq, uint32_t type, nd_overlapped *ov)
{
    int st = ndc_cq_notify(cq, type, ov);

    /* Completed at once: nothing went to the port, and its waiter must hear of it. (Once
     * pending, another thread may complete it any moment: only the status says which.) */
    if (nd_errno_of(st) == 0 && st != -EINPROGRESS)
        st = ndc_port_post(cq->ov.port, ov, st, 0);
    return -nd_errno_of(st);
}

ND_DOOR int ndc_cq_cancel_overlapped_requests(nd_cq *cq)
{
    struct nd_ovbatch b;

    if (!cq || cq->magic != ND_MAGIC_CQ)
        return -EBADF;
    nd_ovbatch_init(&b, cq->ov.port);
    nd_lock_acquire(&cq->lock);
    for (nd_overlapped *ov = nd_ov_take_all(&cq->ov), *next; ov; ov = next) {
        next = nd_ov_next(ov);
        nd_ov_finish(ov, -ECANCELED, 0, &b);
    }
    cq->n_any = cq->n_sol = cq->n_err = 0;
    arm_store(cq, ND_ARM_NONE);
    nd_lock_release(&cq->lock);
    nd_port_deliver(&b);
    poke_waiters(cq);
    return 0;
}

ND_DOOR int ndc_cq_get_overlapped_result(nd_cq *cq, nd_overlapped *ov, int wait)
{
    if (!cq || cq->magic != ND_MAGIC_CQ)
        return -EBADF;
    return ndc_get_overlapped_result(ov, wait);
}

void nd_cq_fail(struct nd_cq *cq, int status)
{
    struct nd_ovbatch b;

    nd_ovbatch_init(&b, cq->ov.port);
    nd_lock_acquire(&cq->lock);
    cq_fail_locked(cq, status, &b);
    nd_lock_release(&cq->lock);
    nd_port_deliver(&b);
    poke_waiters(cq);
}

ND_DOOR int ndc_cq_resize(nd_cq *cq, uint32_t depth)
{
    int st = 0;

    if (!cq || cq->magic != ND_MAGIC_CQ)
        return -EBADF;
    if (depth == 0 || depth > nd_caps.max_cqe)
        return ND_EARG(1);
    nd_lock_acquire(&cq->lock);
    if (cq->error)
        st = cq->error;
    else if (queued_entries(cq) > depth)
        st = -EOVERFLOW;
    else
        cq->depth = depth;
    nd_lock_release(&cq->lock);
    return st;
}

ND_DOOR int ndc_cq_get_notify_affinity(nd_cq *cq, uint16_t *group, uintptr_t *affinity)
{
    if (!cq || cq->magic != ND_MAGIC_CQ)
        return -EBADF;
    if (!group)
        return ND_EARG(1);
    if (!affinity)
        return ND_EARG(2);
    *group = cq->group;
    *affinity = cq->affinity;
    return 0;
}

int nd_cq_create(struct nd_adapter *a, struct nd_port *port, uint32_t depth, uint16_t group,
                       uintptr_t affinity, struct nd_cq **out)
{
    struct nd_cq *cq = calloc(1, sizeof(*cq));
    int st;

    if (!cq)
        return -ENOMEM;
    static _Atomic uint64_t serials;

    cq->serial = atomic_fetch_add(&serials, 1) + 1;
    cq->signal_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    struct nd_fd_ref ref;
    if (cq->signal_fd < 0 || !nd_fd_ref_of(cq->signal_fd, &ref)) {     /* published: same-host peers ring it */
        if (cq->signal_fd >= 0)
            close(cq->signal_fd);
        free(cq);
        return -ENOBUFS;
    }
    st = nd_adapter_arm_alloc(a, &cq->arm_slot);
    if (st != 0)
        goto err_fd;
    cq->arm = &a->arm_area[cq->arm_slot * (ND_CACHELINE / sizeof(uint32_t))];
    atomic_store(cq->arm, ND_ARM_WORD(0, ND_ARM_NONE));
    nd_lock_init(&cq->lock);
    nd_ovobj_init(&cq->ov, port, &cq_ov_ops);
    cq->adapter = a;
    cq->depth = depth;
    cq->group = group;
    cq->affinity = affinity;
    /* Last of the set-up: the port's thread may call cq_on_signal from here on, and it
     * must find the CQ whole. */
    st = nd_port_add_source(port, cq->signal_fd, cq, cq_on_signal, NULL, &cq->port_source);
    if (st != 0)
        goto err_init;
    nd_adapter_ref(a);
    nd_port_ref(port);
    nd_mem_user_add(a, &cq->mem_user, &cq->lock, NULL);
    cq->magic = ND_MAGIC_CQ;
    *out = cq;
    return 0;
err_init:
    nd_ovobj_fini(&cq->ov);
    nd_lock_destroy(&cq->lock);
    nd_adapter_arm_free(a, cq->arm_slot);
err_fd:
    nd_fd_unpublish(cq->signal_fd);
    close(cq->signal_fd);
    free(cq);
    return st;
}

bool nd_cq_in_use(const nd_cq *cq)
{
    return atomic_load(&cq->users) != 0;
}

void nd_cq_forget(nd_cq *cq, const void *qp_context)
{
    uint32_t kept = 0;

    nd_lock_acquire(&cq->lock);
    for (uint32_t i = 0; i < cq->norphans; i++) {
        const nd_result *r = &cq->orphans[cq->orphan_head + i];

        if (r->qp_context != qp_context)
            cq->orphans[cq->orphan_head + kept++] = *r;
    }
    cq->norphans = kept;
    if (cq->orphans_reported > kept)
        cq->orphans_reported = kept;
    if (!kept)
        cq->orphan_head = 0;
    nd_lock_release(&cq->lock);
}

ND_DOOR int ndc_cq_close(nd_cq *cq)
{
    struct nd_port *port;

    if (!cq || cq->magic != ND_MAGIC_CQ)
        return -EBADF;
    if (atomic_load(&cq->users) != 0)
        return -EBUSY;
    ndc_cq_cancel_overlapped_requests(cq);
    nd_mem_user_remove(cq->adapter, &cq->mem_user);
    port = cq->ov.port;
    nd_port_del_source(port, cq->port_source, cq->signal_fd);
    cq->magic = ND_MAGIC_DEAD;
    atomic_store(cq->arm, ND_ARM_WORD(0, ND_ARM_NONE));
    nd_adapter_arm_free(cq->adapter, cq->arm_slot);
    nd_fd_unpublish(cq->signal_fd);
    close(cq->signal_fd);
    for (uint32_t i = 0; i < cq->nsrc; i++)
        free(cq->src[i]);
    free(cq->src);
    free(cq->orphans);
    nd_lock_destroy(&cq->lock);
    nd_adapter_unref(cq->adapter);
    nd_port_unref(port);
    free(cq);
    return 0;
}

int nd_cq_attach(struct nd_cq *cq, struct nd_ring_hdr *hdr, const struct nd_cqe *ents,
                       uint32_t entries, const struct nd_cq_src_ops *ops, void *ctx,
                       struct nd_cq_src **out)
{
    struct nd_cq_src *s;

    if (!entries || (entries & (entries - 1)))
        return -EINVAL;
    s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->hdr = hdr;
    s->ents = ents;
    s->mask = entries - 1;
    s->ops = ops;
    s->ctx = ctx;
    nd_lock_acquire(&cq->lock);
    s->cons = s->reported = s->seen = atomic_load_explicit(&hdr->cons, memory_order_relaxed);
    struct nd_cq_src **grown = nd_with_room(cq->src, &cq->cap, cq->nsrc, sizeof(*grown));

    if (!grown) {
        nd_lock_release(&cq->lock);
        free(s);
        return -ENOMEM;
    }
    cq->src = grown;
    cq->src[cq->nsrc++] = s;
    cq->ndefer_capable += ops->progress != NULL;
    nd_lock_release(&cq->lock);
    *out = s;
    return 0;
}

/* Room for one more orphan (CQ lock held); false when out of memory. */
static bool orphan_room(struct nd_cq *cq)
{
    if (cq->orphan_head + cq->norphans < cq->orphan_cap)
        return true;
    if (cq->orphan_head) {
        memmove(cq->orphans, cq->orphans + cq->orphan_head, cq->norphans * sizeof(*cq->orphans));
        cq->orphan_head = 0;
        return true;
    }
    nd_result *grown = nd_with_room(cq->orphans, &cq->orphan_cap, cq->norphans, sizeof(*grown));

    if (!grown)
        return false;
    cq->orphans = grown;
    return true;
}

/* Translate what @s still holds into orphans, as GetResults would have (CQ lock held). */
static void salvage(struct nd_cq *cq, struct nd_cq_src *s)
{
    nd_result r;

    /* One lap at most: a peer's ring may be written while we look (stale entries that
     * translate SKIP), and a hostile peer must not keep a close here. */
    for (uint32_t lap = 0; lap <= s->mask && !s->broken && cq->error == 0 &&
                           nd_cqe_valid(s->ents, s->mask, s->cons); lap++) {
        struct nd_cqe e;
        enum nd_xlate x;

        memcpy(&e, &s->ents[s->cons & s->mask], sizeof(e));
        x = s->ops->translate(s->ctx, &e, &r);
        if (x == ND_XLATE_DEFER || x == ND_XLATE_BAD)
            break;
        if (x != ND_XLATE_SKIP) {
            if (!orphan_room(cq)) {
                nd_log(ND_LOG_ERROR, ND_SUB_CQ, "no memory for the completions of a closed queue pair");
                break;
            }
            cq->orphans[cq->orphan_head + cq->norphans++] = r;
        }
        if (x == ND_XLATE_KEEP)
            continue;
        s->cons++;
        atomic_store_explicit(&s->hdr->cons, s->cons, memory_order_release);
        if (x == ND_XLATE_OK && s->ops->retire)
            s->ops->retire(s->ctx, &e);
    }
}

void nd_cq_detach(struct nd_cq *cq, struct nd_cq_src *s)
{
    struct nd_ovbatch b;
    bool orphaned;

    nd_ovbatch_init(&b, cq->ov.port);
    nd_lock_acquire(&cq->lock);
    orphaned = cq->norphans;
    salvage(cq, s);
    orphaned = cq->norphans != orphaned;
    for (uint32_t i = 0; i < cq->nsrc; i++)
        if (cq->src[i] == s) {
            cq->src[i] = cq->src[--cq->nsrc];
            cq->ndefer_capable -= s->ops->progress != NULL;
            break;
        }
    if (cq->next_scan >= cq->nsrc)
        cq->next_scan = 0;
    if (orphaned)
        cq_progress(cq, &b);        /* an armed CQ hears of the flushes */
    nd_lock_release(&cq->lock);
    nd_port_deliver(&b);
    if (orphaned)
        poke_waiters(cq);
    free(s);
}

void nd_cq_local_producer(struct nd_cq *cq, struct nd_ring_hdr *hdr, struct nd_cqe *ents,
                          uint32_t entries, struct nd_ring_producer *p)
{
    p->prod = atomic_load_explicit(&hdr->prod, memory_order_relaxed);
    p->cons_seen = atomic_load_explicit(&hdr->cons, memory_order_relaxed);
    p->hdr = hdr;
    p->ents = ents;
    p->mask = entries - 1;
    p->arm = cq->arm;
    p->signal_fd = cq->signal_fd;
}

/* For diagnostics (tests print it when something hangs): the CQ's view of its rings. */
void nd_cq_debug_dump(struct nd_cq *cq, FILE *f)
{
    fprintf(f, "cq %p: depth %u error 0x%x n_any %u n_sol %u arm 0x%x gen %u nsrc %u\n", (void *)cq, cq->depth,
            (unsigned)cq->error, cq->n_any, cq->n_sol, (unsigned)atomic_load(cq->arm), cq->arm_gen, cq->nsrc);
    for (uint32_t i = 0; i < cq->nsrc; i++) {
        struct nd_cq_src *s = cq->src[i];

        fprintf(f, "  ring %u: cons %u reported %u broken %d valid_end %u hdr.prod %u hdr.cons %u signalled %u\n", i,
                s->cons, s->reported, s->broken, nd_ring_valid_end(s->ents, s->mask, s->cons),
                (unsigned)atomic_load(&s->hdr->prod), (unsigned)atomic_load(&s->hdr->cons), s->hdr->signalled_gen);
    }
}
