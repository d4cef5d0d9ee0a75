// SPDX-License-Identifier: MIT
/*
 * Queue pair regions come from a few large sealed memfds per adapter ("chunks"), cut into
 * equal areas and reused; a peer maps each chunk of ours once and keeps it. A connection
 * then costs neither side a memfd, a mapping, an unmapping (with its TLB shootdown on
 * every CPU the process ran on) nor the page faults of fresh memory: those were a quarter
 * of the CPU time of nd_conn's connections (docs/design-shm.md, "Regions").
 *
 * Reuse waits for the peer: an area whose descriptor went to a peer is "held" when its
 * queue pair goes, until the peer says it let go (the released word in the area's control
 * block, its last store there) or the peer process is gone. A peer that said so and wrote
 * on could as well have written with process_vm_writev, which the shm transport requires
 * it to be allowed; so a chunk shared whole gives a peer nothing new.
 *
 * Everything here runs under the adapter's lock; none of it is on a data path.
 */
#include "core.h"
#include "qp_int.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define ARENA_CHUNK_BYTES (8u << 20)  /* areas per chunk: this over the area size, at least 1 */
#define PEER_CHUNKS_IDLE 8u          /* peers' chunks kept mapped with no area of theirs in use */
/* Larger than any chunk a peer of ours makes (8 MiB, or one region: tens of MiB at most):
 * a bigger memfd is refused rather than mapped. */
#define PEER_CHUNK_MAX (1ull << 30)

enum area_state { AREA_FREE, AREA_USED, AREA_HELD };

struct nd_arena_chunk {
    struct nd_fd_ref ref;           /* our memfd, as peers name it */
    uint8_t *map;
    size_t area_bytes, bytes;
    uint32_t nareas, nused;
    uint8_t *state;                 /* enum area_state per area */
    pid_t *holder;                  /* AREA_HELD: the peer that may still write it (0: unknown) */
};

struct nd_peer_chunk {
    pid_t pid;                      /* whose it is: only that process may name it */
    uint64_t dev, ino;
    int prot;                       /* part of the key: one file may come as either */
    bool pinned;                    /* a peer adapter's region: kept until the adapter goes */
    uint8_t *map;
    size_t bytes;
    uint32_t refs;                  /* our queue pairs attached to one of its areas */
    uint64_t last_used;
};

struct nd_arena {
    struct nd_arena_chunk **chunk;
    uint32_t n, cap;
    struct nd_peer_chunk *peer;
    uint32_t npeer, cap_peer;
    uint64_t clock;
};

static struct nd_arena *arena_of(struct nd_adapter *a)
{
    if (!a->arena)
        a->arena = calloc(1, sizeof(struct nd_arena));
    return a->arena;
}

static void chunk_free(struct nd_arena_chunk *k)
{
    munmap(k->map, k->bytes);
    close(k->ref.fd);
    free(k->state);
    free(k->holder);
    free(k);
}

static struct nd_arena_chunk *chunk_new(struct nd_arena *ar, size_t area_bytes)
{
    struct nd_arena_chunk *k = calloc(1, sizeof(*k));

    if (!k)
        return NULL;
    k->area_bytes = area_bytes;
    k->nareas = area_bytes >= ARENA_CHUNK_BYTES ? 1u : (uint32_t)(ARENA_CHUNK_BYTES / area_bytes);
    k->bytes = (size_t)k->nareas * area_bytes;
    k->state = calloc(k->nareas, 1);
    k->holder = calloc(k->nareas, sizeof(pid_t));
    k->ref.fd = k->state && k->holder ? nd_memfd_sealed("netdirect-qp", k->bytes) : -1;
    k->map = nd_fd_ref_of(k->ref.fd, &k->ref) ? mmap(NULL, k->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, k->ref.fd, 0)
                                                 : MAP_FAILED;
    struct nd_arena_chunk **room = k->map == MAP_FAILED ? NULL : nd_with_room(ar->chunk, &ar->cap, ar->n, sizeof(*ar->chunk));

    if (!room) {
        if (k->map != MAP_FAILED)
            munmap(k->map, k->bytes);
        if (k->ref.fd >= 0)
            close(k->ref.fd);
        free(k->state);
        free(k->holder);
        free(k);
        return NULL;
    }
    ar->chunk = room;
    ar->chunk[ar->n++] = k;
    return k;
}

/* May held area @i be used again? Its peer let go, or is no more. @dead caches one answer
 * per search: a peer holding many areas costs one system call. */
static bool area_let_go(struct nd_arena_chunk *k, uint32_t i, pid_t *dead, pid_t *alive)
{
    const struct nd_qp_ctl *ctl = (const struct nd_qp_ctl *)(k->map + (size_t)i * k->area_bytes);
    pid_t p = k->holder[i];

    if (atomic_load_explicit(&ctl->released, memory_order_acquire))
        return true;
    if (!p || p == *alive)
        return false;
    if (p == *dead)
        return true;
    if (kill(p, 0) < 0 && errno == ESRCH) {
        *dead = p;
        return true;
    }
    *alive = p;             /* still there: it may yet write (or its pid was reused: wait on) */
    return false;
}

static bool take_area(struct nd_arena_chunk *k, bool look_held, pid_t *dead, pid_t *alive, uint32_t *out)
{
    for (uint32_t i = 0; i < k->nareas; i++) {
        if (k->state[i] == AREA_FREE || (look_held && k->state[i] == AREA_HELD && area_let_go(k, i, dead, alive))) {
            k->state[i] = AREA_USED;
            k->nused++;
            *out = i;
            return true;
        }
    }
    return false;
}

/* Is @k the only chunk of its size with an area free (or held by a peer that let go)? */
static bool last_with_room(struct nd_arena *ar, struct nd_arena_chunk *k)
{
    pid_t dead = 0, alive = 0;

    for (uint32_t c = 0; c < ar->n; c++) {
        struct nd_arena_chunk *o = ar->chunk[c];

        if (o == k || o->area_bytes != k->area_bytes)
            continue;
        for (uint32_t i = 0; i < o->nareas; i++) {
            if (o->state[i] == AREA_HELD && area_let_go(o, i, &dead, &alive))
                o->state[i] = AREA_FREE;
            if (o->state[i] == AREA_FREE)
                return false;
        }
    }
    return true;
}

int nd_area_get(struct nd_adapter *a, size_t bytes, size_t zero, struct nd_area *area)
{
    struct nd_arena *ar;
    struct nd_arena_chunk *k = NULL;
    pid_t dead = 0, alive = 0;
    uint32_t i = 0;

    pthread_mutex_lock(&a->lock);
    ar = arena_of(a);
    /* Free areas first; held ones are looked at (maybe a system call) only when none is. */
    for (int pass = 0; ar && pass < 2 && !k; pass++)
        for (uint32_t c = 0; c < ar->n && !k; c++)
            if (ar->chunk[c]->area_bytes == bytes && take_area(ar->chunk[c], pass == 1, &dead, &alive, &i))
                k = ar->chunk[c];
    if (ar && !k && (k = chunk_new(ar, bytes)) != NULL)
        take_area(k, false, &dead, &alive, &i);
    pthread_mutex_unlock(&a->lock);
    if (!k)
        return -ENOBUFS;
    area->chunk = k;
    area->index = i;
    area->map = k->map + (size_t)i * bytes;
    area->ref = k->ref;
    area->off = (uint64_t)i * bytes;
    /* A used area's control block, ring and receive descriptors must read as new; what
     * its message slots held is overwritten before it is read. */
    memset(area->map, 0, zero);
    return 0;
}

void nd_area_put(struct nd_adapter *a, struct nd_area *area, bool shared, pid_t peer)
{
    struct nd_arena_chunk *k = area->chunk;
    struct nd_arena *ar;

    if (!k)
        return;
    pthread_mutex_lock(&a->lock);
    ar = a->arena;
    k->state[area->index] = shared ? AREA_HELD : AREA_FREE;
    k->holder[area->index] = shared ? peer : 0;
    k->nused--;
    /* A chunk nobody uses goes, unless no other chunk of its size has room (then it is
     * the one the next queue pair takes: dropping it would cost a new chunk each time).
     * Areas still held in it are abandoned: their peers' mappings keep the memory alive
     * for them; we no longer look at it. */
    if (!k->nused && !last_with_room(ar, k))
        for (uint32_t c = 0; c < ar->n; c++)
            if (ar->chunk[c] == k) {
                ar->chunk[c] = ar->chunk[--ar->n];
                chunk_free(k);
                break;
            }
    pthread_mutex_unlock(&a->lock);
    area->chunk = NULL;
}

static void peer_evict_idle(struct nd_arena *ar)
{
    for (;;) {
        uint32_t idle = 0, lru = ar->npeer;

        for (uint32_t i = 0; i < ar->npeer; i++) {
            if (ar->peer[i].refs || ar->peer[i].pinned)
                continue;
            idle++;
            if (lru == ar->npeer || ar->peer[i].last_used < ar->peer[lru].last_used)
                lru = i;
        }
        if (idle <= PEER_CHUNKS_IDLE)
            return;
        munmap(ar->peer[lru].map, ar->peer[lru].bytes);
        ar->peer[lru] = ar->peer[--ar->npeer];
    }
}

/*
 * Peer @pid's memfd @ref, mapped with @prot once and found again by its inode (adapter lock
 * held). Only the process it came from may name a cached one: a peer cannot point us at
 * another's. New to us, it is fetched from the peer and must be sealed against shrinking
 * (no SIGBUS under our loads and stores). The mapping keeps the memfd alive, so its inode
 * cannot name another file while cached. NULL if it is no such memfd.
 */
static struct nd_peer_chunk *peer_chunk(struct nd_arena *ar, pid_t pid, const struct nd_fd_ref *ref, int prot)
{
    struct nd_peer_chunk *p = NULL, *room;
    struct stat st;
    void *m;
    int fd;

    for (uint32_t i = 0; i < ar->npeer; i++)
        if (ar->peer[i].ino == ref->ino && ar->peer[i].dev == ref->dev && ar->peer[i].prot == prot &&
            ar->peer[i].pid == pid)
            return &ar->peer[i];
    fd = nd_fd_fetch(pid, ref);
    if (fd < 0)
        return NULL;
    /* Sealed and not empty (the size comes with the check); no larger than any chunk. */
    if (!nd_memfd_mappable(fd, 1, &st) || (uint64_t)st.st_size > PEER_CHUNK_MAX)
        goto out;
    room = nd_with_room(ar->peer, &ar->cap_peer, ar->npeer, sizeof(*ar->peer));
    if (!room)
        goto out;
    ar->peer = room;
    m = mmap(NULL, (size_t)st.st_size, prot, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED)
        goto out;
    p = &ar->peer[ar->npeer++];
    *p = (struct nd_peer_chunk){ .pid = pid, .dev = ref->dev, .ino = ref->ino, .prot = prot, .map = m,
                                 .bytes = (size_t)st.st_size };
out:
    close(fd);
    return p;
}

uint8_t *nd_peer_area_map(struct nd_adapter *a, pid_t pid, const struct nd_fd_ref *ref, uint64_t off, size_t bytes)
{
    struct nd_arena *ar;
    struct nd_peer_chunk *p;
    uint8_t *region = NULL;

    pthread_mutex_lock(&a->lock);
    ar = arena_of(a);
    p = ar ? peer_chunk(ar, pid, ref, PROT_READ | PROT_WRITE) : NULL;
    if (p && off % 4096 == 0 && off <= p->bytes && bytes <= p->bytes - off) {
        p->refs++;
        region = p->map + off;
    }
    pthread_mutex_unlock(&a->lock);
    return region;
}

const uint8_t *nd_adapter_map_peer(struct nd_adapter *a, pid_t pid, const struct nd_fd_ref *ref)
{
    struct nd_arena *ar;
    struct nd_peer_chunk *p;
    const uint8_t *map = NULL;

    pthread_mutex_lock(&a->lock);
    ar = arena_of(a);
    p = ar ? peer_chunk(ar, pid, ref, PROT_READ) : NULL;
    if (p && p->bytes >= ND_ADAPTER_REGION_BYTES) {
        p->pinned = true;
        map = p->map;
    }
    pthread_mutex_unlock(&a->lock);
    return map;
}

void nd_peer_area_unmap(struct nd_adapter *a, uint8_t *region)
{
    struct nd_arena *ar;

    pthread_mutex_lock(&a->lock);
    ar = a->arena;
    for (uint32_t i = 0; ar && i < ar->npeer; i++) {
        struct nd_peer_chunk *p = &ar->peer[i];

        if (region >= p->map && region < p->map + p->bytes && p->refs) {
            p->refs--;
            p->last_used = ++ar->clock;
            break;
        }
    }
    if (ar)
        peer_evict_idle(ar);
    pthread_mutex_unlock(&a->lock);
}

void nd_arena_destroy(struct nd_adapter *a)
{
    struct nd_arena *ar = a->arena;

    if (!ar)
        return;
    for (uint32_t c = 0; c < ar->n; c++)
        chunk_free(ar->chunk[c]);
    for (uint32_t i = 0; i < ar->npeer; i++)
        munmap(ar->peer[i].map, ar->peer[i].bytes);
    free(ar->chunk);
    free(ar->peer);
    free(ar);
    a->arena = NULL;
}

uint32_t nd_arena_chunk_count(struct nd_adapter *a)
{
    uint32_t n;

    pthread_mutex_lock(&a->lock);
    n = a->arena ? a->arena->n : 0;
    pthread_mutex_unlock(&a->lock);
    return n;
}
