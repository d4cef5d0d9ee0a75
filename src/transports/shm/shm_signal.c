// SPDX-License-Identifier: MIT
/*
 * A peer CQ's signal eventfd, shared by every connection to that CQ: a server holding ten
 * thousand connections from one client process keeps one descriptor per client CQ, not
 * one per connection. Keyed by the peer's pid (from SO_PEERCRED, so a peer can only alias
 * its own CQs), its process nonce and the CQ's serial, both as the peer states them. The
 * descriptor is fetched from the peer the first time (pidfd_getfd) and kept a while after
 * its last connection goes (up to SIGNALS_IDLE of them): the next connection to the same
 * CQ, the common case, then costs nothing.
 */
#include "shm.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#define BUCKETS 1024u
#define SIGNALS_IDLE 64u

struct shm_signal {
    pid_t pid;
    uint64_t nonce, serial;
    int fd;
    uint32_t refs;
    uint64_t last_used;
    struct shm_signal *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct shm_signal *buckets[BUCKETS];
static uint32_t idle;
static uint64_t clock_now;

static uint32_t bucket_of(pid_t pid, uint64_t nonce, uint64_t serial)
{
    uint64_t h = ((uint64_t)(uint32_t)pid * 0x9e3779b97f4a7c15ull) ^ nonce ^ (serial * 0xff51afd7ed558ccdull);

    return (uint32_t)(h >> 32) % BUCKETS;
}

static void unlink_free(struct shm_signal *s)
{
    struct shm_signal **p = &buckets[bucket_of(s->pid, s->nonce, s->serial)];

    while (*p != s)
        p = &(*p)->next;
    *p = s->next;
    close(s->fd);
    free(s);
}

/* Too many kept with no connection: drop the longest unused (lock held; rare). */
static void evict_idle(void)
{
    while (idle > SIGNALS_IDLE) {
        struct shm_signal *lru = NULL;

        for (uint32_t b = 0; b < BUCKETS; b++)
            for (struct shm_signal *s = buckets[b]; s; s = s->next)
                if (!s->refs && (!lru || s->last_used < lru->last_used))
                    lru = s;
        unlink_free(lru);
        idle--;
    }
}

struct shm_signal *shm_signal_get(pid_t pid, uint64_t nonce, uint64_t serial, int32_t peer_fd)
{
    uint32_t b = bucket_of(pid, nonce, serial);
    struct shm_signal *s;
    int fd;

    pthread_mutex_lock(&lock);
    for (s = buckets[b]; s; s = s->next)
        if (s->pid == pid && s->nonce == nonce && s->serial == serial)
            break;
    if (s) {
        idle -= s->refs == 0;
        s->refs++;
    } else if ((fd = nd_fd_fetch_eventfd(pid, peer_fd)) >= 0) {
        s = malloc(sizeof(*s));
        if (s) {
            *s = (struct shm_signal){ .pid = pid, .nonce = nonce, .serial = serial, .fd = fd, .refs = 1,
                                      .next = buckets[b] };
            buckets[b] = s;
        } else {
            close(fd);
        }
    }
    pthread_mutex_unlock(&lock);
    return s;
}

int shm_signal_fd(const struct shm_signal *s)
{
    return s ? s->fd : -1;
}

void shm_signal_put(struct shm_signal *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&lock);
    if (--s->refs == 0) {
        s->last_used = ++clock_now;
        idle++;
        evict_idle();
    }
    pthread_mutex_unlock(&lock);
}
