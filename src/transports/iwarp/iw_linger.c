// SPDX-License-Identifier: MIT
/*
 * The sockets of destroyed connections whose bytes have not all left. A close queues the
 * FIN behind unsent bytes; when the peer stopped taking them (its receiver waits for a
 * receive its application never posts, and its TCP window closed), the FIN never goes,
 * and the peer never hears of the disconnect: an application waiting for it (qperf's
 * server, waiting for DISCONNECTED before it posts anything) waits for ever. On
 * InfiniBand the disconnect (a DREQ) queues behind no data.
 *
 * So such a socket is watched here rather than closed: it is closed once its bytes are
 * sent (its FIN follows them, as a plain close's would), and reset (RST) once they have
 * not moved for ND_RNR_WAIT_NS. Sends that completed as the socket took them may be lost
 * that way, as a siw peer would have refused them; a peer that reads on is never reset.
 * A thread of its own watches, started when a socket lingers and ended when none is
 * left; a process that exits waits for its lingering sockets within the same bound.
 */
#include "iwarp.h"
#include "core/log.h"

#include <linux/sockios.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define LINGER_LOOK_MS 20

struct lingering_socket {
    int sock;
    int unsent;                 /* bytes not yet sent at the last look */
    uint64_t since;             /* when that count last changed (nd_now_ns) */
};

static pthread_mutex_t linger_lock = PTHREAD_MUTEX_INITIALIZER;
static struct lingering_socket *lingering;
static uint32_t lingering_count, lingering_cap;
static bool watcher_running;

static int unsent_bytes(int sock)
{
    int unsent;

    return ioctl(sock, SIOCOUTQNSD, &unsent) == 0 ? unsent : 0;
}

static void reset_close(int sock)
{
    struct linger l = { .l_onoff = 1, .l_linger = 0 };

    if (setsockopt(sock, SOL_SOCKET, SO_LINGER, &l, sizeof(l)) < 0)
        nd_log(ND_LOG_DEBUG, ND_SUB_IWARP, "SO_LINGER: %m");
    close(sock);
}

/* One look at each lingering socket, under linger_lock. true: some are left. */
static bool look_lingering(void)
{
    uint64_t now = nd_now_ns();

    for (uint32_t i = 0; i < lingering_count;) {
        struct lingering_socket *s = &lingering[i];
        int unsent = unsent_bytes(s->sock);

        if (unsent > 0 && unsent != s->unsent) {
            s->unsent = unsent;
            s->since = now;
        }
        if (unsent > 0 && now - s->since < ND_RNR_WAIT_NS) {
            i++;
            continue;
        }
        if (unsent > 0) {
            nd_log(ND_LOG_INFO, ND_SUB_IWARP, "the peer took none of %d bytes for %llu ms: connection reset", unsent,
                   (unsigned long long)(ND_RNR_WAIT_NS / 1000000));
            reset_close(s->sock);
        } else {
            close(s->sock);
        }
        *s = lingering[--lingering_count];
    }
    return lingering_count != 0;
}

static void *watch_lingering(void *arg)
{
    const struct timespec pause = { .tv_nsec = LINGER_LOOK_MS * 1000000L };
    bool more = true;

    (void)arg;
    while (more) {
        nanosleep(&pause, NULL);
        pthread_mutex_lock(&linger_lock);
        more = look_lingering();
        watcher_running = more;
        pthread_mutex_unlock(&linger_lock);
    }
    return NULL;
}

/* Under linger_lock. false: no room or no watcher; the caller closes it plainly. */
static bool add_lingering(int sock, int unsent)
{
    pthread_t t;

    if (lingering_count == lingering_cap) {
        uint32_t cap = lingering_cap ? lingering_cap * 2 : 8;
        struct lingering_socket *l = realloc(lingering, cap * sizeof(*l));

        if (!l)
            return false;
        lingering = l;
        lingering_cap = cap;
    }
    if (!watcher_running) {
        if (nd_thread_start(&t, watch_lingering, NULL, "nd-iw-linger"))
            return false;
        pthread_detach(t);
        watcher_running = true;
    }
    lingering[lingering_count++] = (struct lingering_socket){ sock, unsent, nd_now_ns() };
    return true;
}

void iw_close_socket(int sock)
{
    int unsent = unsent_bytes(sock);
    bool kept;

    if (unsent <= 0) {
        close(sock);
        return;
    }
    pthread_mutex_lock(&linger_lock);
    kept = add_lingering(sock, unsent);
    pthread_mutex_unlock(&linger_lock);
    if (!kept)
        close(sock);
}

/* The watcher does not outlive the process: its sockets get their bound now. */
__attribute__((destructor)) static void linger_at_exit(void)
{
    const struct timespec pause = { .tv_nsec = LINGER_LOOK_MS * 1000000L };

    pthread_mutex_lock(&linger_lock);
    while (look_lingering()) {
        pthread_mutex_unlock(&linger_lock);
        nanosleep(&pause, NULL);
        pthread_mutex_lock(&linger_lock);
    }
    pthread_mutex_unlock(&linger_lock);
}

/* A fork's child has no watcher; its copies of the descriptors only keep the sockets from
 * closing when the parent closes them, so it drops them. */
static void linger_fork_prepare(void)
{
    pthread_mutex_lock(&linger_lock);
}

static void linger_fork_parent(void)
{
    pthread_mutex_unlock(&linger_lock);
}

static void linger_fork_child(void)
{
    for (uint32_t i = 0; i < lingering_count; i++)
        close(lingering[i].sock);
    lingering_count = 0;
    watcher_running = false;
    pthread_mutex_unlock(&linger_lock);
}

__attribute__((constructor)) static void linger_register_fork(void)
{
    pthread_atfork(linger_fork_prepare, linger_fork_parent, linger_fork_child);
}
