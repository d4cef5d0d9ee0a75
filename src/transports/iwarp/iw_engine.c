// SPDX-License-Identifier: MIT
/*
 * The iwarp progress engine: one thread per adapter, started with its first connection,
 * asleep in epoll when nothing moves. It places inbound data so that Writes, Reads and
 * Sends complete without the application calling in, and finishes sends the socket could
 * not take at once. No application code ever runs on it.
 *
 * Parking: a sleeper on a socket makes every arriving segment wake it, which costs the
 * sender a wake-up and preempts a spinning application on a machine with few cores (and
 * epoll drops the event when the poller read the bytes first, so the engine cannot even
 * tell). While application threads poll, the engine ticks every PARK_TICK_MS instead: it
 * stops watching the sockets of connections polled within IW_POLL_GONE_NS, watches again
 * (and serves once) those whose polls stopped, and sends answers a poller held back. It
 * sleeps without a tick once no connection was polled for IDLE_AFTER_NS; the next poll
 * wakes it (iw_engine_note_poll). A poller going to sleep hands back at once (iw_idle).
 * A poll is no promise of the next: a program that polls its CQ only after a peer's Write
 * changed its memory would leave parked input unread until the polls count as stopped, so
 * parked input no poll took soon is served by the engine (rescue_parked).
 *
 * Lifetime: epoll events carry a slot number and generation, never a pointer; the engine
 * looks the connection up under its lock and takes a QP reference before dropping that
 * lock, so it never holds the engine lock and a QP lock together (the QP's destroy takes
 * the engine lock with the QP lock held).
 */
#include "iwarp.h"
#include "core/log.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define WAKE_KEY UINT64_MAX
#define NO_KEY (UINT64_MAX - 1)      /* never a connection's key: gen << 32 | slot, slots are few */
#define STALL_TICK_MS 5             /* how often a Send waiting for a receive is retried */
#define PARK_TICK_MS 4              /* the tick while applications poll */
#define RESCUE_TICK_MS 1            /* while parked input waits for its poller (IW_RESCUE_NS) */
#define IDLE_AFTER_NS (50ull * 1000000)  /* no polls for this long: stop ticking */
#define WATCH_TICK_MS 100           /* with connections: how often overdue Reads are looked for */

struct iw_engine {
    struct iw_engine *next_live;    /* in live_engines */
    pthread_t thread;
    int epfd, wakefd;
    pthread_mutex_t lock;
    struct iw_conn **conns;
    uint32_t *gen;
    uint32_t cap, count, parked;
    uint32_t parked_input;          /* connections with parked_input_ns set (atomic; changed under the lock) */
    /* The connection whose input the engine served of late, lent to empty polls (iw_lend):
     * its key, or NO_KEY (atomic; set by the engine, cleared by either side); and when a
     * lender last found input on it (nd_now_ns, atomic). */
    uint64_t lent_key;
    uint64_t lent_input_ns;
    bool ticking;                   /* atomic: see iw_engine_note_poll */
    bool stop, detached;
};

/* Every running engine, for the answers owed at process exit (answer_owed_at_exit). */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static struct iw_engine *live_engines;

/* A thread lending its polls holds live_lock while it moves bytes: a fork in that moment
 * must not leave the child a lock nobody will release. */
static void live_lock_take(void)
{
    pthread_mutex_lock(&live_lock);
}

static void live_lock_drop(void)
{
    pthread_mutex_unlock(&live_lock);
}

static void register_atfork(void)
{
    if (pthread_atfork(live_lock_take, live_lock_drop, live_lock_drop))
        nd_log(ND_LOG_WARN, ND_SUB_IWARP, "pthread_atfork failed: a fork may deadlock the child's first connection");
}

static void live_add(struct iw_engine *e)
{
    static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

    pthread_once(&atfork_once, register_atfork);
    pthread_mutex_lock(&live_lock);
    e->next_live = live_engines;
    live_engines = e;
    pthread_mutex_unlock(&live_lock);
}

static void live_remove(struct iw_engine *e)
{
    pthread_mutex_lock(&live_lock);
    for (struct iw_engine **p = &live_engines; *p; p = &(*p)->next_live)
        if (*p == e) {
            *p = e->next_live;
            break;
        }
    pthread_mutex_unlock(&live_lock);
}

static uint64_t key_of(struct iw_engine *e, uint32_t slot)
{
    return (uint64_t)e->gen[slot] << 32 | slot;
}

/* The QP behind @key with a reference held, or NULL if it went away; with @poll, a poll of
 * it noted while it is surely there (the connection goes with its QP's destroy, not its
 * last reference). */
static struct nd_qp *lookup_noting(struct iw_engine *e, uint64_t key, struct iw_conn **out, bool poll)
{
    uint32_t slot = (uint32_t)key;
    struct nd_qp *qp = NULL;

    pthread_mutex_lock(&e->lock);
    if (slot < e->cap && e->conns[slot] && e->gen[slot] == (uint32_t)(key >> 32)) {
        *out = e->conns[slot];
        qp = (*out)->base.qp;
        nd_qp_ref(qp);
        if (poll)
            iw_engine_note_poll(*out);
    }
    pthread_mutex_unlock(&e->lock);
    return qp;
}

static struct nd_qp *lookup(struct iw_engine *e, uint64_t key, struct iw_conn **out)
{
    return lookup_noting(e, key, out, false);
}

static uint32_t watch_events(const struct iw_conn *c)
{
    return EPOLLIN | EPOLLRDHUP | EPOLLET | (c->out_armed ? EPOLLOUT : 0);
}

/*
 * Engine lock held. A parked socket leaves the epoll set altogether: an entry on its wait
 * queue, even one whose mask ignores input, costs every arriving segment a callback on the
 * sender's side. Adding it back with input pending reports that input at once.
 */
static void set_parked(struct iw_engine *e, struct iw_conn *c, bool on)
{
    struct epoll_event ev = { .data.u64 = key_of(e, c->slot) };

    if (c->parked == on)
        return;
    if (!on && c->parked_input_ns) {
        c->parked_input_ns = 0;     /* whoever un-parks serves what is there */
        __atomic_sub_fetch(&e->parked_input, 1, __ATOMIC_RELAXED);
    }
    c->parked = on;
    __atomic_store_n(&e->parked, e->parked + (on ? 1 : (uint32_t)-1), __ATOMIC_RELAXED);
    ev.events = watch_events(c);
    epoll_ctl(e->epfd, on ? EPOLL_CTL_DEL : EPOLL_CTL_ADD, c->sock, &ev);
}

static bool app_polls(struct iw_conn *c, uint64_t now, uint64_t within)
{
    uint64_t t = __atomic_load_n(&c->polled_ns, __ATOMIC_RELAXED);

    return t && (int64_t)(now - t) < (int64_t)within;     /* t may be newer than now */
}

/* Whether @c may be left to its poller now: it polled within @within, and no rescue of
 * late (parked input its poller never took) says the poller does not look for input. */
static bool may_park(struct iw_conn *c, uint64_t now, uint64_t within)
{
    return app_polls(c, now, within) && (int64_t)(now - c->no_park_until) >= 0;
}

/* Input for @key while its application polls: leave it to the poller, and look again
 * after IW_RESCUE_NS (rescue_parked). */
static bool park_if_polled(struct iw_engine *e, uint64_t key, uint32_t events)
{
    uint32_t slot = (uint32_t)key;
    uint64_t now = nd_now_ns();
    bool parked = false;

    if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR | EPOLLOUT))
        return false;
    pthread_mutex_lock(&e->lock);
    if (slot < e->cap && e->conns[slot] && e->gen[slot] == (uint32_t)(key >> 32) &&
        may_park(e->conns[slot], now, IW_POLL_RECENT_NS)) {
        struct iw_conn *c = e->conns[slot];

        set_parked(e, c, true);
        if (!c->parked_input_ns)
            __atomic_add_fetch(&e->parked_input, 1, __ATOMIC_RELAXED);
        c->parked_input_ns = now;
        parked = true;
    }
    pthread_mutex_unlock(&e->lock);
    return parked;
}

/*
 * Parked input that no poll has taken for IW_RESCUE_NS: watch and serve that connection
 * again (keys to @keys, how many returned), and do not park it for a span that doubles
 * with each rescue in a row. A poll after the parking means the poller takes its input:
 * the span starts over.
 */
static uint32_t rescue_parked(struct iw_engine *e, uint64_t *keys, uint32_t max)
{
    uint64_t now = nd_now_ns();
    uint32_t n = 0;

    pthread_mutex_lock(&e->lock);
    for (uint32_t slot = 0; slot < e->cap && __atomic_load_n(&e->parked_input, __ATOMIC_RELAXED) && n < max; slot++) {
        struct iw_conn *c = e->conns[slot];
        uint64_t since = c ? c->parked_input_ns : 0;

        if (!since)
            continue;
        if ((int64_t)(__atomic_load_n(&c->polled_ns, __ATOMIC_RELAXED) - since) > 0) {
            c->parked_input_ns = 0;
            __atomic_sub_fetch(&e->parked_input, 1, __ATOMIC_RELAXED);
            c->no_park_span = 0;
        } else if (now - since >= IW_RESCUE_NS) {
            set_parked(e, c, false);
            c->no_park_span = !c->no_park_span ? IW_NO_PARK_MIN_NS
                              : c->no_park_span * 2 > IW_NO_PARK_MAX_NS ? IW_NO_PARK_MAX_NS
                                                                        : c->no_park_span * 2;
            c->no_park_until = now + c->no_park_span;
            keys[n++] = key_of(e, slot);
        }
    }
    pthread_mutex_unlock(&e->lock);
    return n;
}

/*
 * The tick while applications poll: park the polled connections, un-park those whose polls
 * stopped and those holding answers past IW_FENCE_DEFER_NS; the keys of connections to
 * serve go to @keys. Returns how many; *@active says whether any was polled of late, or
 * more than @max need serving (the next tick takes the rest: ticking must go on).
 */
static uint32_t tick_polled(struct iw_engine *e, uint64_t *keys, uint32_t max, bool *active)
{
    uint64_t now = nd_now_ns(), coarse = nd_coarse_ns();   /* the latter for owed_since */
    uint32_t n = 0;

    *active = false;
    pthread_mutex_lock(&e->lock);
    for (uint32_t slot = 0; slot < e->cap; slot++) {
        struct iw_conn *c = e->conns[slot];
        uint64_t owed;

        if (!c)
            continue;
        if (n == max) {
            *active = true;         /* a connection past this batch may need serving */
            break;
        }
        *active |= app_polls(c, now, IDLE_AFTER_NS);
        owed = __atomic_load_n(&c->owed_since, __ATOMIC_RELAXED);
        /* Only a poller that spins keeps its socket: one that polls now and then (UCX's
         * one-sided target, between waits of a millisecond on something else) would leave
         * a peer's Read, or the fence of its flush, waiting that long for an answer a
         * NIC gives at once. */
        if (may_park(c, now, IW_POLL_RECENT_NS)) {
            set_parked(e, c, true);
            if (owed && (int64_t)(coarse - owed) >= (int64_t)IW_POLL_GONE_NS)
                keys[n++] = key_of(e, slot);
        } else if (c->parked || owed || __atomic_load_n(&c->want_out, __ATOMIC_RELAXED) ||
                   __atomic_load_n(&c->polled_ns, __ATOMIC_RELAXED)) {
            /* The poller left: serve once what it may have left unread (a FIN behind
             * its last short read), and forget it polled. */
            set_parked(e, c, false);
            __atomic_store_n(&c->polled_ns, 0, __ATOMIC_RELAXED);
            keys[n++] = key_of(e, slot);
        }
    }
    pthread_mutex_unlock(&e->lock);
    return n;
}

/* Stop ticking when nothing was polled of late. The store and the re-check pair with the
 * poller's store of polled_ns and load of ticking (both sequentially consistent): either
 * we see its poll, or it sees that we stopped and wakes us. */
static bool keep_ticking(struct iw_engine *e)
{
    uint64_t now = nd_now_ns();
    bool active = false;

    __atomic_store_n(&e->ticking, false, __ATOMIC_SEQ_CST);
    pthread_mutex_lock(&e->lock);
    for (uint32_t slot = 0; slot < e->cap && !active; slot++)
        active = e->conns[slot] && app_polls(e->conns[slot], now, IDLE_AFTER_NS);
    pthread_mutex_unlock(&e->lock);
    if (active)
        __atomic_store_n(&e->ticking, true, __ATOMIC_SEQ_CST);
    return active;
}

bool iw_engine_app_polls(struct iw_conn *c)
{
    return app_polls(c, nd_now_ns(), IW_POLL_GONE_NS);
}

void iw_engine_note_poll(struct iw_conn *c)
{
    struct iw_engine *e = c->eng;
    uint64_t one = 1;

    __atomic_store_n(&c->polled_ns, nd_now_ns(), __ATOMIC_SEQ_CST);
    if (e && !__atomic_load_n(&e->ticking, __ATOMIC_SEQ_CST) &&
        !__atomic_exchange_n(&e->ticking, true, __ATOMIC_SEQ_CST) && write(e->wakefd, &one, sizeof(one)) < 0)
        nd_log(ND_LOG_DEBUG, ND_SUB_IWARP, "engine wake: %m");
}

/* Engine lock not held. While no thread lends the engine its time (lent_key is NO_KEY), ask
 * empty polls for it, for the connection just served. */
static void lend_ask(struct iw_engine *e, uint64_t key)
{
    uint64_t none = NO_KEY;

    __atomic_store_n(&e->lent_input_ns, nd_now_ns(), __ATOMIC_RELAXED);
    if (__atomic_compare_exchange_n(&e->lent_key, &none, key, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
        nd_lend_want(true);
}

/* Withdraw the ask for @key (if it is still the one asked for). */
static void lend_end(struct iw_engine *e, uint64_t key)
{
    if (__atomic_compare_exchange_n(&e->lent_key, &key, NO_KEY, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        nd_lend_want(false);
}

/*
 * An application thread's empty poll, lent to the connection the engine serves: it takes
 * that connection's bytes as a poller of its own would, so the engine parks it and the
 * sender stops paying a wake-up per segment. It never waits for a lock. Input that stopped
 * for IW_POLL_GONE_NS ends the loan: the socket goes back to the engine at once (as
 * iw_idle hands it back), and the engine asks again when it serves input there.
 */
void iw_lend(void)
{
    struct iw_engine *e;
    struct iw_conn *c = NULL;
    struct nd_qp *qp = NULL;
    uint64_t key = NO_KEY;

    if (pthread_mutex_trylock(&live_lock))
        return;
    for (e = live_engines; e; e = e->next_live)
        if ((key = __atomic_load_n(&e->lent_key, __ATOMIC_ACQUIRE)) != NO_KEY)
            break;
    /* The poll is noted before the lock is tried: an engine busy with the stream hands it
     * over at its next budget's end (serve). */
    if (e && !(qp = lookup_noting(e, key, &c, true)))
        lend_end(e, key);           /* it went away */
    if (!qp || nd_lock_try(&qp->lock)) {
        pthread_mutex_unlock(&live_lock);
        if (qp)
            nd_qp_unref(qp);        /* its holder moves its bytes now */
        return;
    }
    if (qp->conn != &c->base || c->dead) {
        lend_end(e, key);
    } else if (c->pumps->poll(c)) {
        __atomic_store_n(&e->lent_input_ns, nd_now_ns(), __ATOMIC_RELAXED);
    } else if (nd_now_ns() - __atomic_load_n(&e->lent_input_ns, __ATOMIC_RELAXED) >= IW_POLL_GONE_NS) {
        lend_end(e, key);
        __atomic_store_n(&c->polled_ns, 0, __ATOMIC_RELAXED);
        iw_engine_unpark(c);
    }
    nd_lock_release(&qp->lock);
    pthread_mutex_unlock(&live_lock);
    nd_qp_unref(qp);
}

/* One budget of serve(); *@more: the socket may hold more input. */
static bool serve_once(struct iw_engine *e, uint64_t key, uint32_t events, bool *more)
{
    struct iw_conn *c = NULL;
    struct nd_qp *qp = lookup(e, key, &c);
    bool stalled;

    *more = false;
    if (!qp)
        return false;
    nd_lock_acquire(&qp->lock);
    if (qp->conn == &c->base && !c->dead) {
        c->rx_budget = IW_ENGINE_RX_BUDGET;
        if ((events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) && c->pumps->rx(c) && !c->dead)
            lend_ask(e, key);
        *more = !c->dead && !c->rx_budget;
        c->rx_budget = 0;
        if (!c->dead && (c->want_out || c->owed_since || c->hold_first || c->txf_count || (events & EPOLLOUT)))
            c->pumps->tx(c);
    }
    /* Waits that only time ends: a receive, a responder's hold. */
    stalled = qp->conn == &c->base && !c->dead && (c->stalled_since || c->hold_first);
    if (qp->conn == &c->base && !stalled)
        c->engine_asked = false;
    nd_lock_release(&qp->lock);
    nd_qp_unref(qp);
    return stalled;
}

/*
 * Move the bytes of the connection behind @key; returns whether it waits for a receive
 * (the engine then ticks). A stream that keeps the socket full would keep the engine in
 * one receive loop, and a thread lending its polls (iw_lend) from ever taking it over: the
 * engine reads a budget at a time, and between budgets parks a connection polled now as it
 * would on a new event (its input then waits for the poller, or a rescue).
 */
static bool serve(struct iw_engine *e, uint64_t key, uint32_t events)
{
    bool stalled, more;

    do {
        stalled = serve_once(e, key, events, &more);
        events = EPOLLIN;
    } while (more && !park_if_polled(e, key, EPOLLIN));
    return stalled;
}

/* Everything that may have work without a socket event: stalled receives, held first
 * FPDUs. */
static bool sweep(struct iw_engine *e)
{
    bool stalled = false;

    for (uint32_t slot = 0;; slot++) {
        uint64_t key;
        bool used;

        pthread_mutex_lock(&e->lock);
        if (slot >= e->cap) {
            pthread_mutex_unlock(&e->lock);
            break;
        }
        used = e->conns[slot] != NULL;
        key = key_of(e, slot);      /* slot 0 of generation 0 is key 0: test "used", not the key */
        pthread_mutex_unlock(&e->lock);
        if (used)
            stalled |= serve(e, key, EPOLLIN);
    }
    return stalled;
}

/* The QP lock, waited for at most @ns: its holder (the engine, another thread) lets go
 * within microseconds unless it is stuck, and exit must not hang on it. */
#define EXIT_LOCK_WAIT_NS (20ull * 1000000)
static bool lock_within(struct nd_lock *l, uint64_t ns)
{
    for (uint64_t end = nd_now_ns() + ns; nd_lock_try(l);)
        if (nd_now_ns() > end)
            return false;
        else
            sched_yield();
    return true;
}

#define WAIT_FOREVER UINT64_MAX

/* Run @fn on each connection of @keys still there, with its QP lock held; a lock held
 * elsewhere is waited for at most @wait_ns (WAIT_FOREVER: as long as it takes). */
static void serve_keys(struct iw_engine *e, const uint64_t *keys, uint32_t n, uint64_t wait_ns,
                       void (*fn)(struct iw_conn *c))
{
    for (uint32_t i = 0; i < n; i++) {
        struct iw_conn *c = NULL;
        struct nd_qp *qp = lookup(e, keys[i], &c);

        if (!qp)
            continue;
        if (wait_ns == WAIT_FOREVER)
            nd_lock_acquire(&qp->lock);
        else if (!lock_within(&qp->lock, wait_ns)) {
            nd_qp_unref(qp);
            continue;
        }
        if (qp->conn == &c->base)
            fn(c);
        nd_lock_release(&qp->lock);
        nd_qp_unref(qp);
    }
}

static void overdue(struct iw_conn *c)
{
    c->pumps->overdue(c);
}

/* Fail the connections whose oldest Read or fence has waited past ND_IWARP_TIMEOUT_MS. */
static void check_overdue(struct iw_engine *e)
{
    uint64_t now = nd_coarse_ns(), keys[64];    /* the clock of rdq_push */
    uint32_t n = 0;

    pthread_mutex_lock(&e->lock);
    for (uint32_t slot = 0; slot < e->cap && n < 64; slot++) {
        struct iw_conn *c = e->conns[slot];
        uint64_t t = c ? __atomic_load_n(&c->oldest_read_ns, __ATOMIC_RELAXED) : 0;
        uint64_t p = c ? __atomic_load_n(&c->rx_partial_since, __ATOMIC_RELAXED) : 0;

        if ((t && (int64_t)(now - t) >= (int64_t)c->timeout_ns) || (p && (int64_t)(now - p) >= (int64_t)c->timeout_ns))
            keys[n++] = key_of(e, slot);
    }
    pthread_mutex_unlock(&e->lock);
    serve_keys(e, keys, n, WAIT_FOREVER, overdue);
}

static void engine_free(struct iw_engine *e)
{
    live_remove(e);
    lend_end(e, __atomic_load_n(&e->lent_key, __ATOMIC_RELAXED));
    close(e->epfd);
    close(e->wakefd);
    free(e->conns);
    free(e->gen);
    pthread_mutex_destroy(&e->lock);
    free(e);
}

static void *engine_main(void *arg)
{
    struct iw_engine *e = arg;
    struct epoll_event ev[64];
    bool stalled = false;
    uint64_t last_sweep = 0, last_park_check = 0, last_watch = 0;

    while (!__atomic_load_n(&e->stop, __ATOMIC_ACQUIRE)) {
        bool ticking = __atomic_load_n(&e->ticking, __ATOMIC_SEQ_CST);
        /* parked_input is read without the lock: a stale value costs one tick. */
        int tick = __atomic_load_n(&e->parked_input, __ATOMIC_RELAXED) ? RESCUE_TICK_MS
                   : ticking ? PARK_TICK_MS : stalled ? STALL_TICK_MS
                   : __atomic_load_n(&e->count, __ATOMIC_RELAXED) ? WATCH_TICK_MS : -1;
        int n = epoll_wait(e->epfd, ev, 64, tick);
        bool want_sweep = false;

        if (n < 0 && errno != EINTR)
            break;
        for (int i = 0; i < n; i++) {
            if (ev[i].data.u64 == WAKE_KEY) {
                uint64_t v;

                if (read(e->wakefd, &v, sizeof(v)) < 0 && errno != EAGAIN)
                    nd_log(ND_LOG_DEBUG, ND_SUB_IWARP, "engine wake read: %m");
                want_sweep = true;
            } else if (park_if_polled(e, ev[i].data.u64, ev[i].events)) {
                continue;
            } else if (serve(e, ev[i].data.u64, ev[i].events)) {
                stalled = true;
            }
        }
        if (__atomic_load_n(&e->stop, __ATOMIC_ACQUIRE))
            break;
        if (__atomic_load_n(&e->parked_input, __ATOMIC_RELAXED)) {
            uint64_t keys[64];
            uint32_t k = rescue_parked(e, keys, 64);

            for (uint32_t i = 0; i < k; i++)
                stalled |= serve(e, keys[i], EPOLLIN);
        }
        /* A Send that waits for a receive is retried on a tick, so its RNR bound holds. */
        if (want_sweep || (stalled && nd_now_ns() - last_sweep >= STALL_TICK_MS * 1000000ull)) {
            stalled = sweep(e);
            last_sweep = nd_now_ns();
        }
        if (nd_now_ns() - last_watch >= WATCH_TICK_MS * 1000000ull) {
            check_overdue(e);
            last_watch = nd_now_ns();
        }
        if (ticking && nd_now_ns() - last_park_check >= PARK_TICK_MS * 1000000ull) {
            uint64_t keys[64];
            bool active;
            uint32_t k = tick_polled(e, keys, 64, &active);

            /* The last poller may have left work with no input to come: answers it held
             * for a next post, bytes it read but did not finish. Serve each once. */
            if (!active)
                keep_ticking(e);
            for (uint32_t i = 0; i < k; i++)
                stalled |= serve(e, keys[i], EPOLLIN);
            last_park_check = nd_now_ns();
        }
    }
    if (__atomic_load_n(&e->detached, __ATOMIC_ACQUIRE))
        engine_free(e);
    return NULL;
}

static struct iw_engine *engine_start(void)
{
    struct iw_engine *e = calloc(1, sizeof(*e));
    struct epoll_event ev = { .events = EPOLLIN, .data.u64 = WAKE_KEY };

    if (!e)
        return NULL;
    pthread_mutex_init(&e->lock, NULL);
    e->lent_key = NO_KEY;
    e->epfd = epoll_create1(EPOLL_CLOEXEC);
    e->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (e->epfd < 0 || e->wakefd < 0 || epoll_ctl(e->epfd, EPOLL_CTL_ADD, e->wakefd, &ev) < 0 ||
        nd_thread_start(&e->thread, engine_main, e, "nd-iwarp")) {
        if (e->epfd >= 0)
            close(e->epfd);
        if (e->wakefd >= 0)
            close(e->wakefd);
        pthread_mutex_destroy(&e->lock);
        free(e);
        return NULL;
    }
    return e;
}

/*
 * The adapter's engine, started by its first connection. Not under the adapter's lock: a
 * thread lending its polls (iw_lend) holds live_lock and may need the adapter's lock (a
 * Send with Invalidate revokes an entry of its memory table), so live_lock is never taken
 * under it. engine_start_lock makes one engine per adapter.
 */
static pthread_mutex_t engine_start_lock = PTHREAD_MUTEX_INITIALIZER;

static struct iw_engine *adapter_engine(struct nd_adapter *a)
{
    struct iw_engine *e;

    pthread_mutex_lock(&a->lock);
    e = a->transport_state[ND_SLOT_IWARP];
    pthread_mutex_unlock(&a->lock);
    if (e)
        return e;
    pthread_mutex_lock(&engine_start_lock);
    pthread_mutex_lock(&a->lock);
    e = a->transport_state[ND_SLOT_IWARP];
    pthread_mutex_unlock(&a->lock);
    if (!e && (e = engine_start()) != NULL) {
        live_add(e);
        pthread_mutex_lock(&a->lock);
        a->transport_state[ND_SLOT_IWARP] = e;
        pthread_mutex_unlock(&a->lock);
    }
    pthread_mutex_unlock(&engine_start_lock);
    return e;
}

/*
 * A process that returns from main (or calls exit) right after its last receive completed
 * may still owe the fence behind the Sends it received: held for a next post that never
 * comes, or still unread in the socket (whose close then resets the connection). The
 * peer's Sends would flush there instead of completing. Do what a Disconnect does: read
 * what is in the socket and send the answers owed. A QP lock held by another thread is
 * waited for briefly, never for long (EXIT_LOCK_WAIT_NS).
 */

static void answer_at_exit(struct iw_conn *c)
{
    if (!c->dead)
        c->pumps->rx(c);
    if (!c->dead && c->owed_since)
        c->pumps->tx(c);
}

__attribute__((destructor)) static void answer_owed_at_exit(void)
{
    pthread_mutex_lock(&live_lock);
    for (struct iw_engine *e = live_engines; e; e = e->next_live) {
        uint64_t keys[64];
        uint32_t n = 0;

        /* The keys first: a pump may take the engine lock (to watch for send room). */
        pthread_mutex_lock(&e->lock);
        for (uint32_t slot = 0; slot < e->cap && n < 64; slot++)
            if (e->conns[slot] && e->conns[slot]->nd_peer)
                keys[n++] = key_of(e, slot);
        pthread_mutex_unlock(&e->lock);
        serve_keys(e, keys, n, EXIT_LOCK_WAIT_NS, answer_at_exit);
    }
    pthread_mutex_unlock(&live_lock);
}

int iw_engine_add(struct nd_adapter *a, struct iw_conn *c)
{
    struct iw_engine *e;
    struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP | EPOLLET };
    uint32_t slot;

    /* c->pumps was set by iw_conn_init, under the QP lock, before the engine can see it:
     * writing it again here, without that lock, raced a destroy's iw_shutdown (TSan). */
    e = adapter_engine(a);
    if (!e)
        return -ENOBUFS;
    pthread_mutex_lock(&e->lock);
    for (slot = 0; slot < e->cap && e->conns[slot]; slot++)
        ;
    if (slot == e->cap) {
        uint32_t cap = e->cap ? e->cap * 2 : 16;
        struct iw_conn **nc = realloc(e->conns, cap * sizeof(*nc));
        uint32_t *ng = nc ? realloc(e->gen, cap * sizeof(*ng)) : NULL;

        if (nc)
            e->conns = nc;
        if (!ng) {
            pthread_mutex_unlock(&e->lock);
            return -ENOMEM;
        }
        e->gen = ng;
        memset(e->conns + e->cap, 0, (cap - e->cap) * sizeof(*nc));
        memset(e->gen + e->cap, 0, (cap - e->cap) * sizeof(*ng));
        e->cap = cap;
    }
    e->conns[slot] = c;
    c->slot = slot;
    c->eng = e;
    __atomic_add_fetch(&e->count, 1, __ATOMIC_RELAXED);
    ev.data.u64 = key_of(e, slot);
    if (epoll_ctl(e->epfd, EPOLL_CTL_ADD, c->sock, &ev) < 0) {
        e->conns[slot] = NULL;
        __atomic_sub_fetch(&e->count, 1, __ATOMIC_RELAXED);
        c->eng = NULL;
        pthread_mutex_unlock(&e->lock);
        return -ENOBUFS;
    }
    pthread_mutex_unlock(&e->lock);
    return 0;
}

void iw_engine_remove(struct iw_conn *c)
{
    struct iw_engine *e = c->eng;

    if (!e)
        return;
    pthread_mutex_lock(&e->lock);
    lend_end(e, key_of(e, c->slot));
    epoll_ctl(e->epfd, EPOLL_CTL_DEL, c->sock, NULL);
    e->conns[c->slot] = NULL;
    e->gen[c->slot]++;
    __atomic_sub_fetch(&e->count, 1, __ATOMIC_RELAXED);
    if (c->parked)
        __atomic_store_n(&e->parked, e->parked - 1, __ATOMIC_RELAXED);
    if (c->parked_input_ns)
        __atomic_sub_fetch(&e->parked_input, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&e->lock);
    c->eng = NULL;
}

void iw_engine_want_out(struct iw_conn *c, bool on)
{
    struct iw_engine *e = c->eng;
    struct epoll_event ev = { 0 };

    if (!e)
        return;
    pthread_mutex_lock(&e->lock);
    c->out_armed = on;
    ev.events = watch_events(c);
    ev.data.u64 = key_of(e, c->slot);
    if (!c->parked)                 /* a parked socket is added back with these events */
        epoll_ctl(e->epfd, EPOLL_CTL_MOD, c->sock, &ev);
    pthread_mutex_unlock(&e->lock);
}

void iw_engine_unpark(struct iw_conn *c)
{
    struct iw_engine *e = c->eng;

    if (!e || !__atomic_load_n(&e->parked, __ATOMIC_RELAXED))
        return;
    pthread_mutex_lock(&e->lock);
    if (c->eng == e)
        set_parked(e, c, false);
    pthread_mutex_unlock(&e->lock);
}

/* A receive stall found outside the engine (an application thread polled the bytes in):
 * the socket will not signal again, so ask the engine to sweep, and then tick. */
void iw_engine_kick(struct iw_conn *c)
{
    uint64_t one = 1;

    if (c->eng && write(c->eng->wakefd, &one, sizeof(one)) < 0)
        nd_log(ND_LOG_DEBUG, ND_SUB_IWARP, "engine kick: %m");
}

void iw_adapter_close(struct nd_adapter *a)
{
    struct iw_engine *e = a->transport_state[ND_SLOT_IWARP];
    uint64_t one = 1;

    if (!e)
        return;
    a->transport_state[ND_SLOT_IWARP] = NULL;
    if (pthread_equal(pthread_self(), e->thread))
        __atomic_store_n(&e->detached, true, __ATOMIC_RELEASE);
    __atomic_store_n(&e->stop, true, __ATOMIC_RELEASE);
    if (write(e->wakefd, &one, sizeof(one)) < 0)
        nd_log(ND_LOG_DEBUG, ND_SUB_IWARP, "engine stop: %m");
    if (pthread_equal(pthread_self(), e->thread)) {
        /* The engine dropped the adapter's last reference itself: it frees itself on exit. */
        __atomic_store_n(&e->detached, true, __ATOMIC_RELEASE);
        pthread_detach(e->thread);
        return;
    }
    pthread_join(e->thread, NULL);
    engine_free(e);
}
