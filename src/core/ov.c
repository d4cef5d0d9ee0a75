// SPDX-License-Identifier: MIT
/* Overlapped requests: pending FIFOs per object, completion, and waiting on one request. */
#include "core.h"
#include "log.h"

#include <errno.h>
#include <stdlib.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

/*
 * ov->internal_state is the request's futex word: IDLE while pending with nobody blocked
 * on it, WAITER once a thread sleeps in ndc_get_overlapped_result, DONE once completed.
 * The completer swaps in DONE before it publishes the status, so it only needs to wake
 * when it saw WAITER; it never reads the request again after publishing the status,
 * because the owner may reuse or free it from that moment on.
 */
enum { OV_IDLE = 0, OV_WAITER = 1, OV_DONE = 2 };

static int32_t shown_as_is(int st)
{
    return st;
}

static int read_as_is(int32_t shown)
{
    return shown;
}

static const struct nd_status_codec own_codec = { .encode = shown_as_is, .decode = read_as_is };
static const struct nd_status_codec *codec = &own_codec;
static int32_t shown_pending = -EINPROGRESS;

void nd_use_status_codec(const struct nd_status_codec *c)
{
    codec = c;
    shown_pending = c->encode(-EINPROGRESS);
}

int32_t nd_status_shown(int st)
{
    return codec->encode(st);
}

int nd_ov_result(const nd_overlapped *ov)
{
    return codec->decode(__atomic_load_n(&ov->status, __ATOMIC_ACQUIRE));
}

void nd_ovobj_init(struct nd_ovobj *obj, struct nd_port *port, const struct nd_ovobj_ops *ops)
{
    obj->port = port;
    obj->ops = ops;
    obj->head = obj->tail = NULL;
    pthread_mutex_init(&obj->wait_lock, NULL);
    obj->wait_list = NULL;
    obj->waiters = 0;
}

void nd_ovobj_fini(struct nd_ovobj *obj)
{
    pthread_mutex_destroy(&obj->wait_lock);
}

/* The calling thread's place in an object's wait list; a thread waits on one object at a
 * time. Its eventfd lives as long as the thread. */
struct nd_ov_waiter {
    int fd;
    struct nd_ov_waiter *next;
};

static __thread struct nd_ov_waiter self_waiter = { .fd = -1 };
static __thread struct nd_ovobj *waiting_on;   /* the object this thread waits in, if any */
static pthread_key_t wake_key;
static pthread_once_t wake_key_once = PTHREAD_ONCE_INIT;

static void close_thread_wake(void *arg)
{
    close((int)(intptr_t)arg - 1);
}

static void make_wake_key(void)
{
    if (pthread_key_create(&wake_key, close_thread_wake) != 0)
        nd_log(ND_LOG_WARN, ND_SUB_PORT, "no thread key: wake descriptors close at exit only");
}

static int thread_wake_fd(void)
{
    if (self_waiter.fd < 0) {
        self_waiter.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        pthread_once(&wake_key_once, make_wake_key);
        if (self_waiter.fd >= 0)
            pthread_setspecific(wake_key, (void *)(intptr_t)(self_waiter.fd + 1));
    }
    return self_waiter.fd;
}

int nd_ovobj_wait_begin(struct nd_ovobj *obj)
{
    int fd = thread_wake_fd();

    pthread_mutex_lock(&obj->wait_lock);
    self_waiter.next = obj->wait_list;
    obj->wait_list = &self_waiter;
    __atomic_add_fetch(&obj->waiters, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&obj->wait_lock);
    waiting_on = obj;
    return fd;
}

void nd_ovobj_wait_end(struct nd_ovobj *obj)
{
    waiting_on = NULL;
    pthread_mutex_lock(&obj->wait_lock);
    for (struct nd_ov_waiter **w = &obj->wait_list; *w; w = &(*w)->next)
        if (*w == &self_waiter) {
            *w = self_waiter.next;
            break;
        }
    __atomic_sub_fetch(&obj->waiters, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&obj->wait_lock);
}

void nd_ovobj_wake_drain(struct nd_ovobj *obj)
{
    uint64_t v;

    (void)obj;
    if (self_waiter.fd >= 0 && read(self_waiter.fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
        nd_log(ND_LOG_DEBUG, ND_SUB_PORT, "wake read: %m");
}

/* A request of @obj completed: wake its waiters, unless the only one is this thread. */
static void wake_waiters(struct nd_ovobj *obj)
{
    uint32_t n = __atomic_load_n(&obj->waiters, __ATOMIC_SEQ_CST);
    uint64_t one = 1;

    if (!n || (n == 1 && waiting_on == obj))
        return;
    /* The list holds each waiter until it leaves, so its thread (and eventfd) is alive. */
    pthread_mutex_lock(&obj->wait_lock);
    for (struct nd_ov_waiter *w = obj->wait_list; w; w = w->next)
        if (w != &self_waiter && write(w->fd, &one, sizeof(one)) < 0)
            nd_log(ND_LOG_DEBUG, ND_SUB_PORT, "wake write: %m");
    pthread_mutex_unlock(&obj->wait_lock);
}

void nd_ov_start(struct nd_ovobj *obj, nd_overlapped *ov)
{
    ov->bytes = 0;
    ov->internal_next = NULL;
    ov->internal_owner = obj;
    __atomic_store_n(&ov->internal_state, OV_IDLE, __ATOMIC_RELAXED);
    __atomic_store_n(&ov->status, shown_pending, __ATOMIC_RELEASE);
    if (obj->tail)
        obj->tail->internal_next = ov;
    else
        obj->head = ov;
    obj->tail = ov;
}

nd_overlapped *nd_ov_take_all(struct nd_ovobj *obj)
{
    nd_overlapped *head = obj->head;

    obj->head = obj->tail = NULL;
    return head;
}

nd_overlapped *nd_ov_next(nd_overlapped *ov)
{
    return ov->internal_next;
}

bool nd_ov_is_pending(const nd_overlapped *ov)
{
    return __atomic_load_n(&ov->status, __ATOMIC_ACQUIRE) == shown_pending;
}

void nd_ovbatch_init(struct nd_ovbatch *b, struct nd_port *port)
{
    b->port = port;
    b->items = b->inline_items;
    b->n = 0;
    b->cap = ND_ARRAY_SIZE(b->inline_items);
}

static void batch_push(struct nd_ovbatch *b, nd_overlapped *ov)
{
    if (b->n == b->cap) {
        uint32_t cap = b->cap * 2;
        nd_overlapped **items = malloc(cap * sizeof(*items));

        if (!items) {
            nd_log(ND_LOG_ERROR, ND_SUB_PORT, "completion dropped: out of memory");
            return;
        }
        memcpy(items, b->items, b->n * sizeof(*items));
        if (b->items != b->inline_items)
            free(b->items);
        b->items = items;
        b->cap = cap;
    }
    b->items[b->n++] = ov;
}

void nd_ov_finish(nd_overlapped *ov, int status, uint64_t bytes, struct nd_ovbatch *batch)
{
    struct nd_ovobj *obj = ov->internal_owner;  /* the owner outlives its requests */
    uint32_t prev;

    ov->bytes = bytes;
    ov->internal_next = NULL;
    if (!(ov->flags & ND_OV_FLAG_NO_PORT) && batch)
        batch_push(batch, ov);
    prev = __atomic_exchange_n(&ov->internal_state, OV_DONE, __ATOMIC_SEQ_CST);
    __atomic_store_n(&ov->status, codec->encode(status), __ATOMIC_RELEASE);
    /* From here on @ov may be gone: only its address is used (futex wake, the port queue). */
    if (prev == OV_WAITER)
        nd_futex_wake(&ov->internal_state, 1 << 30);
    if (obj)
        wake_waiters(obj);
}

/* Default wait: sleep on the request's futex word until the completer publishes. */
static void ov_futex_wait(nd_overlapped *ov)
{
    while (nd_ov_is_pending(ov)) {
        uint32_t st = OV_IDLE;

        if (__atomic_compare_exchange_n(&ov->internal_state, &st, OV_WAITER, false,
                                        __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST) ||
            st == OV_WAITER)
            nd_futex_wait(&ov->internal_state, OV_WAITER, -1);
        else
            nd_cpu_relax();   /* DONE: the status store is a few instructions away */
    }
}

ND_DOOR int ndc_get_overlapped_result(nd_overlapped *ov, int wait)
{
    struct nd_ovobj *obj;

    if (!ov)
        return ND_EARG(1);
    if (!nd_ov_is_pending(ov))
        return nd_ov_result(ov);
    obj = ov->internal_owner;
    if (!wait) {
        if (obj && obj->ops && obj->ops->poll)
            obj->ops->poll(obj);
        return nd_ov_result(ov);
    }
    if (obj && obj->ops && obj->ops->wait)
        obj->ops->wait(obj, ov);
    else
        ov_futex_wait(ov);
    return nd_ov_result(ov);
}

void nd_ovbatch_remove(struct nd_ovbatch *b, nd_overlapped *ov)
{
    for (uint32_t i = 0; i < b->n; i++)
        if (b->items[i] == ov) {
            memmove(&b->items[i], &b->items[i + 1], (b->n - i - 1) * sizeof(*b->items));
            b->n--;
            return;
        }
}

void nd_ovbatch_release(struct nd_ovbatch *b)
{
    if (b->items != b->inline_items)
        free(b->items);
    b->items = b->inline_items;
    b->n = 0;
    b->cap = ND_ARRAY_SIZE(b->inline_items);
}

void nd_ov_requeue(struct nd_ovobj *obj, nd_overlapped *ov)
{
    ov->internal_next = NULL;
    if (obj->tail)
        obj->tail->internal_next = ov;
    else
        obj->head = ov;
    obj->tail = ov;
}

bool nd_ov_remove(struct nd_ovobj *obj, nd_overlapped *ov)
{
    nd_overlapped *prev = NULL;

    for (nd_overlapped *cur = obj->head; cur; prev = cur, cur = cur->internal_next) {
        if (cur != ov)
            continue;
        if (prev)
            prev->internal_next = cur->internal_next;
        else
            obj->head = cur->internal_next;
        if (obj->tail == cur)
            obj->tail = prev;
        cur->internal_next = NULL;
        return true;
    }
    return false;
}
