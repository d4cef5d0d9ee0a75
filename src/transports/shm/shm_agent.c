// SPDX-License-Identifier: MIT
/*
 * The bounce agent: one thread per process, serving every bounce channel this process
 * offers (shm_bounce.c). A Write completes at its initiator without our application
 * taking part, so its bytes cannot wait for our application's next call: the agent takes
 * them. It spins a short while after its last request, as a back-to-back stream keeps it
 * busy, then sleeps on its eventfd, which an initiator rings only when the agent said it
 * sleeps (the channel's asleep word). Channels are offered and withdrawn here, with the
 * connection that needs one (shm_attach, shm_destroy).
 */
#include "shm_bounce.h"
#include "core/log.h"
#include "core/qp_int.h"
#include "core/transport.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* How long the agent stays awake after its last request. */
#define AGENT_SPIN_NS (200ull * 1000)

static struct {
    pthread_mutex_t lock;
    struct shm_served head;         /* the channels served: a ring through head */
    int bell;                       /* eventfd, published for peers */
    bool started;
    uint32_t generation;            /* bumped in a forked child, whose list starts empty */
    _Atomic uint32_t channels;      /* on the list: lenders look here first, without the lock */
    pthread_t thread;
} agent = { .lock = PTHREAD_MUTEX_INITIALIZER, .head = { .prev = &agent.head, .next = &agent.head }, .bell = -1 };

/* Serve every channel no poller serves (lock held): how many requests; *polled: whether a
 * poller serves some; *ours: whether we serve any. */
static uint32_t serve_all(uint64_t now, bool *polled, bool *ours)
{
    uint32_t n = 0;

    *polled = *ours = false;
    for (struct shm_served *s = agent.head.next; s != &agent.head; s = s->next) {
        if (shm_bounce_polled(s, now)) {
            *polled = true;
        } else {
            *ours = true;
            n += shm_bounce_serve_try(s);
        }
    }
    return n;
}

/* Say we sleep on the channels we serve, then look once more (lock held): whether we may. */
static bool going_to_sleep(uint64_t now)
{
    struct shm_served *s;

    for (s = agent.head.next; s != &agent.head; s = s->next)
        if (!shm_bounce_polled(s, now))
            atomic_store_explicit(&((struct shm_bounce_hdr *)s->map)->asleep, 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst);
    for (s = agent.head.next; s != &agent.head; s = s->next)
        if (!shm_bounce_polled(s, now) && shm_bounce_pending(s))
            return false;
    return true;
}

/* Until the bell rings; while pollers serve channels, a look again when they may have
 * stopped (their channels are not marked asleep: nobody rings for them). */
static void sleep_on_bell(bool polled)
{
    struct pollfd p = { .fd = agent.bell, .events = POLLIN };
    uint64_t count;

    if (poll(&p, 1, polled ? (int)(SHM_BOUNCE_POLLED_NS / 1000000) : -1) > 0 &&
        read(agent.bell, &count, sizeof(count)) < 0 && errno != EINTR && errno != EAGAIN)
        nd_log(ND_LOG_WARN, ND_SUB_SHM, "bounce agent's eventfd: %m");
}

static void *agent_main(void *arg)
{
    uint64_t idle_since = nd_now_ns();

    (void)arg;
    for (;;) {
        uint64_t now = nd_now_ns();
        bool polled, ours;

        pthread_mutex_lock(&agent.lock);
        uint32_t n = serve_all(now, &polled, &ours);
        /* Spinning is for channels of ours: pollers serve the rest. */
        bool sleep = !n && (!ours || now - idle_since > AGENT_SPIN_NS) && going_to_sleep(now);
        pthread_mutex_unlock(&agent.lock);

        if (n) {
            idle_since = nd_now_ns();
        } else if (sleep) {
            sleep_on_bell(polled);
            idle_since = nd_now_ns();
        } else {
            nd_cpu_relax();
        }
    }
    return NULL;
}

/*
 * An application thread's empty poll (the verbs front end's), lent to every channel: a
 * program may spin on a CQ of another queue pair (perftest's server on its handshake
 * QP's) while a peer streams Writes into us, and on a small host that spinner and the
 * agent would share a CPU the writer needs. The lender serves, and marks each channel
 * polled, so the agent leaves it alone until the lending stops. It never waits for the
 * lock.
 */
void shm_agent_lend(void)
{
    uint64_t now;

    /* Other transports ask for empty polls too (iwarp): no lock taken for nothing. */
    if (!atomic_load_explicit(&agent.channels, memory_order_relaxed) || pthread_mutex_trylock(&agent.lock))
        return;
    now = nd_now_ns();
    for (struct shm_served *s = agent.head.next; s != &agent.head; s = s->next) {
        atomic_store_explicit(&s->polled_ns, now, memory_order_relaxed);
        shm_bounce_serve_try(s);
    }
    pthread_mutex_unlock(&agent.lock);
}

/* A forked child has no agent: its copies of the parent's channels are not served. */
static void agent_forked(void)
{
    for (struct shm_served *s = agent.head.next; s != &agent.head; s = s->next)
        nd_lend_want(false);
    agent.started = false;
    agent.generation++;
    atomic_store_explicit(&agent.channels, 0, memory_order_relaxed);
    agent.head.prev = agent.head.next = &agent.head;
    if (agent.bell >= 0) {
        nd_fd_unpublish(agent.bell);
        close(agent.bell);
        agent.bell = -1;
    }
    pthread_mutex_init(&agent.lock, NULL);
}

static void agent_fork_prepare(void)
{
    pthread_mutex_lock(&agent.lock);
}

static void agent_fork_parent(void)
{
    pthread_mutex_unlock(&agent.lock);
}

static void register_atfork(void)
{
    if (pthread_atfork(agent_fork_prepare, agent_fork_parent, agent_forked))
        nd_log(ND_LOG_WARN, ND_SUB_SHM, "pthread_atfork failed: a forked child may deadlock in the bounce agent");
}

/* The eventfd and the thread, once (lock held). */
static int agent_start(void)
{
    static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
    struct nd_fd_ref ref;
    int err;

    if (agent.started)
        return 0;
    pthread_once(&atfork_once, register_atfork);
    if (agent.bell < 0) {
        agent.bell = eventfd(0, EFD_CLOEXEC);
        if (agent.bell < 0)
            return -errno;
        if (!nd_fd_ref_of(agent.bell, &ref)) {
            close(agent.bell);
            agent.bell = -1;
            return -EIO;
        }
    }
    err = nd_thread_start(&agent.thread, agent_main, NULL, "nd-bounce");
    if (err)
        return -err;
    pthread_detach(agent.thread);
    agent.started = true;
    nd_log(ND_LOG_INFO, ND_SUB_SHM, "bounce agent started: a peer of this process may not reach its memory");
    return 0;
}

static int agent_add(struct shm_served *s, int *bell)
{
    int st;

    pthread_mutex_lock(&agent.lock);
    st = agent_start();
    if (st == 0) {
        s->next = &agent.head;
        s->prev = agent.head.prev;
        agent.head.prev->next = s;
        agent.head.prev = s;
        s->generation = agent.generation;
        /* The agent may be asleep already, having marked only the channels it knew: the
         * new one says so too, or its first request would not wake it. */
        atomic_store_explicit(&((struct shm_bounce_hdr *)s->map)->asleep, 1, memory_order_relaxed);
        *bell = agent.bell;
        atomic_fetch_add_explicit(&agent.channels, 1, memory_order_relaxed);
        nd_lend_want(true);
    }
    pthread_mutex_unlock(&agent.lock);
    return st;
}

static void agent_remove(struct shm_served *s)
{
    pthread_mutex_lock(&agent.lock);
    if (s->next && s->generation == agent.generation) {    /* not if a fork emptied the list */
        s->prev->next = s->next;
        s->next->prev = s->prev;
        s->prev = s->next = NULL;
        atomic_fetch_sub_explicit(&agent.channels, 1, memory_order_relaxed);
        nd_lend_want(false);
    }
    pthread_mutex_unlock(&agent.lock);
}

struct shm_served *shm_bounce_offer(struct nd_qp *qp)
{
    struct shm_bounce_rights rights = { .mtab = qp->adapter->mtab, .pd = qp->pd, .recv_pd = nd_qp_recv_pd(qp),
                                        .no_remote_atomic = &qp->ctl->no_remote_atomic };
    struct shm_served *s = shm_bounce_channel_new(&rights);
    struct nd_fd_ref ref;
    int bell;

    if (!s)
        return NULL;
    if (!nd_fd_ref_of(s->fd, &ref) || agent_add(s, &bell) != 0) {
        nd_fd_unpublish(s->fd);
        shm_bounce_channel_free(s);
        return NULL;
    }
    qp->ctl->bounce_chan = ref;
    qp->ctl->bounce_bell = bell;
    atomic_store_explicit(&qp->ctl->bounce_ready, 1, memory_order_release);
    nd_log(ND_LOG_DEBUG, ND_SUB_SHM, "bounce channel offered: the peer may not reach our memory");
    return s;
}

void shm_bounce_withdraw(struct nd_qp *qp, struct shm_served *s)
{
    if (!s)
        return;
    atomic_store_explicit(&qp->ctl->bounce_ready, 0, memory_order_relaxed);
    agent_remove(s);
    /* Taken for good: a poller that is still inside leaves first, and none enters. */
    while (atomic_exchange_explicit(&s->serving, 1, memory_order_acquire))
        nd_cpu_relax();
    nd_fd_unpublish(s->fd);
    shm_bounce_channel_free(s);
}
