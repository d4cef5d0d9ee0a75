// SPDX-License-Identifier: MIT
/*
 * The bounce path: RDMA between two processes of one host that may not use cross-memory
 * attach on each other (Yama's ptrace_scope, a seccomp profile refusing
 * process_vm_readv/writev). The initiator cannot reach the target's private memory, so
 * the target finishes each transfer itself: the initiator copies a chunk into the channel
 * the target made for the connection and both map, the target's agent thread checks the
 * request against its own token table and copies the chunk on into its memory (or, for a
 * Read, out of it into the channel), and the two copies overlap chunk by chunk.
 *
 * Requests complete in order and the initiator waits for each transfer's last answer
 * before it completes the request, as it waits for a cross-memory call: so everything the
 * initiator places afterwards (a Send's completion in the target's ring) lands after the
 * bytes, and RC order holds with no ordering of its own.
 */
#include "shm_bounce.h"
#include "core/atomic.h"
#include "core/log.h"
#include "core/qp_int.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A peer that answers nothing for this long is stopped or broken. */
#define ANSWER_MAX_NS (10000ull * 1000000)
/* How long an initiator waits for the peer to offer its channel (it does at its attach,
 * which a passive side's first post may just precede). */
#define OFFER_WAIT_NS (2000ull * 1000000)

static struct shm_bounce_hdr *hdr_of(uint8_t *map)
{
    return (struct shm_bounce_hdr *)map;
}

static struct shm_bounce_req *req_of(uint8_t *map, uint32_t seq)
{
    return (struct shm_bounce_req *)(map + SHM_BOUNCE_REQS_OFF) + (seq % SHM_BOUNCE_ENTRIES);
}

static uint8_t *chunk_of(uint8_t *map, uint32_t seq)
{
    return map + SHM_BOUNCE_DATA_OFF + (size_t)(seq % SHM_BOUNCE_ENTRIES) * SHM_BOUNCE_CHUNK;
}

/* ---- the target's end ---- */

struct shm_served *shm_bounce_channel_new(const struct shm_bounce_rights *rights)
{
    struct shm_served *s = calloc(1, sizeof(*s));
    void *map = MAP_FAILED;

    if (!s)
        return NULL;
    s->fd = nd_memfd_sealed("netdirect-bounce", SHM_BOUNCE_BYTES);
    if (s->fd >= 0)
        map = mmap(NULL, SHM_BOUNCE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
    if (map == MAP_FAILED) {
        if (s->fd >= 0)
            close(s->fd);
        free(s);
        return NULL;
    }
    s->map = map;
    s->rights = *rights;
    *hdr_of(s->map) = (struct shm_bounce_hdr){ .magic = SHM_BOUNCE_MAGIC, .version = SHM_BOUNCE_VERSION,
                                                .entries = SHM_BOUNCE_ENTRIES, .chunk = SHM_BOUNCE_CHUNK };
    return s;
}

void shm_bounce_channel_free(struct shm_served *s)
{
    if (!s)
        return;
    munmap(s->map, SHM_BOUNCE_BYTES);
    close(s->fd);
    free(s);
}

bool shm_bounce_pending(const struct shm_served *s)
{
    return !atomic_load_explicit(&s->broken, memory_order_relaxed) &&
           atomic_load_explicit(&hdr_of(s->map)->prod, memory_order_relaxed) !=
               atomic_load_explicit(&s->served, memory_order_relaxed);
}

/*
 * Copy between the channel and our registered memory. Under ThreadSanitizer the bytes go
 * by a loop it does not watch: they are ordered for our application by the peer's
 * completion, through another process, which it cannot see.
 */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SHM_BOUNCE_TSAN 1
#endif
#endif
#ifdef SHM_BOUNCE_TSAN
__attribute__((no_sanitize("thread"), noinline)) static void serve_copy(void *dst, const void *src, size_t n)
{
    volatile uint8_t *d = dst;
    const volatile uint8_t *p = src;

    for (size_t i = 0; i < n; i++)
        d[i] = p[i];
}
#else
static void serve_copy(void *dst, const void *src, size_t n)
{
    memcpy(dst, src, n);
}
#endif

/*
 * Into our memory in address order as a reader sees it: programs poll a Write's last byte
 * (perftest's latency tests) and must then find every byte before it. memcpy stores its
 * tail early, and a fast string copy's stores may become visible in any order, so the
 * last byte goes alone, after a full fence.
 */
static void serve_copy_in_order(uint8_t *dst, const uint8_t *src, size_t n)
{
    serve_copy(dst, src, n - 1);
    atomic_thread_fence(memory_order_seq_cst);
    serve_copy(dst + n - 1, src + n - 1, 1);
}

/* An atomic on our word at @mine, under our lock for it (the one initiators that map the
 * memory take too): the original value in *old. */
static int32_t serve_atomic(const struct shm_bounce_req *r, void *mine, uint64_t *old)
{
    struct nd_atomic_page *page = nd_atomic_own_page();
    _Atomic uint32_t *held;
    uint64_t now;
    int st;

    if (!page)
        return -EOPNOTSUPP;
    if ((st = nd_atomic_lock(page, r->addr, &held)) != 0)
        return st;
    serve_copy(old, mine, sizeof(*old));
    now = nd_atomic_result((uint8_t)r->atomic, *old, r->add_or_cmp, r->swap);
    serve_copy(mine, &now, sizeof(now));
    nd_atomic_unlock(held);
    return 0;
}

/* The rights a request needs, and the protection domain that must hold them; false for
 * a request no initiator of ours writes. */
static bool request_needs(const struct shm_served *s, const struct shm_bounce_req *r, uint32_t *need, uint16_t *pd)
{
    *pd = s->rights.pd;
    switch (r->op) {
    case SHM_BOUNCE_WRITE:
        *need = ND_ACCESS_REMOTE_WRITE;
        return r->len >= 1 && r->len <= SHM_BOUNCE_CHUNK;
    case SHM_BOUNCE_READ:
        *need = ND_ACCESS_REMOTE_READ;
        return r->len >= 1 && r->len <= SHM_BOUNCE_CHUNK;
    case SHM_BOUNCE_RECV:
        *need = ND_ACCESS_LOCAL_WRITE;
        *pd = s->rights.recv_pd;
        return r->len >= 1 && r->len <= SHM_BOUNCE_CHUNK;
    case SHM_BOUNCE_ATOMIC:
        *need = ND_ACCESS_REMOTE_ATOMIC;
        return r->len == sizeof(uint64_t) && !(r->addr & 7) && r->atomic <= UINT8_MAX &&
               nd_type_is_atomic((uint8_t)r->atomic);
    default:
        return false;
    }
}

/* One request @r (our copy of it), its bytes in @chunk: its status, *old for an atomic. */
static int32_t serve_one(struct shm_served *s, const struct shm_bounce_req *r, uint8_t *chunk, uint64_t *old)
{
    uint32_t need, v;
    uint16_t pd;
    int32_t st = 0;

    if (!request_needs(s, r, &need, &pd))
        return -EINVAL;
    if (r->op == SHM_BOUNCE_ATOMIC &&
        atomic_load_explicit(s->rights.no_remote_atomic, memory_order_relaxed))
        return -EBADRQC;
    /* Deregister revokes, fences, then reads touching (shm_bounce_quiesce): either it sees
     * us inside and waits, or we see the revocation here. */
    v = atomic_load_explicit(&s->touching, memory_order_relaxed);
    atomic_store_explicit(&s->touching, v | 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst);
    if (nd_mtab_check(s->rights.mtab, ND_MTAB_ENTRIES, r->token, r->addr, r->len, need, pd) != 0) {
        st = -EFAULT;
    } else {
        void *mine = (void *)(uintptr_t)r->addr;

        switch (r->op) {
        case SHM_BOUNCE_READ:
            serve_copy(chunk, mine, r->len);
            break;
        case SHM_BOUNCE_ATOMIC:
            st = serve_atomic(r, mine, old);
            break;
        default:
            serve_copy_in_order(mine, chunk, r->len);
            break;
        }
    }
    atomic_store_explicit(&s->touching, v + 2, memory_order_release);
    return st;
}

uint32_t shm_bounce_serve(struct shm_served *s)
{
    struct shm_bounce_hdr *h = hdr_of(s->map);
    uint32_t prod = atomic_load_explicit(&h->prod, memory_order_acquire), n = 0;
    uint32_t served = atomic_load_explicit(&s->served, memory_order_relaxed);

    if (atomic_load_explicit(&s->broken, memory_order_relaxed) || prod == served)
        return 0;
    if (prod - served > SHM_BOUNCE_ENTRIES) {
        nd_log(ND_LOG_WARN, ND_SUB_SHM, "a peer's bounce channel claims %u requests in flight: no more service",
               prod - served);
        atomic_store_explicit(&s->broken, true, memory_order_relaxed);
        return 0;
    }
    while (served != prod) {
        struct shm_bounce_req *shared = req_of(s->map, served), r;
        uint64_t old = 0;

        memcpy(&r, shared, sizeof(r));      /* the peer may rewrite it while we look */
        int32_t st = serve_one(s, &r, chunk_of(s->map, served), &old);

        shared->old = old;
        shared->status = st;
        atomic_store_explicit(&s->served, ++served, memory_order_relaxed);
        atomic_store_explicit(&h->done, served, memory_order_release);
        n++;
    }
    return n;
}

uint32_t shm_bounce_serve_try(struct shm_served *s)
{
    uint32_t n;

    if (!shm_bounce_pending(s) || atomic_load_explicit(&s->serving, memory_order_relaxed) ||
        atomic_exchange_explicit(&s->serving, 1, memory_order_acquire))
        return 0;
    n = shm_bounce_serve(s);
    atomic_store_explicit(&s->serving, 0, memory_order_release);
    return n;
}

uint32_t shm_bounce_poll(struct shm_served *s)
{
    atomic_store_explicit(&s->polled_ns, nd_now_ns(), memory_order_relaxed);
    return shm_bounce_serve_try(s);
}

void shm_bounce_quiesce(struct shm_served *s)
{
    uint32_t v;

    if (!s)
        return;
    atomic_thread_fence(memory_order_seq_cst);      /* the revocation first */
    v = atomic_load_explicit(&s->touching, memory_order_acquire);
    /* Our own agent: it never waits for anything while inside a copy. */
    while ((v & 1) && atomic_load_explicit(&s->touching, memory_order_acquire) == v)
        nd_cpu_relax();
}

/* ---- the initiator's end ---- */

struct shm_bounce_link {
    uint8_t *map;
    uint32_t prod, reaped;          /* ours: what we wrote, what we took the answers of */
    uint32_t len[SHM_BOUNCE_ENTRIES];   /* each request's length as we wrote it */
    int bell;
    pid_t pid;
    const _Atomic uint32_t *ours, *theirs;
};

static bool live(const struct shm_bounce_link *l)
{
    return !((atomic_load_explicit(l->ours, memory_order_acquire) |
              atomic_load_explicit(l->theirs, memory_order_acquire)) & ND_WIRE_TERMINATED);
}

static bool wait_offer(const struct nd_qp_ctl *pctl, const struct shm_bounce_link *l)
{
    uint64_t start = nd_now_ns();

    while (!atomic_load_explicit(&pctl->bounce_ready, memory_order_acquire)) {
        if (!live(l) || nd_now_ns() - start > OFFER_WAIT_NS)
            return false;
        sched_yield();
    }
    return true;
}

struct shm_bounce_link *shm_bounce_link(pid_t pid, const struct nd_qp_ctl *pctl, const _Atomic uint32_t *ours,
                                        const _Atomic uint32_t *theirs)
{
    struct shm_bounce_link *l = calloc(1, sizeof(*l));
    struct nd_fd_ref ref;
    struct stat st;
    void *map = MAP_FAILED;
    int fd;

    if (!l)
        return NULL;
    *l = (struct shm_bounce_link){ .bell = -1, .pid = pid, .ours = ours, .theirs = theirs };
    if (!wait_offer(pctl, l))
        goto fail;
    memcpy(&ref, (const void *)&pctl->bounce_chan, sizeof(ref));
    fd = nd_fd_fetch(pid, &ref);
    if (fd >= 0) {
        if (nd_memfd_mappable(fd, SHM_BOUNCE_BYTES, &st))
            map = mmap(NULL, SHM_BOUNCE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
    }
    if (map == MAP_FAILED)
        goto fail;
    l->map = map;
    const struct shm_bounce_hdr *h = hdr_of(l->map);
    if (h->magic != SHM_BOUNCE_MAGIC || h->version != SHM_BOUNCE_VERSION || h->entries != SHM_BOUNCE_ENTRIES ||
        h->chunk != SHM_BOUNCE_CHUNK)
        goto fail;
    l->prod = l->reaped = atomic_load_explicit(&h->prod, memory_order_relaxed);
    if (atomic_load_explicit(&h->done, memory_order_acquire) != l->prod)
        goto fail;                  /* a channel someone used before us */
    l->bell = nd_fd_fetch_eventfd(pid, __atomic_load_n(&pctl->bounce_bell, __ATOMIC_RELAXED));
    if (l->bell < 0)
        goto fail;
    return l;
fail:
    nd_log(ND_LOG_INFO, ND_SUB_SHM, "peer %d's bounce channel cannot be had: requests into its memory fail", (int)pid);
    shm_bounce_unlink(l);
    return NULL;
}

void shm_bounce_unlink(struct shm_bounce_link *l)
{
    if (!l)
        return;
    if (l->map)
        munmap(l->map, SHM_BOUNCE_BYTES);
    if (l->bell >= 0)
        close(l->bell);
    free(l);
}

/* Request @l->prod is written: hand it over, and wake the agent if it sleeps. */
static void submit(struct shm_bounce_link *l)
{
    struct shm_bounce_hdr *h = hdr_of(l->map);
    uint64_t one = 1;

    atomic_store_explicit(&h->prod, ++l->prod, memory_order_release);
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&h->asleep, memory_order_relaxed) && atomic_exchange(&h->asleep, 0) &&
        write(l->bell, &one, sizeof(one)) < 0 && errno != EAGAIN)
        nd_log(ND_LOG_DEBUG, ND_SUB_SHM, "bounce agent wake-up failed: %m");
}

/*
 * Wait for the answer to request @l->reaped: 0 with its entry's status in *status (and
 * the entry readable), or why the wait ended. The peer is checked every few milliseconds
 * of waiting; a transfer of a chunk takes tens of microseconds.
 */
static int answer(struct shm_bounce_link *l, int32_t *status)
{
    struct shm_bounce_hdr *h = hdr_of(l->map);
    uint64_t start = 0, checked = 0;

    for (uint32_t spins = 0;; spins++) {
        uint32_t done = atomic_load_explicit(&h->done, memory_order_acquire);

        if ((int32_t)(done - l->reaped) > 0) {
            if ((int32_t)(done - l->prod) > 0)
                return -EIO;        /* answers to requests never made */
            *status = __atomic_load_n(&req_of(l->map, l->reaped)->status, __ATOMIC_RELAXED);
            l->reaped++;
            return 0;
        }
        if (spins < 256) {
            nd_cpu_relax();
            continue;
        }
        if (!live(l))
            return -ECANCELED;
        sched_yield();              /* the agent may need this CPU */
        if ((spins & 255) != 0)
            continue;
        uint64_t now = nd_now_ns();

        if (!start)
            start = checked = now;
        if (now - checked > 5000000) {
            checked = now;
            if (shm_peer_exiting(l->pid))
                return -ECONNABORTED;
        }
        if (now - start > ANSWER_MAX_NS) {
            nd_log(ND_LOG_ERROR, ND_SUB_SHM, "peer %d answered no bounce request for %llu s", (int)l->pid,
                   (unsigned long long)(ANSWER_MAX_NS / 1000000000ull));
            return -ETIMEDOUT;
        }
    }
}

/* The peer's status as ours: only the codes its agent gives. */
static int status_of(int32_t st)
{
    return st == 0 || st == -EFAULT || st == -EBADRQC || st == -EDEADLK || st == -EOPNOTSUPP ? st : -EIO;
}

/* Take the next answer (every request in flight is of the call's kind @op): a Read's bytes
 * go on into @local; the first refusal is kept. */
static int reap(struct shm_bounce_link *l, uint8_t op, struct shm_sge_stream *local, int *first)
{
    uint32_t slot = l->reaped % SHM_BOUNCE_ENTRIES;
    int32_t status;
    int st = answer(l, &status);

    if (st != 0)
        return st;
    st = status_of(status);
    if (st != 0) {
        if (*first == 0)
            *first = st;
    } else if (op == SHM_BOUNCE_READ && *first == 0) {
        shm_stream_copy(local, l->map + SHM_BOUNCE_DATA_OFF + (size_t)slot * SHM_BOUNCE_CHUNK, l->len[slot], false);
    }
    return 0;
}

static void put_request(struct shm_bounce_link *l, uint8_t op, uint32_t token, uint64_t addr, uint32_t len)
{
    struct shm_bounce_req *r = req_of(l->map, l->prod);

    r->op = op;
    r->token = token;
    r->addr = addr;
    r->len = len;
    r->status = 0;
    l->len[l->prod % SHM_BOUNCE_ENTRIES] = len;
}

/* The connection is ending or broken: answers still owed stay owed. */
static int abandon(struct shm_bounce_link *l, int st)
{
    l->reaped = l->prod;
    return st;
}

/*
 * Each request waits for its last answer, as a cross-memory call would: a Write then
 * completes with its bytes in the peer's memory (what an RC Write's completion promises
 * rdma-core's programs), and nothing we place afterwards can pass them. Within a request
 * our copy of each chunk overlaps the peer's copy of the one before.
 */
int shm_bounce_move(struct shm_bounce_link *l, uint8_t op, const struct shm_piece *p, int n, const struct nd_wr *wr)
{
    struct shm_sge_stream out = { wr->sge, 0, 0 }, in = { wr->sge, 0, 0 };
    int first = 0, st = 0;

    for (int i = 0; i < n && first == 0 && st == 0; i++)
        for (uint64_t off = 0; off < p[i].len && first == 0 && st == 0;) {
            uint32_t len = p[i].len - off > SHM_BOUNCE_CHUNK ? SHM_BOUNCE_CHUNK : (uint32_t)(p[i].len - off);

            if (l->prod - l->reaped == SHM_BOUNCE_ENTRIES && (st = reap(l, op, &in, &first)) != 0)
                break;
            if (op != SHM_BOUNCE_READ)
                shm_stream_copy(&out, chunk_of(l->map, l->prod), len, true);
            put_request(l, op, p[i].token, p[i].addr + off, len);
            submit(l);
            off += len;
        }
    while (st == 0 && l->reaped != l->prod)
        st = reap(l, op, &in, &first);
    return st != 0 ? abandon(l, st) : first;
}

int shm_bounce_atomic(struct shm_bounce_link *l, const struct nd_wr *wr, uint64_t *old)
{
    /* Every call leaves nothing in flight: the ring is empty here. */
    uint32_t seq = l->prod;
    struct shm_bounce_req *r = req_of(l->map, seq);
    int first = 0, st = 0;

    put_request(l, SHM_BOUNCE_ATOMIC, wr->remote_token, wr->remote_addr, sizeof(*old));
    r->atomic = wr->atomic;
    r->add_or_cmp = wr->add_or_cmp;
    r->swap = wr->swap;
    submit(l);
    while (st == 0 && l->reaped != l->prod)
        st = reap(l, SHM_BOUNCE_ATOMIC, NULL, &first);
    if (st != 0)
        return abandon(l, st);
    *old = __atomic_load_n(&req_of(l->map, seq)->old, __ATOMIC_RELAXED);
    return first;
}
