// SPDX-License-Identifier: MIT
/*
 * Deregister's barrier. Registered memory is touched under an object lock only: a queue
 * pair's posts and its transport's progress (shm's cross-memory calls and copies, iwarp's
 * placement and framing) under the queue pair's lock, a receive's scatter under its CQ's.
 * Each of them checks the token table under that lock, at the moment it touches the
 * memory. So once a registration is revoked, waiting out every such lock once leaves no
 * toucher that missed the revocation. Two things are not under our locks: a same-host
 * peer's transfer into or out of our memory (the transport's peer_quiesce waits for it),
 * and bytes a transport queued for later (its mem_revoked op copies or drops them).
 */
#include "qp_int.h"
#include "lock.h"
#include "transport.h"

void nd_mem_user_add(struct nd_adapter *a, struct nd_mem_user *u, struct nd_lock *lock, struct nd_qp *qp)
{
    u->lock = lock;
    u->qp = qp;
    pthread_mutex_lock(&a->users_lock);
    u->next = &a->users;
    u->prev = a->users.prev;
    a->users.prev->next = u;
    a->users.prev = u;
    a->nqp_users += qp != NULL;
    pthread_mutex_unlock(&a->users_lock);
}

void nd_mem_user_remove(struct nd_adapter *a, struct nd_mem_user *u)
{
    pthread_mutex_lock(&a->users_lock);
    u->prev->next = u->next;
    u->next->prev = u->prev;
    a->nqp_users -= u->qp != NULL;
    pthread_mutex_unlock(&a->users_lock);
    u->prev = u->next = NULL;
}

static bool receive_in(const struct nd_rq_slot *r, uint64_t addr, uint64_t len)
{
    for (uint32_t i = 0; i < r->nsge; i++) {
        uint64_t a = (uintptr_t)r->sge[i].buffer;

        if (r->sge[i].buffer_length && a < addr + len && addr < a + r->sge[i].buffer_length)
            return true;
    }
    return false;
}

/* Deregister or re-register of [addr, addr+len): a receive posted in it may now fail its
 * check, and the queue pair's control block says so (ND_WIRE_CHECK_RECV). */
static void receives_revoked(struct nd_qp *qp, uint64_t addr, uint64_t len)
{
    /* A lock biased to the thread that posts keeps its bias (Deregister only waits it
     * out): the receives are not looked at, and a Send into one that went completes at its
     * sender while the receive fails at its scatter, as before the flag existed. */
    if (nd_lock_biased_elsewhere(&qp->lock))
        return;
    nd_lock_acquire(&qp->lock);
    for (uint32_t k = atomic_load_explicit(&qp->rq_expected, memory_order_acquire); k != qp->rq_posted; k++)
        if (receive_in(&qp->rq[k & (qp->rq_entries - 1)], addr, len)) {
            atomic_fetch_or(&qp->ctl->state, ND_WIRE_CHECK_RECV);
            break;
        }
    nd_lock_release(&qp->lock);
}

/* A queue pair's transport lets go of the range: what it queued, and its peer. */
static void qp_let_go(struct nd_qp *qp, uint64_t addr, uint64_t len)
{
    /* Set once at connection and cleared only after the queue pair left the list. */
    const struct nd_transport_ops *t = __atomic_load_n(&qp->tops, __ATOMIC_ACQUIRE);

    /* Before the connection too: a same-host peer reads the word from its attach on. */
    if (!qp->datagram && !qp->srq)
        receives_revoked(qp, addr, len);
    if (!t)
        return;
    if (t->mem_revoked) {
        nd_lock_acquire(&qp->lock);
        t->mem_revoked(qp, addr, len);
        nd_lock_release(&qp->lock);
    }
    if (t->peer_quiesce)
        t->peer_quiesce(qp);
}

void nd_mem_barrier(struct nd_adapter *a, uint64_t addr, uint64_t len)
{
    bool biased = false;

    pthread_mutex_lock(&a->users_lock);
    /* With no queue pair nothing can be touching registered memory: a CQ scatters only
     * for its queue pairs' rings, which are gone before a queue pair leaves the list. */
    if (a->nqp_users) {
        /* The revocation visible first: a lock biased from now on has an owner that sees it. */
        atomic_thread_fence(memory_order_seq_cst);
        for (struct nd_mem_user *u = a->users.next; u != &a->users && !biased; u = u->next)
            biased = nd_lock_has_owner(u->lock);
        if (biased)
            nd_lock_fence_biased();
        for (struct nd_mem_user *u = a->users.next; u != &a->users; u = u->next) {
            nd_lock_wait_out(u->lock);
            if (u->qp)
                qp_let_go(u->qp, addr, len);
        }
    }
    pthread_mutex_unlock(&a->users_lock);
}
