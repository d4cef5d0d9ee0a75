// SPDX-License-Identifier: MIT
/*
 * The udp transport's engine: one thread per process, started with the first UD QP, that
 * waits on every UD socket (epoll, one-shot) and places what arrives while no application
 * thread polls. The epoll entries carry a table slot and a generation, never a pointer: a
 * QP destroyed between the wake-up and the lookup is simply not found. The engine takes a
 * reference before it leaves the table's lock and only then the QP's lock, so the order is
 * always table, then QP, never both at once.
 */
#include "udp.h"
#include "core/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#define ENGINE_EVENTS 16

static struct {
    pthread_mutex_t lock;
    int epfd;
    bool started;
    struct udp_conn **slots;
    uint32_t nslots;
    uint32_t gen;
} engine = { .lock = PTHREAD_MUTEX_INITIALIZER, .epfd = -1 };

static uint64_t event_key(const struct udp_conn *c)
{
    return (uint64_t)c->engine_gen << 32 | c->engine_slot;
}

/* The connection an event names, with a reference, or NULL if it is gone. */
static struct udp_conn *conn_of_event(uint64_t key)
{
    uint32_t slot = (uint32_t)key, gen = (uint32_t)(key >> 32);
    struct udp_conn *c = NULL;

    pthread_mutex_lock(&engine.lock);
    if (slot < engine.nslots && engine.slots[slot] && engine.slots[slot]->engine_gen == gen) {
        c = engine.slots[slot];
        atomic_fetch_add(&c->refs, 1);
    }
    pthread_mutex_unlock(&engine.lock);
    return c;
}

static void serve(struct udp_conn *c)
{
    struct nd_qp *qp = c->base.qp;
    bool rearm = false;

    nd_lock_acquire(&qp->lock);
    if (!c->stopped)
        rearm = udp_drain(c);
    nd_lock_release(&qp->lock);
    if (rearm)
        udp_engine_rearm(c);
}

static void *engine_main(void *arg)
{
    int epfd = (int)(intptr_t)arg;
    struct epoll_event ev[ENGINE_EVENTS];

    for (;;) {
        int n = epoll_wait(epfd, ev, ENGINE_EVENTS, -1);

        if (n < 0 && errno != EINTR) {
            nd_log(ND_LOG_ERROR, ND_SUB_UDP, "engine: epoll_wait: %s", nd_err_name(-errno));
            return NULL;
        }
        for (int i = 0; i < n; i++) {
            struct udp_conn *c = conn_of_event(ev[i].data.u64);

            if (c) {
                serve(c);
                udp_conn_put(c);
            }
        }
    }
    return NULL;
}

/* A forked child has no engine thread: its first UD QP starts one of its own. */
static void engine_forked(void)
{
    pthread_mutex_init(&engine.lock, NULL);
    if (engine.epfd >= 0)
        close(engine.epfd);
    engine.epfd = -1;
    engine.started = false;
    engine.slots = NULL;            /* the parent's QPs are not the child's */
    engine.nslots = 0;
}

static void engine_register_atfork(void)
{
    if (pthread_atfork(NULL, NULL, engine_forked))
        nd_log(ND_LOG_WARN, ND_SUB_UDP, "pthread_atfork failed: a forked child's UD QPs get no engine");
}

static int engine_start(void)
{
    static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
    pthread_attr_t attr;
    pthread_t t;
    int st;

    if (engine.started)
        return 0;
    if (engine.epfd < 0 && (engine.epfd = epoll_create1(EPOLL_CLOEXEC)) < 0)
        return -errno;
    pthread_once(&atfork_once, engine_register_atfork);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    st = pthread_create(&t, &attr, engine_main, (void *)(intptr_t)engine.epfd);
    pthread_attr_destroy(&attr);
    if (st != 0)
        return -st;
    engine.started = true;
    return 0;
}

static int slot_take(struct udp_conn *c)
{
    uint32_t i;

    for (i = 0; i < engine.nslots && engine.slots[i]; i++)
        ;
    if (i == engine.nslots) {
        uint32_t n = engine.nslots ? engine.nslots * 2 : 16;
        struct udp_conn **s = realloc(engine.slots, n * sizeof(*s));

        if (!s)
            return -ENOMEM;
        for (uint32_t j = engine.nslots; j < n; j++)
            s[j] = NULL;
        engine.slots = s;
        engine.nslots = n;
    }
    engine.slots[i] = c;
    c->engine_slot = i;
    c->engine_gen = ++engine.gen;
    return 0;
}

int udp_engine_add(struct udp_conn *c)
{
    struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT };
    int st;

    pthread_mutex_lock(&engine.lock);
    st = engine_start();
    if (st == 0)
        st = slot_take(c);
    if (st == 0) {
        ev.data.u64 = event_key(c);
        if (epoll_ctl(engine.epfd, EPOLL_CTL_ADD, c->sock, &ev) != 0) {
            st = -errno;
            engine.slots[c->engine_slot] = NULL;
        }
    }
    pthread_mutex_unlock(&engine.lock);
    return st;
}

void udp_engine_remove(struct udp_conn *c)
{
    pthread_mutex_lock(&engine.lock);
    if (c->engine_slot < engine.nslots && engine.slots[c->engine_slot] == c) {
        engine.slots[c->engine_slot] = NULL;
        epoll_ctl(engine.epfd, EPOLL_CTL_DEL, c->sock, NULL);
    }
    pthread_mutex_unlock(&engine.lock);
}

void udp_engine_rearm(struct udp_conn *c)
{
    struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT, .data.u64 = event_key(c) };

    /* Gone from the set meanwhile (ENOENT): the socket is still ours (we hold a reference
     * or the QP lock's owner does), so nothing else can have its descriptor number. */
    epoll_ctl(engine.epfd, EPOLL_CTL_MOD, c->sock, &ev);
}
