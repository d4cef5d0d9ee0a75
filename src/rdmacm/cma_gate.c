// SPDX-License-Identifier: MIT
/*
 * A listener's events in the order of what they report. The confirmation of an accepted
 * connection (its RTU) and the next connection's request come to the CM thread on
 * different sockets, in either order; a kernel CM delivers the ESTABLISHED of the one
 * before the CONNECT_REQUEST of a connection the client starts only after the first is up,
 * and programs count on it (libfabric's msg endpoints). So while an accept of a listener's
 * request is out, the listener's next requests wait here, and go to its channel, in their
 * order, once no accept is out (after the ESTABLISHED, or the accept's failure).
 *
 * The gate is shared by the listener's id and its children's (a reference each): a child
 * may be accepted after its listener is gone. Everything is under the gate's lock, events
 * pushed to the listener's channel included (lock order: gate, then channel).
 */
#include "cma_int.h"

#include <stdlib.h>
#include <string.h>

struct cm_held_req {
    struct cm_held_req *next;
    struct cm_id *child;
    uint32_t len;
    uint8_t pdata[CM_PDATA_MAX];
};

struct cm_gate {
    pthread_mutex_t lock;
    uint32_t refs;
    uint32_t accepting;             /* accepts of its requests that are out */
    struct cm_id *listener;         /* NULL once the listener's id is destroyed */
    struct cm_held_req *held, **tail;
};

struct cm_gate *cm_gate_new(struct cm_id *listener)
{
    struct cm_gate *g = calloc(1, sizeof(*g));

    if (!g)
        return NULL;
    pthread_mutex_init(&g->lock, NULL);
    g->refs = 1;
    g->listener = listener;
    g->tail = &g->held;
    return g;
}

void cm_gate_ref(struct cm_gate *g)
{
    pthread_mutex_lock(&g->lock);
    g->refs++;
    pthread_mutex_unlock(&g->lock);
}

void cm_gate_unref(struct cm_gate *g)
{
    bool last;

    if (!g)
        return;
    pthread_mutex_lock(&g->lock);
    last = --g->refs == 0;
    pthread_mutex_unlock(&g->lock);
    if (!last)
        return;
    pthread_mutex_destroy(&g->lock);
    free(g);
}

void cm_gate_request(struct cm_gate *g, struct cm_id *child, const void *pdata, uint32_t len)
{
    struct cm_held_req *h;

    pthread_mutex_lock(&g->lock);
    if (!g->accepting && !g->held) {
        cm_queue_request(g->listener, child, pdata, len);
        pthread_mutex_unlock(&g->lock);
        return;
    }
    h = calloc(1, sizeof(*h));
    if (h) {
        h->child = child;
        h->len = len;
        memcpy(h->pdata, pdata, len);
        *g->tail = h;
        g->tail = &h->next;
    } else {
        cm_queue_request(g->listener, child, pdata, len);   /* out of order rather than lost */
    }
    pthread_mutex_unlock(&g->lock);
}

void cm_gate_accept_begin(struct cm_gate *g)
{
    pthread_mutex_lock(&g->lock);
    g->accepting++;
    pthread_mutex_unlock(&g->lock);
}

void cm_gate_accept_end(struct cm_gate *g)
{
    pthread_mutex_lock(&g->lock);
    if (--g->accepting == 0 && g->listener) {
        struct cm_held_req *h = g->held;

        g->held = NULL;
        g->tail = &g->held;
        while (h) {
            struct cm_held_req *next = h->next;

            cm_queue_request(g->listener, h->child, h->pdata, h->len);
            free(h);
            h = next;
        }
    }
    pthread_mutex_unlock(&g->lock);
}

void cm_gate_close(struct cm_gate *g)
{
    struct cm_held_req *h;

    pthread_mutex_lock(&g->lock);
    g->listener = NULL;
    h = g->held;
    g->held = NULL;
    g->tail = &g->held;
    pthread_mutex_unlock(&g->lock);
    /* Requests never delivered: refused, their ids gone with them. */
    while (h) {
        struct cm_held_req *next = h->next;

        ndc_connector_reject(h->child->conn, NULL, 0);
        rdma_destroy_id(&h->child->id);
        free(h);
        h = next;
    }
    cm_gate_unref(g);
}
