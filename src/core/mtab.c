// SPDX-License-Identifier: MIT
#include "atomic.h"
#include "mem_int.h"

#include <stdlib.h>

int nd_mtab_init(struct nd_adapter *a)
{
    a->mtab_free = malloc(ND_MTAB_ENTRIES * sizeof(uint32_t));
    a->mtab_key = calloc(ND_MTAB_ENTRIES, 1);
    if (!a->mtab_free || !a->mtab_key) {
        free(a->mtab_free);
        free(a->mtab_key);
        return -ENOMEM;
    }
    /* Index 0 is never handed out, so no valid token is 0. Its entry names this process's
     * atomic lock page for peers instead. Low indices are used first. */
    nd_atomic_publish(&a->mtab[0]);
    a->mtab_nfree = 0;
    for (uint32_t i = ND_MTAB_ENTRIES - 1; i >= 1; i--)
        a->mtab_free[a->mtab_nfree++] = i;
    return 0;
}

void nd_mtab_destroy(struct nd_adapter *a)
{
    free(a->mtab_free);
    free(a->mtab_key);
}

int nd_mtab_alloc(struct nd_adapter *a, enum nd_mtab_kind kind, uint32_t *index)
{
    int st = -ENOBUFS;

    pthread_mutex_lock(&a->lock);
    if (a->mtab_nfree) {
        *index = a->mtab_free[--a->mtab_nfree];
        a->mtab[*index].kind = kind;
        st = 0;
    }
    pthread_mutex_unlock(&a->lock);
    return st;
}

void nd_mtab_free(struct nd_adapter *a, uint32_t index)
{
    nd_mtab_revoke(a, index);
    pthread_mutex_lock(&a->lock);
    a->mtab[index].kind = ND_MTAB_FREE;
    a->mtab_free[a->mtab_nfree++] = index;
    pthread_mutex_unlock(&a->lock);
}

/* Writers of one entry are serialised by its owning object; readers use the seqlock. */
static void entry_write_begin(struct nd_adapter *a, struct nd_mtab_entry *e)
{
    /* Before the entry changes: a memo read after this sees a new generation. */
    atomic_fetch_add_explicit(&a->mtab_gen, 1, memory_order_seq_cst);
    atomic_store_explicit(&e->seq, atomic_load_explicit(&e->seq, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
}

/* And after: a reader that took the generation of entry_write_begin's bump may still
 * have read the entry as it was; this bump makes its memo (or its placement's record,
 * iwarp) stale too. */
static void entry_write_end(struct nd_adapter *a, struct nd_mtab_entry *e)
{
    atomic_store_explicit(&e->seq, atomic_load_explicit(&e->seq, memory_order_relaxed) + 1,
                          memory_order_release);
    atomic_fetch_add_explicit(&a->mtab_gen, 1, memory_order_release);
}

/* Entries have two kinds of writer: their object (register, bind, invalidate, free) and a
 * peer's Send with Invalidate (a transport's thread); the adapter lock orders them. */
uint32_t nd_mtab_publish(struct nd_adapter *a, uint32_t index, uint64_t addr, uint64_t len,
                         uint32_t access, const struct nd_mtab_share *share, uint32_t key, uint16_t pd)
{
    struct nd_mtab_entry *e = &a->mtab[index];
    uint32_t token;

    pthread_mutex_lock(&a->lock);
    if (key & ND_KEY_GIVEN)
        a->mtab_key[index] = (uint8_t)key;
    else
        ++a->mtab_key[index];
    token = index << 8 | a->mtab_key[index];
    entry_write_begin(a, e);
    __atomic_store_n(&e->addr, addr, __ATOMIC_RELAXED);
    __atomic_store_n(&e->length, len, __ATOMIC_RELAXED);
    __atomic_store_n(&e->access, access, __ATOMIC_RELAXED);
    __atomic_store_n(&e->pd, pd, __ATOMIC_RELAXED);
    if (share && !share->ino)
        share = NULL;
    __atomic_store_n(&e->share.ino, share ? share->ino : 0, __ATOMIC_RELAXED);
    __atomic_store_n(&e->share.base, share ? share->base : 0, __ATOMIC_RELAXED);
    __atomic_store_n(&e->share.size, share ? share->size : 0, __ATOMIC_RELAXED);
    __atomic_store_n(&e->share.fd, share ? share->fd : -1, __ATOMIC_RELAXED);
    __atomic_store_n(&e->token, token, __ATOMIC_RELAXED);
    entry_write_end(a, e);
    pthread_mutex_unlock(&a->lock);
    return token;
}

static void revoke_locked(struct nd_adapter *a, struct nd_mtab_entry *e)
{
    entry_write_begin(a, e);
    __atomic_store_n(&e->token, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&e->access, 0, __ATOMIC_RELAXED);
    entry_write_end(a, e);
}

void nd_mtab_revoke(struct nd_adapter *a, uint32_t index)
{
    pthread_mutex_lock(&a->lock);
    revoke_locked(a, &a->mtab[index]);
    pthread_mutex_unlock(&a->lock);
}

bool nd_mtab_remote_invalidate(struct nd_adapter *a, uint32_t token, uint16_t pd)
{
    uint32_t index = ND_TOKEN_INDEX(token);
    bool ok = false;

    if (index == 0 || index >= ND_MTAB_ENTRIES)
        return false;
    pthread_mutex_lock(&a->lock);
    if (a->mtab[index].kind == ND_MTAB_MW && token && a->mtab[index].token == token && a->mtab[index].pd == pd) {
        revoke_locked(a, &a->mtab[index]);
        ok = true;
    }
    pthread_mutex_unlock(&a->lock);
    return ok;
}

int nd_mtab_check(const struct nd_mtab_entry *table, uint32_t entries, uint32_t token,
                        uint64_t addr, uint64_t len, uint32_t need, uint16_t pd)
{
    return nd_mtab_check_share(table, entries, token, addr, len, need, pd, NULL);
}

/* Entry @index as one consistent snapshot (its seqlock), or false. */
static bool entry_read(const struct nd_mtab_entry *e, struct nd_mtab_entry *out, bool share)
{
    uint32_t seq;
    int tries = 0;

    do {
        if (++tries > 1000)   /* a writer stuck mid-update (or a hostile table): refuse */
            return false;
        seq = atomic_load_explicit(&e->seq, memory_order_acquire);
        out->token = __atomic_load_n(&e->token, __ATOMIC_RELAXED);
        out->access = __atomic_load_n(&e->access, __ATOMIC_RELAXED);
        out->pd = __atomic_load_n(&e->pd, __ATOMIC_RELAXED);
        out->addr = __atomic_load_n(&e->addr, __ATOMIC_RELAXED);
        out->length = __atomic_load_n(&e->length, __ATOMIC_RELAXED);
        if (share) {
            out->share.ino = __atomic_load_n(&e->share.ino, __ATOMIC_RELAXED);
            out->share.base = __atomic_load_n(&e->share.base, __ATOMIC_RELAXED);
            out->share.size = __atomic_load_n(&e->share.size, __ATOMIC_RELAXED);
            out->share.fd = __atomic_load_n(&e->share.fd, __ATOMIC_RELAXED);
        }
        atomic_thread_fence(memory_order_acquire);
    } while ((seq & 1) || seq != atomic_load_explicit(&e->seq, memory_order_relaxed));
    return true;
}

/* Does the snapshot grant @need over [addr, addr+len) to @token, for protection domain @pd? */
static bool entry_grants(const struct nd_mtab_entry *e, uint32_t token, uint64_t addr, uint64_t len, uint32_t need,
                         uint16_t pd)
{
    if (e->token != token || e->pd != pd || (e->access & need) != need)
        return false;
    /* [addr, addr+len) inside [e->addr, e->addr+e->length), written so that nothing overflows. */
    return addr >= e->addr && addr - e->addr <= e->length && len <= e->length - (addr - e->addr);
}

enum nd_mtab_why nd_mtab_why(const struct nd_mtab_entry *table, uint32_t entries, uint32_t token,
                             uint64_t addr, uint64_t len, uint32_t need, uint16_t pd)
{
    uint32_t index = ND_TOKEN_INDEX(token);
    struct nd_mtab_entry e;

    /* Another protection domain's STag is, to this queue pair, no STag at all. */
    if (index == 0 || index >= entries || !entry_read(&table[index], &e, false) || e.token != token || e.pd != pd)
        return ND_MTAB_BAD_STAG;
    /* Rights before bounds, as siw checks them. */
    if ((e.access & need) != need)
        return ND_MTAB_RIGHTS;
    return entry_grants(&e, token, addr, len, need, pd) ? ND_MTAB_OK : ND_MTAB_BOUNDS;
}

int nd_mtab_check_share(const struct nd_mtab_entry *table, uint32_t entries, uint32_t token,
                              uint64_t addr, uint64_t len, uint32_t need, uint16_t pd, struct nd_mtab_share *share)
{
    uint32_t index = ND_TOKEN_INDEX(token);
    struct nd_mtab_entry e;     /* share filled by entry_read when asked for */

    if (index == 0 || index >= entries || !entry_read(&table[index], &e, share != NULL) ||
        !entry_grants(&e, token, addr, len, need, pd))
        return -EFAULT;
    if (share)
        *share = e.share;
    return 0;
}

int nd_mtab_check_fill(struct nd_adapter *a, struct nd_mtab_memo *memo, uint32_t token,
                             uint64_t addr, uint64_t len, uint32_t need)
{
    /* The generation first: a change after this load makes the memo stale, never wrong. */
    uint32_t gen = atomic_load_explicit(&a->mtab_gen, memory_order_acquire), index = ND_TOKEN_INDEX(token);
    struct nd_mtab_entry e;

    if (index == 0 || index >= ND_MTAB_ENTRIES || !entry_read(&a->mtab[index], &e, false) ||
        !entry_grants(&e, token, addr, len, need, memo->pd))
        return -EFAULT;
    *memo = (struct nd_mtab_memo){ .gen = gen, .token = token, .access = e.access, .pd = memo->pd, .addr = e.addr,
                                   .len = e.length };
    return 0;
}
