// SPDX-License-Identifier: MIT
/*
 * Event channels, ids and the CM thread.
 *
 * A channel is an event queue behind its descriptor (core/evq.h): rdma_get_cm_event takes
 * the oldest event; rdma_ack_cm_event frees it. rdma_destroy_id waits until
 * every event delivered for the id is acknowledged and every request of the id is back
 * from the core, then frees it.
 */
#include "cma_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_once_t cm_once = PTHREAD_ONCE_INIT;
static nd_port *the_port;
static struct ibv_context *the_context;
static struct ibv_pd *the_pd;
static pthread_t cm_thread;
/* What cm_wake posts to the port: no request's, so the thread only looks at its deferred
 * disconnects. Posted at most once at a time (wake_posted). */
static nd_overlapped wake_ov;
static atomic_bool wake_posted;
static const struct cm_engine *_Atomic the_engine;     /* cma_conn.c's (cm_engine_set) */

int cm_fail(int err)
{
    errno = err;
    return -1;
}

static void *cm_main(void *arg)
{
    (void)arg;
    int timeout_ms = -1;

    for (;;) {
        nd_overlapped *ov = NULL;
        int st = ndc_port_wait(the_port, timeout_ms, &ov);
        struct cm_op *op;

        /* Set before any request went to the core, so before anything can wake us. */
        const struct cm_engine *e = atomic_load_explicit(&the_engine, memory_order_acquire);

        if (st != 0) {         /* the wait for a deferred disconnect's next look */
            timeout_ms = e ? e->idle() : -1;
            continue;
        }
        if (ov == &wake_ov) {
            atomic_store(&wake_posted, false);
            timeout_ms = e ? e->idle() : -1;
            continue;
        }
        op = (struct cm_op *)((char *)ov - offsetof(struct cm_op, ov));
        st = ndc_get_overlapped_result(ov, 0);
        cm_op_taken(op->id, op->kind);
        e->handle(op->id, op->kind, st);
        cm_op_done(op->id);
        timeout_ms = e->idle();
    }
    return NULL;
}

static void cm_init(void)
{
    struct ibv_device **list = ibv_get_device_list(NULL);

    if (list && list[0])
        the_context = ibv_open_device(list[0]);
    ibv_free_device_list(list);
    if (the_context)
        the_pd = ibv_alloc_pd(the_context);
    if (!the_pd || ndc_port_create(&the_port) != 0) {
        the_port = NULL;
        return;
    }
    /* Detached: it waits on the port for the life of the process. Started as every library
     * thread is, with every signal blocked: the application's handlers run on its own. */
    if (ndv_thread_start(&cm_thread, cm_main, NULL, "nd-rdmacm") != 0)
        the_port = NULL;
    else
        pthread_detach(cm_thread);
}

void cm_engine_set(const struct cm_engine *engine)
{
    atomic_store_explicit(&the_engine, engine, memory_order_release);
}

bool cm_on_thread(void)
{
    return the_port && pthread_equal(pthread_self(), cm_thread);
}

void cm_wake(void)
{
    if (!atomic_exchange(&wake_posted, true))
        ndc_port_post(the_port, &wake_ov, 0, 0);
}

nd_port *cm_port(void)
{
    pthread_once(&cm_once, cm_init);
    return the_port;
}

struct ibv_context *cm_context(void)
{
    return cm_port() ? the_context : NULL;
}

struct ibv_pd *cm_default_pd(void)
{
    return cm_port() ? the_pd : NULL;
}

void cm_op_begin(struct cm_id *id, enum cm_op_kind kind)
{
    pthread_mutex_lock(&id->lock);
    memset(&id->op[kind].ov, 0, sizeof(id->op[kind].ov));
    id->op[kind].pending = true;
    id->ops_out++;
    pthread_mutex_unlock(&id->lock);
}

/* A request of @kind came back: its slot is free (its handler may start the next one),
 * but it still counts until cm_op_done, so that the id outlives the handler. */
void cm_op_taken(struct cm_id *id, enum cm_op_kind kind)
{
    pthread_mutex_lock(&id->lock);
    id->op[kind].pending = false;
    pthread_mutex_unlock(&id->lock);
}

void cm_op_done(struct cm_id *id)
{
    pthread_mutex_lock(&id->lock);
    id->ops_out--;
    pthread_cond_broadcast(&id->cond);
    pthread_mutex_unlock(&id->lock);
}

/* ---- channels ---- */

CM_API struct rdma_event_channel *rdma_create_event_channel(void)
{
    struct cm_channel *c = calloc(1, sizeof(*c));

    if (!c) {
        errno = ENOMEM;
        return NULL;
    }
    if (!cm_port()) {
        free(c);
        errno = ENODEV;
        return NULL;
    }
    if (nd_evq_init(&c->q) < 0) {
        free(c);
        return NULL;
    }
    c->ch.fd = c->q.fd;
    return &c->ch;
}

static void event_free(struct nd_evq_node *n)
{
    free(CM_EVENT_OF(n));
}

CM_API void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
    struct cm_channel *c = (struct cm_channel *)channel;

    if (!channel)
        return;
    nd_evq_fini(&c->q, event_free);
    free(c);
}

static void channel_push(struct cm_channel *c, struct cm_event *e)
{
    if (nd_evq_push(&c->q, &e->node) < 0)
        abort();                    /* an eventfd count cannot overflow here */
}

static struct cm_event *event_new(struct cm_id *owner, struct rdma_cm_id *evid, enum rdma_cm_event_type type,
                                  int status, const void *pdata, uint32_t len)
{
    struct cm_event *e = calloc(1, sizeof(*e));

    if (!e)
        return NULL;
    e->node.owner = owner;
    e->ev.id = evid;
    e->ev.event = type;
    e->ev.status = status;
    if (len > CM_PDATA_MAX)
        len = CM_PDATA_MAX;
    if (pdata && len) {
        memcpy(e->pdata, pdata, len);
        e->ev.param.conn.private_data = e->pdata;
        e->ev.param.conn.private_data_len = (uint8_t)(len > 255 ? 255 : len);
    }
    e->ev.param.conn.responder_resources = (uint8_t)(owner->ird > 255 ? 255 : owner->ird);
    e->ev.param.conn.initiator_depth = (uint8_t)(owner->ord > 255 ? 255 : owner->ord);
    return e;
}

void cm_queue_event(struct cm_id *id, enum rdma_cm_event_type type, int status, const void *pdata, uint32_t len)
{
    struct cm_event *e = event_new(id, &id->id, type, status, pdata, len);

    if (!e)
        return;                     /* lost for want of memory */
    channel_push((struct cm_channel *)id->id.channel, e);
}

void cm_queue_ud_event(struct cm_id *id, enum rdma_cm_event_type type, int status, const void *pdata, uint32_t len,
                       const struct rdma_ud_param *ud)
{
    struct cm_event *e = event_new(id, &id->id, type, status, pdata, len);

    if (!e)
        return;
    /* The union's UD view: private data where conn's is, then the peer's address handle. */
    e->ev.param.ud.ah_attr = ud->ah_attr;
    e->ev.param.ud.qp_num = ud->qp_num;
    e->ev.param.ud.qkey = ud->qkey;
    channel_push((struct cm_channel *)id->id.channel, e);
}

/* A CONNECT_REQUEST: its id is the new @child; it goes to the listener's channel. */
void cm_queue_request(struct cm_id *listener, struct cm_id *child, const void *pdata, uint32_t len)
{
    struct cm_event *e = event_new(child, &child->id, RDMA_CM_EVENT_CONNECT_REQUEST, 0, pdata, len);

    if (!e)
        return;
    e->ev.listen_id = &listener->id;
    channel_push((struct cm_channel *)listener->id.channel, e);
}

/* Under the channel's lock: the event's id is not destroyed until it is acknowledged. */
static void event_taken(struct nd_evq_node *n)
{
    struct cm_id *owner = (struct cm_id *)n->owner;

    pthread_mutex_lock(&owner->lock);
    owner->events_out++;
    pthread_mutex_unlock(&owner->lock);
}

CM_API int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
    struct nd_evq_node *n;

    if (!channel || !event)
        return cm_fail(EINVAL);
    n = nd_evq_wait(&((struct cm_channel *)channel)->q, event_taken);
    if (!n)
        return -1;                  /* EAGAIN on a non-blocking channel, EINTR */
    *event = &CM_EVENT_OF(n)->ev;
    return 0;
}

CM_API int rdma_ack_cm_event(struct rdma_cm_event *event)
{
    struct cm_event *e = (struct cm_event *)event;
    struct cm_id *owner;

    if (!event)
        return cm_fail(EINVAL);
    owner = (struct cm_id *)e->node.owner;
    pthread_mutex_lock(&owner->lock);
    owner->events_out--;
    pthread_cond_broadcast(&owner->cond);
    pthread_mutex_unlock(&owner->lock);
    free(e);
    return 0;
}

int cm_wait_event(struct cm_id *id, struct rdma_cm_event **ev)
{
    return rdma_get_cm_event(id->id.channel, ev) == 0 ? (int)(*ev)->event : -1;
}

int cm_sync_status(struct cm_id *id)
{
    struct rdma_cm_event *ev;

    if (!id->own_channel)
        return 0;
    if (cm_wait_event(id, &ev) < 0)
        return -1;
    int status = ev->status;

    rdma_ack_cm_event(ev);
    return status ? cm_fail(-status) : 0;
}

/* The local address a connection or datagram to @dst leaves by (the kernel's route choice). */
int cm_route_source(const struct sockaddr *dst, struct sockaddr_storage *src)
{
    socklen_t len = sizeof(*src);
    int fd = socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc;

    if (fd < 0)
        return -1;
    rc = connect(fd, dst, cm_sa_len(dst)) == 0 && getsockname(fd, (struct sockaddr *)src, &len) == 0 ? 0 : -1;
    close(fd);
    if (rc == 0) {
        if (src->ss_family == AF_INET)
            ((struct sockaddr_in *)src)->sin_port = 0;
        else
            ((struct sockaddr_in6 *)src)->sin6_port = 0;
    }
    return rc;
}

/* ---- ids ---- */

struct cm_id *cm_id_new(struct rdma_event_channel *channel, void *context, enum rdma_port_space ps)
{
    struct cm_id *id;

    if (!cm_port()) {
        errno = ENODEV;
        return NULL;
    }
    id = calloc(1, sizeof(*id));
    if (!id) {
        errno = ENOMEM;
        return NULL;
    }
    if (!channel) {
        channel = rdma_create_event_channel();
        if (!channel) {
            free(id);
            return NULL;
        }
        id->own_channel = (struct cm_channel *)channel;
    }
    pthread_mutex_init(&id->lock, NULL);
    pthread_cond_init(&id->cond, NULL);
    for (int k = 0; k < CM_OP_COUNT; k++) {
        id->op[k].id = id;
        id->op[k].kind = (enum cm_op_kind)k;
    }
    id->id.channel = channel;
    id->id.context = context;
    id->id.ps = ps;
    id->id.qp_type = IBV_QPT_RC;
    id->id.port_num = 1;
    id->port_hold = -1;
    id->ud_sock = -1;
    id->ack_timeout = -1;
    return id;
}

void cm_attach_device(struct cm_id *id)
{
    if (id->id.verbs)
        return;
    id->id.verbs = cm_context();
    if (!id->id.pd)
        id->id.pd = cm_default_pd();
}

CM_API int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **out, void *context,
                          enum rdma_port_space ps)
{
    struct cm_id *id;

    if (!out)
        return cm_fail(EINVAL);
    if (ps != RDMA_PS_TCP && ps != RDMA_PS_UDP && ps != RDMA_PS_IPOIB)
        return cm_fail(EOPNOTSUPP);     /* RC and UD: no IB-only port spaces */
    id = cm_id_new(channel, context, ps);
    if (!id)
        return -1;
    if (ps != RDMA_PS_TCP)
        id->id.qp_type = IBV_QPT_UD;
    *out = &id->id;
    return 0;
}

/* Cancel what the core still holds for @id and wait until it is all back. */
static void drain_ops(struct cm_id *id)
{
    nd_connector *conn;

    pthread_mutex_lock(&id->lock);
    conn = id->conn;
    pthread_mutex_unlock(&id->lock);
    if (conn && !id->listener)
        ndc_connector_cancel_overlapped_requests(conn);
    pthread_mutex_lock(&id->lock);
    while (id->ops_out)
        pthread_cond_wait(&id->cond, &id->lock);
    pthread_mutex_unlock(&id->lock);
}

CM_API int rdma_destroy_id(struct rdma_cm_id *cid)
{
    struct cm_id *id = (struct cm_id *)cid;

    if (!cid)
        return cm_fail(EINVAL);
    pthread_mutex_lock(&id->lock);
    id->destroying = true;
    while (id->completing)          /* the CM thread is completing its connection */
        pthread_cond_wait(&id->cond, &id->lock);
    pthread_mutex_unlock(&id->lock);
    drain_ops(id);
    if (id->conn) {
        ndc_connector_close(id->conn);
        id->conn = NULL;
    }
    drain_ops(id);                  /* a close's implicit disconnect */
    if (id->listener)
        ndc_listener_close(id->listener);    /* its request handler has run for the last time */
    /* What the connection side made for the id (its UD exchange, its carrier QP): nothing of
     * it is watched or handled from here on, so no event is queued for the id after this. */
    const struct cm_engine *engine = atomic_load_explicit(&the_engine, memory_order_acquire);

    if (engine)
        engine->forget(id);
    if (id->gate && engine)
        engine->forget_gate(id);
    if (id->port_hold >= 0)
        close(id->port_hold);
    /* No request of the id is out any more: nothing queues an event for it now. Events
     * not yet delivered are dropped (rdma-core's kernel drops them too); delivered ones
     * are waited for until acknowledged. */
    nd_evq_forget(&((struct cm_channel *)cid->channel)->q, id, event_free);
    pthread_mutex_lock(&id->lock);
    while (id->events_out)
        pthread_cond_wait(&id->cond, &id->lock);
    pthread_mutex_unlock(&id->lock);
    if (id->ext_qp)
        ndv_qp_release(id->ext_qp);
    if (id->own_channel)
        rdma_destroy_event_channel(&id->own_channel->ch);
    pthread_cond_destroy(&id->cond);
    pthread_mutex_destroy(&id->lock);
    free(id);
    return 0;
}

CM_API int rdma_migrate_id(struct rdma_cm_id *cid, struct rdma_event_channel *channel)
{
    struct cm_id *id = (struct cm_id *)cid;
    struct cm_channel *old;

    if (!cid)
        return cm_fail(EINVAL);
    pthread_mutex_lock(&id->lock);
    /* Events already queued stay where they are; they are acknowledged as before. */
    while (id->events_out)
        pthread_cond_wait(&id->cond, &id->lock);
    old = id->own_channel;
    if (channel) {
        cid->channel = channel;
        id->own_channel = NULL;
    } else if (!old) {
        struct rdma_event_channel *ch = rdma_create_event_channel();

        if (!ch) {
            pthread_mutex_unlock(&id->lock);
            return -1;
        }
        cid->channel = ch;
        id->own_channel = (struct cm_channel *)ch;
        old = NULL;
    }
    pthread_mutex_unlock(&id->lock);
    if (channel && old)
        rdma_destroy_event_channel(&old->ch);
    return 0;
}

CM_API const char *rdma_event_str(enum rdma_cm_event_type event)
{
    static const char *const names[] = {
        "RDMA_CM_EVENT_ADDR_RESOLVED", "RDMA_CM_EVENT_ADDR_ERROR", "RDMA_CM_EVENT_ROUTE_RESOLVED",
        "RDMA_CM_EVENT_ROUTE_ERROR", "RDMA_CM_EVENT_CONNECT_REQUEST", "RDMA_CM_EVENT_CONNECT_RESPONSE",
        "RDMA_CM_EVENT_CONNECT_ERROR", "RDMA_CM_EVENT_UNREACHABLE", "RDMA_CM_EVENT_REJECTED",
        "RDMA_CM_EVENT_ESTABLISHED", "RDMA_CM_EVENT_DISCONNECTED", "RDMA_CM_EVENT_DEVICE_REMOVAL",
        "RDMA_CM_EVENT_MULTICAST_JOIN", "RDMA_CM_EVENT_MULTICAST_ERROR", "RDMA_CM_EVENT_ADDR_CHANGE",
        "RDMA_CM_EVENT_TIMEWAIT_EXIT",
    };

    return (unsigned)event < sizeof(names) / sizeof(names[0]) ? names[event] : "UNKNOWN EVENT";
}

CM_API struct ibv_context **rdma_get_devices(int *num_devices)
{
    struct ibv_context **list = calloc(2, sizeof(*list));

    if (!list) {
        errno = ENOMEM;
        return NULL;
    }
    list[0] = cm_context();
    if (num_devices)
        *num_devices = list[0] ? 1 : 0;
    return list;
}

CM_API void rdma_free_devices(struct ibv_context **list)
{
    free(list);
}
