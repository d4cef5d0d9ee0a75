/* SPDX-License-Identifier: MIT */
/*
 * The token table: one entry per memory region or window of an adapter, in the adapter's
 * shared region so that same-host peers check remote access against it without asking
 * us. Tokens are iWARP-style STags: a 24-bit index and an 8-bit key that changes on
 * every reuse, so a stale token never matches.
 */
#ifndef ND_MEM_INT_H
#define ND_MEM_INT_H

#include "core.h"

enum nd_mtab_kind { ND_MTAB_FREE = 0, ND_MTAB_MR = 1, ND_MTAB_MW = 2 };

/* Rights a remote access needs (the ND_MR_FLAG_* bits with ALLOW_REMOTE_WRITE as 0x4). */
#define ND_ACCESS_REMOTE_READ   0x2u
#define ND_ACCESS_REMOTE_WRITE  0x4u
#define ND_ACCESS_LOCAL_WRITE   0x1u
/* Remote atomics (verbs' IBV_ACCESS_REMOTE_ATOMIC): no ND_MR_FLAG_* names it, so the ND API
 * never grants it (nd_mr_register_atomic). */
#define ND_ACCESS_REMOTE_ATOMIC 0x10u

/*
 * Where the memory of a region lives when it is inside an nd_alloc_memory allocation: the
 * memfd's descriptor number in the owner and its inode (a peer opens /proc/<pid>/fd/<fd>
 * and checks the inode), and the owner's address of the file's first byte. ino 0: none.
 * A peer trusts none of it: see shm_data.c.
 */
struct nd_mtab_share {
    uint64_t ino;
    uint64_t base;
    uint64_t size;
    int32_t fd;
    uint32_t reserved;
};

/* One cache line per entry: a region changing never disturbs a peer checking its neighbour. */
struct nd_mtab_entry {
    _Atomic uint32_t seq;       /* seqlock: odd while the entry is being changed */
    uint32_t token;             /* index << 8 | key while valid; 0 while not */
    uint32_t access;            /* ND_MR_FLAG_* bits (windows: read/write as remote flags) */
    uint16_t kind;              /* enum nd_mtab_kind */
    uint16_t pd;                /* the protection domain: only queue pairs of the same one may use it */
    uint64_t addr;
    uint64_t length;
    struct nd_mtab_share share;
};

_Static_assert(sizeof(struct nd_mtab_entry) == ND_MTAB_ENTRY_BYTES, "the adapter region's layout");

#define ND_TOKEN_INDEX(t) ((t) >> 8)

int nd_mtab_init(struct nd_adapter *a);
void nd_mtab_destroy(struct nd_adapter *a);
int nd_mtab_alloc(struct nd_adapter *a, enum nd_mtab_kind kind, uint32_t *index);
void nd_mtab_free(struct nd_adapter *a, uint32_t index);
/* Make entry @index valid with a new key; returns the token. Adapter lock not needed.
 * @share (NULL, or ino 0: not shareable) says where peers can map the memory. @key:
 * ND_KEY_NEXT, or ND_KEY_GIVEN | the key byte the caller chose (verbs' ibv_inc_rkey). */
#define ND_KEY_NEXT 0u
#define ND_KEY_GIVEN 0x100u
uint32_t nd_mtab_publish(struct nd_adapter *a, uint32_t index, uint64_t addr, uint64_t len,
                         uint32_t access, const struct nd_mtab_share *share, uint32_t key, uint16_t pd);
void nd_mtab_revoke(struct nd_adapter *a, uint32_t index);
/* A peer's Send with Invalidate names @token: revoke it if it is a bound window's current
 * token (RFC 5040 §6.10; regions cannot be invalidated so). The window's object learns it
 * at its next Bind, Invalidate or close. Returns whether it was revoked. */
bool nd_mtab_remote_invalidate(struct nd_adapter *a, uint32_t token, uint16_t pd);

/*
 * nd_mtab_check - may a queue pair of protection domain @pd use @token for [addr, addr+len)
 * with @need rights? @table/@entries may be a peer's table mapped read-only. Returns
 * 0 or -EFAULT. Reads the entry under its seqlock, so never a torn
 * entry. The ND API has one protection domain (0); verbs gives each PD its own.
 */
int nd_mtab_check(const struct nd_mtab_entry *table, uint32_t entries, uint32_t token,
                        uint64_t addr, uint64_t len, uint32_t need, uint16_t pd);
/* Why nd_mtab_check refused: the three protection errors of RFC 5040 §7.4 (the values
 * are RDMAP's remote protection error codes). A range that wraps is out of bounds. */
enum nd_mtab_why { ND_MTAB_BAD_STAG = 0x00, ND_MTAB_BOUNDS = 0x01, ND_MTAB_RIGHTS = 0x02, ND_MTAB_OK = 0xff };
enum nd_mtab_why nd_mtab_why(const struct nd_mtab_entry *table, uint32_t entries, uint32_t token,
                             uint64_t addr, uint64_t len, uint32_t need, uint16_t pd);
/* The same, also reading the entry's share (ino 0 when the memory is not shareable). */
int nd_mtab_check_share(const struct nd_mtab_entry *table, uint32_t entries, uint32_t token,
                              uint64_t addr, uint64_t len, uint32_t need, uint16_t pd, struct nd_mtab_share *share);

/*
 * The last registration of our own table a poster found valid (its whole range and
 * rights), kept by the poster under its own lock: a queue pair posting receives into one
 * buffer asks the seqlock once, not on every post. Valid while the adapter's mtab_gen is
 * unchanged: every publish and revoke bumps it before and after the entry changes. Each
 * memo serves the one protection domain it names (its queue pair's or SRQ's, set with
 * it): filled only from an entry of that domain, its hits need not look again.
 */
struct nd_mtab_memo {
    uint32_t gen, token, access;
    uint16_t pd;
    uint64_t addr, len;
};

int nd_mtab_check_fill(struct nd_adapter *a, struct nd_mtab_memo *memo, uint32_t token,
                             uint64_t addr, uint64_t len, uint32_t need);

/* nd_mtab_check against our own adapter's table, for memo->pd, through @memo (filled on a miss). */
static inline int nd_mtab_check_local(struct nd_adapter *a, struct nd_mtab_memo *memo, uint32_t token,
                                            uint64_t addr, uint64_t len, uint32_t need)
{
    if (memo->token == token && (memo->access & need) == need && addr >= memo->addr &&
        addr - memo->addr <= memo->len && len <= memo->len - (addr - memo->addr) &&
        memo->gen == atomic_load_explicit(&a->mtab_gen, memory_order_acquire))
        return 0;
    return nd_mtab_check_fill(a, memo, token, addr, len, need);
}

/* Do the SGEs lie in registered memory of @a with @need rights? Under the memo's lock. */
static inline bool nd_sges_registered(struct nd_adapter *a, struct nd_mtab_memo *memo, const nd_sge *sge,
                                      uint32_t nsge, uint32_t need)
{
    for (uint32_t i = 0; i < nsge; i++)
        if (sge[i].buffer_length && nd_mtab_check_local(a, memo, sge[i].memory_region_token,
                                                        (uintptr_t)sge[i].buffer, sge[i].buffer_length,
                                                        need) != 0)
            return false;
    return true;
}

/*
 * nd_alloc_memory allocations (sharemem.c). Claim: is [addr, addr+len) inside one? Then
 * fill @out and count a registration in it (its free is refused until released by the
 * base in @out); else @out is zeroed (ino 0: not shareable).
 */
void nd_share_claim(uintptr_t addr, size_t len, struct nd_mtab_share *out);
void nd_share_release(uintptr_t base);

/*
 * Registered ordinary memory's whole 2 MiB blocks become transparent huge pages, in a
 * thread of the adapter (hugepages.c), unless ND_MR_HUGE_PAGES is 0; true when work was
 * queued (enqueueing only: Register does not wait for it). Withdraw: @owner's
 * jobs are dropped (the one under way stops after its current block). Stop: at adapter
 * destruction, joins the thread.
 */
bool nd_huge_collapse_later(struct nd_adapter *a, const void *owner, const void *buf, size_t len);
void nd_huge_withdraw(struct nd_adapter *a, const void *owner);
void nd_huge_stop(struct nd_adapter *a);

/* Memory windows, bound and invalidated by queue pairs (mem.c). */
/* @key as nd_mtab_publish's; @replace: a bound window is invalidated first (verbs' type 1
 * windows rebind so), else binding a bound window fails. */
int nd_mw_bind_to(nd_mw *mw, nd_mr *mr, const void *buf, size_t len, uint32_t access, uint32_t key,
                        bool replace);
int nd_mw_invalidate(nd_mw *mw);
/* Could @mr grant @access over [buf, buf+len)? 0 or -EFAULT. */
int nd_mw_bind_check(nd_mr *mr, const void *buf, size_t len, uint32_t access);
bool nd_mr_of(const nd_mr *mr, const struct nd_adapter *a);
/* Protection domains (verbs; everything of the ND API is in domain 0). A region or window
 * takes its domain before it is registered or bound; a queue pair uses only memory of its
 * own domain, locally and from its peer. */
void nd_mr_set_pd(nd_mr *mr, uint16_t pd);
/* Change a registered region in place, its token kept (verbs' ibv_rereg_mr); returns once
 * nothing touches the old range through it. 0, -EBUSY (windows bound) or a register error. */
int nd_mr_reregister(nd_mr *mr, const void *buf, size_t len, uint32_t flags, bool atomic, uint16_t pd);
/* ndc_mr_register, and with @atomic the region also admits remote atomics (verbs). */
int nd_mr_register_atomic(nd_mr *mr, const void *buf, size_t len, uint32_t flags, bool atomic);
uint16_t nd_mr_pd(const nd_mr *mr);
void nd_mw_set_pd(nd_mw *mw, uint16_t pd);
uint16_t nd_mw_pd(const nd_mw *mw);
bool nd_mw_of(const nd_mw *mw, const struct nd_adapter *a);

#endif
