/* SPDX-License-Identifier: MIT */
/* Remote atomics' serialisation: each process's page of atomic locks (atomic.c). */
#ifndef ND_ATOMIC_H
#define ND_ATOMIC_H

#include "core.h"

#include <stdatomic.h>

#define ND_ATOMIC_LOCKS 64

struct nd_atomic_page {
    struct {
        _Atomic uint32_t word;      /* the holder's pid, 0 when free */
        uint8_t pad[ND_CACHELINE - sizeof(uint32_t)];
    } lock[ND_ATOMIC_LOCKS];
};

_Static_assert(sizeof(struct nd_atomic_page) == 4096, "one page");

struct nd_mtab_entry;

/* This process's page (made on first use); NULL if it cannot be had. */
struct nd_atomic_page *nd_atomic_own_page(void);
/* Name this process's page in an adapter's token-table entry 0, for peers. */
void nd_atomic_publish(struct nd_mtab_entry *entry0);
/* Take @page's lock for target address @addr (0, or -EDEADLK); release it. */
int nd_atomic_lock(struct nd_atomic_page *page, uint64_t addr, _Atomic uint32_t **held);
void nd_atomic_unlock(_Atomic uint32_t *held);
/* The value an atomic of @type leaves where @old was. */
uint64_t nd_atomic_result(uint8_t type, uint64_t old, uint64_t add_or_cmp, uint64_t swap);
/* Run an atomic on our own memory at @target (8 aligned bytes, its rights checked), under
 * our lock for it: the original value in *old. 0, -EDEADLK or -EOPNOTSUPP (no page). */
int nd_atomic_local(uint8_t type, uint64_t *target, uint64_t add_or_cmp, uint64_t swap, uint64_t *old);

#endif
