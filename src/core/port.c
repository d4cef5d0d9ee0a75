// SPDX-License-Identifier: MIT
/*
 * The completion port: an epoll set over the event sources of its objects (CQ eventfds,
 * edge-triggered) plus a FIFO of completed requests whose non-emptiness is mirrored in a
 * level-triggered eventfd, so the epoll fd itself polls readable exactly when
 * ndc_port_wait(port, 0) has something to do.
 */
#include "core.h"
#include "log.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define QUEUE_EVENT_ID UINT64_MAX
#define KICK_EVENT_ID (UINT64_MAX - 1)

struct port_source {
    void *obj;                  /* NULL when the slot is free or being removed */
    nd_port_signal_fn fn;
    uint32_t gen;               /* bumped on removal so stale epoll events are ignored */
    uint32_t next_free;
    uint32_t busy;              /* signal functions of this source running right now */
    bool removed;               /* freed by the last of them to finish */
    bool kicked;                /* listed in kicked[], to run */
    bool fdless;                /* runs only when kicked */
    _Atomic uint32_t *inflight; /* the object's count of running calls, or NULL */
    int fd;                     /* its descriptor (-1: kicked only) */
    uint32_t pending_at;        /* its place in pending[] while not in the epoll set yet */
};

#define NOT_PENDING UINT32_MAX

/*
 * Signal functions run without source_lock: they take their object's lock, and their
 * objects take source_lock (registering sockets) while holding it, so calling them under
 * it would order the two locks both ways. 'busy' keeps a removed source's object alive
 * until its running calls return; the thread inside a call may remove its own source.
 */
struct dispatch_mark {
    const struct nd_port *port;
    uint32_t idx;
};
static _Thread_local struct dispatch_mark dispatching;

struct nd_port {
    uint32_t magic;
    atomic_uint objects;        /* objects created on this port */
    atomic_int timed;           /* sources waiting for time to pass: waits tick */
    _Atomic uint64_t last_tick_ns;
    int epfd;
    int queue_fd;
    pthread_mutex_t queue_lock;
    nd_overlapped **queue;      /* completed requests, oldest at qhead: pointers only */
    uint32_t qhead, qcount, qcap;
    bool queue_fd_raised;       /* queue_fd's counter is nonzero */
    pthread_mutex_t source_lock;
    pthread_cond_t source_idle;     /* a source's busy count dropped to zero */
    struct port_source *src;
    uint32_t nsrc, cap, free_head;
    /* Kicked sources, under source_lock; kick_fd (made with the first source without a
     * descriptor) is readable exactly while the list is not empty. */
    int kick_fd;
    uint32_t *kicked, nkicked, capkicked;
    uint32_t nfdless;           /* kicked[] has room for all of them: a kick never allocates */
    /*
     * Descriptors join the epoll set only when a thread is about to sleep on it: most
     * connections live and die without one (their waits poll their own sockets), and two
     * epoll_ctl calls a connection a side were a tenth of nd_conn's system calls. Dekker
     * between a thread about to sleep (counts itself in sleepers, then looks at npending)
     * and an adder (publishes npending, then looks at sleepers), each with a full barrier
     * between: one of them sees the other and flushes, so no event is lost to a sleeper,
     * and a sleeper takes source_lock only when something is pending.
     */
    uint32_t *pending, npending, cappending;
    _Atomic uint32_t sleepers;
    /* Threads inside ndc_port_wait, and whether the port is closing: Dekker between a waiter
     * (counts itself, then looks at closing) and ndc_port_close (sets closing, then waits
     * for the count to drop), as closing an IOCP wakes the threads asleep in it. */
    _Atomic uint32_t waiters;
    _Atomic bool closing;
    bool eager;                 /* nd_port_fd handed the set out: everything goes in at once */
};

bool nd_port_valid(const struct nd_port *port)
{
    return port && port->magic == ND_MAGIC_PORT;
}

void nd_port_ref(struct nd_port *port)
{
    atomic_fetch_add(&port->objects, 1);
}

void nd_port_unref(struct nd_port *port)
{
    atomic_fetch_sub(&port->objects, 1);
}

void nd_port_timed(struct nd_port *port, int delta)
{
    atomic_fetch_add(&port->timed, delta);
}

#define TICK_MS 10

static void source_free_locked(struct nd_port *port, uint32_t idx)
{
    port->src[idx].removed = false;
    port->src[idx].next_free = port->free_head;
    port->free_head = idx;
}

/* Call source @idx's signal function if it is still registered as generation @gen (any
 * generation when @gen is UINT32_MAX). source_lock is held on entry and on return. */
static void call_source_locked(struct nd_port *port, uint32_t idx, uint32_t gen, struct nd_ovbatch *batch)
{
    struct port_source *s = &port->src[idx];
    struct dispatch_mark outer = dispatching;
    nd_port_signal_fn fn = s->fn;
    void *obj = s->obj;
    _Atomic uint32_t *inflight = s->inflight;

    if (!obj || (gen != UINT32_MAX && s->gen != gen))
        return;
    s->busy++;
    if (inflight)
        atomic_fetch_add(inflight, 1);
    pthread_mutex_unlock(&port->source_lock);
    dispatching = (struct dispatch_mark){ port, idx };
    fn(obj, batch);
    dispatching = outer;
    pthread_mutex_lock(&port->source_lock);
    s = &port->src[idx];            /* the table may have grown meanwhile */
    bool idle = inflight && atomic_fetch_sub(inflight, 1) == 1;
    if (--s->busy == 0) {
        if (s->removed)
            source_free_locked(port, idx);
        idle = true;
    }
    if (idle)
        pthread_cond_broadcast(&port->source_idle);
}

/* Let every source look at its deferred work (held sends and their timeouts). */
static void tick_all(struct nd_port *port, struct nd_ovbatch *batch)
{
    pthread_mutex_lock(&port->source_lock);
    for (uint32_t i = 0; i < port->nsrc; i++)
        call_source_locked(port, i, UINT32_MAX, batch);
    pthread_mutex_unlock(&port->source_lock);
}

ND_DOOR int ndc_port_create(nd_port **out)
{
    struct epoll_event ev = { .events = EPOLLIN, .data.u64 = QUEUE_EVENT_ID };
    struct nd_port *port;

    if (!out)
        return ND_EARG(1);
    port = calloc(1, sizeof(*port));
    if (!port)
        return -ENOMEM;
    port->epfd = epoll_create1(EPOLL_CLOEXEC);
    port->queue_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (port->epfd < 0 || port->queue_fd < 0 ||
        epoll_ctl(port->epfd, EPOLL_CTL_ADD, port->queue_fd, &ev) < 0) {
        nd_log(ND_LOG_ERROR, ND_SUB_PORT, "port creation failed: %m");
        if (port->epfd >= 0)
            close(port->epfd);
        if (port->queue_fd >= 0)
            close(port->queue_fd);
        free(port);
        return -ENOBUFS;
    }
    pthread_mutex_init(&port->queue_lock, NULL);
    pthread_mutex_init(&port->source_lock, NULL);
    pthread_cond_init(&port->source_idle, NULL);
    port->free_head = UINT32_MAX;
    port->kick_fd = -1;
    port->magic = ND_MAGIC_PORT;
    *out = port;
    return 0;
}

ND_DOOR int ndc_port_close(nd_port *port)
{
    if (!nd_port_valid(port))
        return -EBADF;
    if (atomic_load(&port->objects) != 0)
        return -EBUSY;
    atomic_store(&port->closing, true);
    if (atomic_load(&port->waiters)) {
        uint64_t one = 1;

        /* queue_fd is in every sleeper's epoll set: raised, it wakes them all for good. */
        if (write(port->queue_fd, &one, sizeof(one)) < 0)
            nd_log(ND_LOG_WARN, ND_SUB_PORT, "port wake-up failed: %m");
        while (atomic_load(&port->waiters))
            sched_yield();
    }
    port->magic = ND_MAGIC_DEAD;
    close(port->epfd);
    close(port->queue_fd);
    if (port->kick_fd >= 0)
        close(port->kick_fd);
    free(port->kicked);
    free(port->pending);
    pthread_mutex_destroy(&port->queue_lock);
    pthread_mutex_destroy(&port->source_lock);
    pthread_cond_destroy(&port->source_idle);
    free(port->src);
    free(port->queue);
    free(port);
    return 0;
}

static void flush_pending_locked(struct nd_port *port);

ND_DOOR int ndc_port_fd(const nd_port *cport)
{
    struct nd_port *port = (struct nd_port *)cport;     /* the handle's object is ours to change */

    if (!nd_port_valid(port))
        return -1;
    /* Whoever polls the set from now on sleeps where we cannot see it. */
    pthread_mutex_lock(&port->source_lock);
    port->eager = true;
    flush_pending_locked(port);
    pthread_mutex_unlock(&port->source_lock);
    return port->epfd;
}

/* Keep queue_fd's counter nonzero exactly while the queue is not empty. Under queue_lock. */
static void queue_fd_update(struct nd_port *port)
{
    uint64_t v = 1;

    if (port->qcount && !port->queue_fd_raised) {
        if (write(port->queue_fd, &v, sizeof(v)) == sizeof(v))
            port->queue_fd_raised = true;
    } else if (!port->qcount && port->queue_fd_raised) {
        if (read(port->queue_fd, &v, sizeof(v)) == sizeof(v) || errno == EAGAIN)
            port->queue_fd_raised = false;
    }
}

static bool queue_append(struct nd_port *port, const struct nd_ovbatch *b)
{
    if (port->qcount + b->n > port->qcap) {
        uint32_t cap = port->qcap ? port->qcap : 64;

        while (cap < port->qcount + b->n)
            cap *= 2;
        nd_overlapped **q = malloc(cap * sizeof(*q));
        if (!q)
            return false;
        for (uint32_t i = 0; i < port->qcount; i++)
            q[i] = port->queue[(port->qhead + i) % port->qcap];
        free(port->queue);
        port->queue = q;
        port->qhead = 0;
        port->qcap = cap;
    }
    for (uint32_t i = 0; i < b->n; i++)
        port->queue[(port->qhead + port->qcount++) % port->qcap] = b->items[i];
    return true;
}

static nd_overlapped *queue_pop(struct nd_port *port)
{
    nd_overlapped *ov;

    if (!port->qcount)
        return NULL;
    ov = port->queue[port->qhead];
    port->qhead = (port->qhead + 1) % port->qcap;
    port->qcount--;
    return ov;
}

bool nd_port_unqueue(struct nd_port *port, nd_overlapped *ov)
{
    bool found = false;

    pthread_mutex_lock(&port->queue_lock);
    for (uint32_t i = 0; i < port->qcount && !found; i++) {
        if (port->queue[(port->qhead + i) % port->qcap] != ov)
            continue;
        for (uint32_t k = i; k + 1 < port->qcount; k++)
            port->queue[(port->qhead + k) % port->qcap] = port->queue[(port->qhead + k + 1) % port->qcap];
        port->qcount--;
        found = true;
    }
    queue_fd_update(port);
    pthread_mutex_unlock(&port->queue_lock);
    return found;
}

bool nd_port_take_queued(struct nd_port *port, nd_overlapped **out)
{
    pthread_mutex_lock(&port->queue_lock);
    *out = queue_pop(port);
    queue_fd_update(port);
    pthread_mutex_unlock(&port->queue_lock);
    return *out != NULL;
}

void nd_port_deliver(struct nd_ovbatch *b)
{
    struct nd_port *port = b->port;

    if (!b->n)
        return;
    pthread_mutex_lock(&port->queue_lock);
    if (!queue_append(port, b))
        nd_log(ND_LOG_ERROR, ND_SUB_PORT, "completions dropped: out of memory");
    queue_fd_update(port);
    pthread_mutex_unlock(&port->queue_lock);
    nd_ovbatch_release(b);
}

/* Append @b behind anything already queued (FIFO), then take the oldest request. */
static nd_overlapped *deliver_and_take(struct nd_port *port, struct nd_ovbatch *b)
{
    nd_overlapped *ov;

    pthread_mutex_lock(&port->queue_lock);
    if (!port->qcount && b->n) {
        /* The common case: nothing older waits, so hand the first over directly. */
        struct nd_ovbatch rest = *b;

        ov = b->items[0];
        rest.items = b->items + 1;
        rest.n = b->n - 1;
        if (rest.n && !queue_append(port, &rest))
            nd_log(ND_LOG_ERROR, ND_SUB_PORT, "completions dropped: out of memory");
    } else {
        if (b->n && !queue_append(port, b))
            nd_log(ND_LOG_ERROR, ND_SUB_PORT, "completions dropped: out of memory");
        ov = queue_pop(port);
    }
    queue_fd_update(port);
    pthread_mutex_unlock(&port->queue_lock);
    nd_ovbatch_release(b);
    return ov;
}

/* Under source_lock: one more source without a descriptor is about to come. Kicks come
 * from any thread, transports' engines included, so the room for them is made here. */
static bool kick_room(struct nd_port *port)
{
    struct epoll_event ev = { .events = EPOLLIN, .data.u64 = KICK_EVENT_ID };

    uint32_t *room = nd_with_room(port->kicked, &port->capkicked, port->nfdless, sizeof(*port->kicked));

    if (!room)
        return false;
    port->kicked = room;
    if (port->kick_fd >= 0)
        return true;
    port->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (port->kick_fd >= 0 && epoll_ctl(port->epfd, EPOLL_CTL_ADD, port->kick_fd, &ev) == 0)
        return true;
    if (port->kick_fd >= 0)
        close(port->kick_fd);
    port->kick_fd = -1;
    return false;
}

struct nd_port_kick nd_port_kick_of(struct nd_port *port, uint32_t id)
{
    struct nd_port_kick k = { port, id, 0 };

    pthread_mutex_lock(&port->source_lock);
    k.gen = port->src[id].gen;
    pthread_mutex_unlock(&port->source_lock);
    return k;
}

void nd_port_kick(const struct nd_port_kick *k)
{
    struct nd_port *port = k->port;
    uint64_t one = 1;

    pthread_mutex_lock(&port->source_lock);
    struct port_source *s = &port->src[k->id];
    if (s->obj && s->gen == k->gen && s->fdless && !s->kicked) {
        s->kicked = true;
        port->kicked[port->nkicked++] = k->id;
        if (port->nkicked == 1 && write(port->kick_fd, &one, sizeof(one)) < 0)
            nd_log(ND_LOG_WARN, ND_SUB_PORT, "kick write: %m");
    }
    pthread_mutex_unlock(&port->source_lock);
}

int nd_port_kick_fd(struct nd_port *port)
{
    int fd;

    pthread_mutex_lock(&port->source_lock);     /* made by whichever thread came first */
    fd = port->kick_fd;
    pthread_mutex_unlock(&port->source_lock);
    return fd;
}

void nd_port_run_kicked(struct nd_port *port, struct nd_ovbatch *batch)
{
    uint64_t v;

    pthread_mutex_lock(&port->source_lock);
    while (port->nkicked) {
        uint32_t idx = port->kicked[--port->nkicked];

        if (!port->nkicked && read(port->kick_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
            nd_log(ND_LOG_WARN, ND_SUB_PORT, "kick read: %m");
        if (port->src[idx].kicked) {
            port->src[idx].kicked = false;
            call_source_locked(port, idx, UINT32_MAX, batch);
        }
    }
    pthread_mutex_unlock(&port->source_lock);
}

/* Source @idx waits outside the epoll set (source_lock held). False if out of memory. */
static bool pending_push(struct nd_port *port, uint32_t idx)
{
    uint32_t *room = nd_with_room(port->pending, &port->cappending, port->npending, sizeof(*port->pending));

    if (!room)
        return false;
    port->pending = room;
    port->src[idx].pending_at = port->npending;
    port->pending[port->npending] = idx;
    __atomic_store_n(&port->npending, port->npending + 1, __ATOMIC_SEQ_CST);
    return true;
}

static void pending_remove(struct nd_port *port, uint32_t idx)
{
    uint32_t at = port->src[idx].pending_at, last = port->pending[port->npending - 1];

    port->pending[at] = last;
    port->src[last].pending_at = at;
    port->src[idx].pending_at = NOT_PENDING;
    __atomic_store_n(&port->npending, port->npending - 1, __ATOMIC_RELAXED);
}

/* Put every pending descriptor into the epoll set (source_lock held). */
static void flush_pending_locked(struct nd_port *port)
{
    for (uint32_t i = 0; i < port->npending; i++) {
        uint32_t idx = port->pending[i];
        struct epoll_event ev = { .events = EPOLLIN | EPOLLET,
                                  .data.u64 = (uint64_t)port->src[idx].gen << 32 | idx };

        port->src[idx].pending_at = NOT_PENDING;
        if (epoll_ctl(port->epfd, EPOLL_CTL_ADD, port->src[idx].fd, &ev) < 0)
            nd_log(ND_LOG_WARN, ND_SUB_PORT, "a source could not join the port: %m");
    }
    __atomic_store_n(&port->npending, 0, __ATOMIC_RELAXED);
}

int nd_port_add_source(struct nd_port *port, int fd, void *obj, nd_port_signal_fn fn,
                             _Atomic uint32_t *inflight, uint32_t *id)
{
    struct epoll_event ev = { .events = EPOLLIN | EPOLLET };
    int st = 0;
    uint32_t idx;

    pthread_mutex_lock(&port->source_lock);
    if (port->free_head != UINT32_MAX) {
        idx = port->free_head;
        port->free_head = port->src[idx].next_free;
    } else {
        struct port_source *n = nd_with_room(port->src, &port->cap, port->nsrc, sizeof(*n));

        if (!n) {
            st = -ENOMEM;
            goto out;
        }
        port->src = n;
        idx = port->nsrc++;
        port->src[idx].gen = 0;
        port->src[idx].busy = 0;
        port->src[idx].removed = false;
    }
    port->src[idx].obj = obj;
    port->src[idx].fn = fn;
    port->src[idx].kicked = false;
    port->src[idx].fdless = fd < 0;
    port->src[idx].inflight = inflight;
    port->src[idx].fd = fd;
    port->src[idx].pending_at = NOT_PENDING;
    ev.data.u64 = (uint64_t)port->src[idx].gen << 32 | idx;
    if (fd >= 0 && !port->eager && pending_push(port, idx)) {
        if (atomic_load(&port->sleepers))       /* after the push: see pending[] */
            flush_pending_locked(port);
        *id = idx;
        goto out;
    }
    if (fd < 0 ? !kick_room(port) : epoll_ctl(port->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
        port->src[idx].obj = NULL;
        source_free_locked(port, idx);
        st = errno == ENOMEM ? -ENOMEM : -ENOBUFS;
        goto out;
    }
    if (fd < 0)
        port->nfdless++;
    *id = idx;
out:
    pthread_mutex_unlock(&port->source_lock);
    return st;
}

/* Source @id goes (source_lock held): take it off kicked[], keeping the room invariant. */
static void forget_kicks(struct nd_port *port, uint32_t id)
{
    uint64_t v;

    if (port->src[id].kicked) {
        for (uint32_t i = 0; i < port->nkicked; i++)
            if (port->kicked[i] == id) {
                port->kicked[i] = port->kicked[--port->nkicked];
                break;
            }
        if (!port->nkicked && read(port->kick_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
            nd_log(ND_LOG_WARN, ND_SUB_PORT, "kick read: %m");
    }
    port->src[id].kicked = false;
    port->src[id].fdless = false;
    port->nfdless--;
}

/*
 * Once this returns, the source's signal function will not be called again. A source
 * without an in-flight counter is also not running in another thread by then (the caller
 * may be inside it: that call finishes normally). One with a counter may be: its object's
 * lock is likely held here, and a call blocked on that lock would never end if we waited
 * for it; the object waits for its counter before it frees itself (nd_port_quiesce).
 */
void nd_port_del_source(struct nd_port *port, uint32_t id, int fd)
{
    pthread_mutex_lock(&port->source_lock);
    if (port->src[id].pending_at != NOT_PENDING)
        pending_remove(port, id);
    else if (fd >= 0)
        epoll_ctl(port->epfd, EPOLL_CTL_DEL, fd, NULL);
    port->src[id].obj = NULL;
    if (port->src[id].fdless)
        forget_kicks(port, id);
    port->src[id].gen++;
    bool self = dispatching.port == port && dispatching.idx == id;

    while (!port->src[id].inflight && port->src[id].busy > (self ? 1u : 0u))
        pthread_cond_wait(&port->source_idle, &port->source_lock);
    if (port->src[id].busy)
        port->src[id].removed = true;       /* our own call frees it when it returns */
    else
        source_free_locked(port, id);
    pthread_mutex_unlock(&port->source_lock);
}

void nd_port_quiesce(struct nd_port *port, _Atomic uint32_t *inflight)
{
    pthread_mutex_lock(&port->source_lock);
    while (atomic_load(inflight))
        pthread_cond_wait(&port->source_idle, &port->source_lock);
    pthread_mutex_unlock(&port->source_lock);
}

static void dispatch(struct nd_port *port, uint64_t data, struct nd_ovbatch *batch)
{
    uint32_t idx = (uint32_t)data, gen = (uint32_t)(data >> 32);

    pthread_mutex_lock(&port->source_lock);
    if (idx < port->nsrc)
        call_source_locked(port, idx, gen, batch);
    pthread_mutex_unlock(&port->source_lock);
}

static int remaining_ms(int timeout_ms, uint64_t deadline)
{
    uint64_t now;

    if (timeout_ms <= 0)
        return timeout_ms < 0 ? -1 : 0;
    now = nd_now_ns();
    return now >= deadline ? 0 : (int)((deadline - now + 999999) / 1000000);
}

static int port_wait(struct nd_port *port, int timeout_ms, nd_overlapped **out, bool *interrupted);

ND_DOOR int ndc_port_wait(nd_port *port, int timeout_ms, nd_overlapped **out)
{
    int st;

    if (!nd_port_valid(port))
        return ND_EARG(1);
    if (!out)
        return ND_EARG(3);
    atomic_fetch_add(&port->waiters, 1);
    st = port_wait(port, timeout_ms, out, NULL);
    atomic_fetch_sub(&port->waiters, 1);
    return st;
}

int nd_port_take(struct nd_port *port, int timeout_ms, nd_overlapped **out)
{
    bool interrupted = false;
    int err;

    *out = NULL;
    atomic_fetch_add(&port->waiters, 1);
    err = nd_errno_of(port_wait(port, timeout_ms, out, &interrupted));
    atomic_fetch_sub(&port->waiters, 1);
    if (*out)
        return 0;
    return interrupted ? -EINTR : err == ETIMEDOUT ? -EAGAIN : -EIO;
}

static int port_wait(struct nd_port *port, int timeout_ms, nd_overlapped **out, bool *interrupted)
{
    uint64_t deadline = timeout_ms > 0 ? nd_now_ns() + (uint64_t)timeout_ms * 1000000 : 0;
    struct epoll_event ev[32];
    struct nd_ovbatch batch;
    nd_overlapped *ov;

    nd_ovbatch_init(&batch, port);
    for (bool expired = false;; ) {
        int wait, n;

        if (atomic_load(&port->closing))
            return -ECANCELED;     /* the port is being closed under us */
        ov = deliver_and_take(port, &batch);
        if (ov) {
            *out = ov;
            return 0;
        }
        if (expired)
            return -ETIME;
        wait = remaining_ms(timeout_ms, deadline);
        bool ticking = atomic_load_explicit(&port->timed, memory_order_relaxed) > 0;
        int slice = ticking && (wait < 0 || wait > TICK_MS) ? TICK_MS : wait;
        atomic_fetch_add(&port->sleepers, 1);             /* before the look: see pending[] */
        if (__atomic_load_n(&port->npending, __ATOMIC_SEQ_CST)) {
            pthread_mutex_lock(&port->source_lock);
            flush_pending_locked(port);
            pthread_mutex_unlock(&port->source_lock);
        }
        n = epoll_wait(port->epfd, ev, (int)ND_ARRAY_SIZE(ev), slice);
        atomic_fetch_sub(&port->sleepers, 1);
        if (n < 0 && errno != EINTR)
            return -EIO;
        if (n < 0 && interrupted) {
            *interrupted = true;    /* a signal: the caller reports EINTR, as a read would */
            expired = true;
            continue;
        }
        for (int i = 0; i < n; i++)
            if (ev[i].data.u64 == KICK_EVENT_ID)
                nd_port_run_kicked(port, &batch);
            else if (ev[i].data.u64 != QUEUE_EVENT_ID)
                dispatch(port, ev[i].data.u64, &batch);
        /* A port never quiet for a whole tick still ticks: deadlines must not starve. */
        uint64_t now = ticking ? nd_now_ns() : 0;
        if (ticking && (n == 0 || now - atomic_load_explicit(&port->last_tick_ns, memory_order_relaxed) >=
                                  TICK_MS * 1000000ull)) {
            atomic_store_explicit(&port->last_tick_ns, now, memory_order_relaxed);
            tick_all(port, &batch);
        }
        expired = wait == 0 || (wait > 0 && remaining_ms(timeout_ms, deadline) == 0);
    }
}

ND_DOOR int ndc_port_post(nd_port *port, nd_overlapped *ov, int status, uint64_t bytes)
{
    struct nd_ovbatch batch;

    if (!nd_port_valid(port))
        return ND_EARG(1);
    if (!ov)
        return ND_EARG(2);
    nd_ovbatch_init(&batch, port);
    ov->internal_owner = NULL;
    ov->flags &= ~ND_OV_FLAG_NO_PORT;
    nd_ov_finish(ov, status, bytes, &batch);
    nd_port_deliver(&batch);
    return 0;
}
