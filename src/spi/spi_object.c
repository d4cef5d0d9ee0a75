// SPDX-License-Identifier: MIT
/*
 * Reference counts of the COM objects. Release never fails in COM, but the C API refuses
 * to close an object others still use (a CQ under a QP, a region under a bound window, a
 * port under its objects): such a close waits on a list and is retried whenever another
 * object closes, so releasing in any order works.
 */
#include "spi_int.h"

static pthread_mutex_t deferred_lock = PTHREAD_MUTEX_INITIALIZER;
static struct spi_object *deferred;

void spi_object_init(struct spi_object *o, const void *vtbl, nd_status (*close)(struct spi_object *))
{
    o->vtbl = vtbl;
    o->refs = 1;
    o->close = close;
    o->deferred_next = NULL;
}

ULONG spi_object_add_ref(struct spi_object *o)
{
    return __atomic_add_fetch(&o->refs, 1, __ATOMIC_RELAXED);
}

/* Close what waits; repeat while closes succeed, since one may free another. */
static void retry_deferred(void)
{
    bool progress = true;

    while (progress) {
        struct spi_object *list, *o, *next, *still = NULL;

        progress = false;
        pthread_mutex_lock(&deferred_lock);
        list = deferred;
        deferred = NULL;
        pthread_mutex_unlock(&deferred_lock);
        for (o = list; o; o = next) {
            next = o->deferred_next;
            if (o->close(o) == ND_DEVICE_BUSY) {
                o->deferred_next = still;
                still = o;
            } else {
                progress = true;
            }
        }
        pthread_mutex_lock(&deferred_lock);
        while (still) {
            o = still;
            still = o->deferred_next;
            o->deferred_next = deferred;
            deferred = o;
        }
        pthread_mutex_unlock(&deferred_lock);
    }
}

ULONG spi_object_release(struct spi_object *o)
{
    uint32_t left = __atomic_load_n(&o->refs, __ATOMIC_RELAXED);

    /* A Release past zero is the caller's bug; it must not close the object twice. */
    do {
        if (!left)
            return 0;
    } while (!__atomic_compare_exchange_n(&o->refs, &left, left - 1, 0, __ATOMIC_ACQ_REL,
                                          __ATOMIC_RELAXED));
    if (left > 1)
        return left - 1;
    if (o->close(o) == ND_DEVICE_BUSY) {
        pthread_mutex_lock(&deferred_lock);
        o->deferred_next = deferred;
        deferred = o;
        pthread_mutex_unlock(&deferred_lock);
        return 0;
    }
    retry_deferred();
    return 0;
}
