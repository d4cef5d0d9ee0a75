// SPDX-License-Identifier: MIT
/*
 * QPs connected by the application's own exchange: ibv_modify_qp to RTR with an address
 * vector (ibv_rc_pingpong, perftest without -R, UCX). The core connects QPs through its
 * CM, so each such QP is reachable as an endpoint of it:
 *
 * - A context listens on the wildcard address at ports it reserved; a QP's number is one
 *   such port << 8 | a slot of that listener. A peer that learned (GID, QP number) knows
 *   where to dial.
 * - Of two QPs moved to RTR towards each other, the one with the lower (QP number, GID)
 *   dials; the other accepts the request that names it. A request that arrives before its
 *   QP is at RTR waits (parked) until it is.
 * - RTR and RTS never wait for the peer (each side may move its QP before the peer has even
 *   learned its number). Sends posted before the connection is up are copied and held;
 *   they go to the core, in order, the moment it is. Held sends that wait longer than the
 *   retry time the QP was given (at least AV_HOLD_FLOOR_NS) fail the QP: everything
 *   outstanding completes IBV_WC_WR_FLUSH_ERR. Receives go to the core at once (it keeps
 *   them for the connection).
 *
 * The context's event thread runs every step after RTR (its port carries the listeners'
 * and connectors' requests), so a program asleep elsewhere still gets connected.
 */
#include "post.h"
#include "core/log.h"
#include "core/qp_int.h"
#include "ndv.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define AV_HELLO_MAGIC 0x4e444156u  /* "NDAV" */
#define AV_HOLD_FLOOR_NS (5ull * 1000000000ull)

/* The private data of an AV connection request (network order). */
struct av_hello {
    uint32_t magic;
    uint32_t dst_qpn;
    uint32_t src_qpn;
};

enum av_step { AVL_REQUEST, AVL_CONNECT, AVL_COMPLETE, AVL_ACCEPT, AVL_UP };

/* One connector and its request on the context's port. It outlives its QP while the
 * core still holds a request of it (the event thread frees it then). */
struct av_link {
    struct vb_work work;            /* first: the port hands back its address */
    struct vb_context *c;
    struct vb_qp *q;                /* NULL once the QP is destroyed (av_lock) */
    nd_connector *conn;
    enum av_step step;
    bool pending;                   /* a request is with the core (av_lock) */
    struct av_link *next_orphan;
};

static void av_done(struct vb_work *w, int st);

struct av_listener {
    struct vb_context *c;
    nd_listener *l;
    uint16_t port;
    uint32_t used;
    struct vb_qp *slot[VB_AV_SLOTS];
};

/* A send posted before the connection is up, with its own copy of the SGEs (and of the
 * bytes, for inline data); or a type 1 bind (ibv_bind_mw), its window and key chosen. */
struct av_held {
    struct av_held *next;
    struct ibv_send_wr wr;
    bool bind1;
    uint8_t key;
    uint32_t flags;                 /* a bind's, as the core takes them */
    struct ibv_sge sge[];
};

/* A link around connector @conn, or a new one (@conn NULL). */
static struct av_link *link_new(struct vb_context *c, struct vb_qp *q, enum av_step step, nd_connector *conn)
{
    struct av_link *k = calloc(1, sizeof(*k));

    if (!k)
        return NULL;
    k->conn = conn;
    if (!conn && ndc_adapter_create_connector(c->adapter, c->port, &k->conn) != 0) {
        free(k);
        return NULL;
    }
    k->c = c;
    k->q = q;
    k->step = step;
    k->work.done = av_done;
    return k;
}

static void link_free(struct av_link *k)
{
    if (k->conn)
        ndc_connector_close(k->conn);
    free(k);
}

/* The core took (-EINPROGRESS) or finished a request of @k (av_lock held). */
static bool link_started(struct av_link *k, int st)
{
    if (st == -EINPROGRESS) {
        k->pending = true;
        return true;
    }
    return false;
}

static void requests_in(void *ctx);

static struct av_listener *listener_new(struct vb_context *c)
{
    struct av_listener *ls = calloc(1, sizeof(*ls));
    struct sockaddr_in any = { .sin_family = AF_INET };
    struct sockaddr_storage got;
    uint32_t len = sizeof(got);

    if (!ls)
        return NULL;
    if (ndc_adapter_create_listener(c->adapter, c->port, &ls->l) != 0) {
        free(ls);
        return NULL;
    }
    ls->c = c;
    ndc_listener_notify_requests(ls->l, requests_in, ls);
    if (ndc_listener_bind(ls->l, (struct sockaddr *)&any, sizeof(any)) != 0 ||
        ndc_listener_listen(ls->l, 0) != 0 ||
        ndc_listener_get_local_address(ls->l, (struct sockaddr *)&got, &len) != 0) {
        ndc_listener_close(ls->l);
        free(ls);
        return NULL;
    }
    ls->port = ntohs(((struct sockaddr_in *)&got)->sin_port);
    return ls;
}

/* A QP number for @q: a free slot of one of the context's listeners. 0 when none can be
 * had (the QP then cannot be connected with an address vector). */
uint32_t vb_av_attach(struct vb_context *c, struct vb_qp *q)
{
    uint32_t qpn = 0;

    pthread_mutex_lock(&c->av_lock);
    for (uint32_t i = 0; i <= c->av_nlisteners && !qpn; i++) {
        struct av_listener *ls;

        if (i == c->av_nlisteners) {
            if (i == VB_AV_LISTENERS || !(ls = listener_new(c)))
                break;
            c->av_listeners[c->av_nlisteners++] = ls;
        }
        ls = c->av_listeners[i];
        if (ls->used == VB_AV_SLOTS)
            continue;
        for (uint32_t s = 0; s < VB_AV_SLOTS; s++)
            if (!ls->slot[s]) {
                ls->slot[s] = q;
                ls->used++;
                q->av.listener = ls;
                q->av.slot = s;
                qpn = (uint32_t)ls->port << 8 | s;
                break;
            }
    }
    pthread_mutex_unlock(&c->av_lock);
    return qpn;
}

static void hold_free_all(struct vb_qp *q)
{
    if (q->av.deadline_ns) {
        __atomic_sub_fetch(&vb_ctx(q->qp.context)->av_deadlines, 1, __ATOMIC_RELAXED);
        q->av.deadline_ns = 0;
    }
    while (q->av.held) {
        struct av_held *h = q->av.held;

        q->av.held = h->next;
        free(h);
    }
    q->av.held_tail = &q->av.held;
    q->av.nheld = 0;
}

/* A held request the connection refuses (immediate data towards a peer that cannot carry
 * it; a bind the region no longer allows) completes with an error in its place, and the QP
 * goes to ERR: the application waits for every request it posted. */
static void post_held(struct vb_qp *q, struct av_held *h)
{
    struct ibv_send_wr *bad;
    nd_request_type type = vb_request_type(h->wr.opcode);
    int err = h->bind1 ? vb_post_bind1(&q->qp, h->wr.bind_mw.mw, &h->wr.bind_mw.bind_info, h->wr.wr_id, h->flags,
                                       h->key)
                       : vb_post_send_now(&q->qp, &h->wr, &bad);

    if (!err)
        return;
    nd_log(ND_LOG_INFO, ND_SUB_VERBS, "verbs: QP %u: a held request was refused (%d): it fails the QP",
           q->qp.qp_num, err);
    if (nd_qp_post_refused(q->core, (void *)(uintptr_t)h->wr.wr_id, type,
                           h->bind1 ? h->flags : (uint32_t)vb_send_flags_of(q, h->wr.send_flags),
                           type == ND_REQUEST_TYPE_BIND ? -EFAULT : -EOPNOTSUPP) == 0)
        __atomic_store_n(&q->qp.state, IBV_QPS_ERR, __ATOMIC_RELEASE);
    else
        nd_log(ND_LOG_WARN, ND_SUB_VERBS, "verbs: QP %u: a refused request could not complete", q->qp.qp_num);
}

/* The connection is up, or will never be (@failed): the held sends go to the core in their
 * order, then posts go straight there (av_lock held). On a failed QP the core completes
 * each with a flush. */
static void release_held(struct vb_qp *q, bool failed)
{
    if (failed && nd_qp_get_state(q->core) == ND_QPS_RTR) {
        q->av.failed_in_rtr = true;
    } else if (failed) {
        vb_qp_enter_err(q);
    }
    for (struct av_held *h = q->av.held; h; h = h->next) {
        h->wr.next = NULL;
        post_held(q, h);
    }
    hold_free_all(q);
    __atomic_store_n(&q->av.hold, false, __ATOMIC_RELEASE);
}

static void link_orphan(struct vb_context *c, struct av_link *k)
{
    k->q = NULL;
    if (k->pending) {
        ndc_connector_cancel_overlapped_requests(k->conn);
        k->next_orphan = c->av_orphans;
        c->av_orphans = k;
        return;
    }
    link_free(k);
}

static void qp_failed(struct vb_qp *q, int why)
{
    nd_log(ND_LOG_INFO, ND_SUB_VERBS, "verbs: QP %u: no connection to QP %u (%s)", q->qp.qp_num, q->av.dest_qpn,
           nd_err_name(why));
    release_held(q, true);
}

static void accept_request(struct vb_qp *q, struct av_link *k)
{
    int st;

    q->av.link = k;
    k->q = q;
    k->step = AVL_ACCEPT;
    st = ndc_connector_accept(k->conn, q->core, q->av.ird, q->av.ord, NULL, 0, &k->work.ov);
    if (!link_started(k, st) && st != 0)
        qp_failed(q, st);
    else if (st == 0)
        release_held(q, false);
}

static void reject_link(struct av_link *k)
{
    ndc_connector_reject(k->conn, NULL, 0);
    link_free(k);
}

/* A request arrived on @ls, in @k (av_lock held). */
static void handle_request(struct av_listener *ls, struct av_link *k)
{
    struct av_hello h;
    uint32_t len = sizeof(h);
    struct vb_qp *q = NULL;
    uint32_t dst;

    if (ndc_connector_get_private_data(k->conn, &h, &len) != 0 || len != sizeof(h) ||
        ntohl(h.magic) != AV_HELLO_MAGIC) {
        reject_link(k);
        return;
    }
    dst = ntohl(h.dst_qpn);
    if (dst >> 8 == ls->port && (dst & 0xff) < VB_AV_SLOTS)
        q = ls->slot[dst & 0xff];
    if (!q || (q->av.on && q->av.dest_qpn != ntohl(h.src_qpn))) {
        reject_link(k);
        return;
    }
    /* Before our RTR, or from our peer once this connection is under way or over: the peer
     * restated its QP (RESET, then RTR again), which a QP does once its connection failed,
     * so ours will too. Either way the request waits for our next RTR. */
    if (!q->av.on || q->av.link || q->av.dialer || nd_qp_get_state(q->core) == ND_QPS_ERR) {
        /* A later request for the same QP replaces it. */
        if (q->av.parked)
            reject_link(q->av.parked);
        q->av.parked = k;
        q->av.parked_src = ntohl(h.src_qpn);
        return;
    }
    accept_request(q, k);
}

/* The core queued requests on @ctx's listener: on the event thread, which serves the port
 * (the listener is closed only once that thread has stopped). */
static void requests_in(void *ctx)
{
    struct av_listener *ls = ctx;
    struct vb_context *c = ls->c;
    nd_connector *conn;

    pthread_mutex_lock(&c->av_lock);
    while (!c->av_closing && ndc_listener_take_request(ls->l, &conn) == 0) {
        struct av_link *k = link_new(c, NULL, AVL_REQUEST, conn);

        if (k) {
            handle_request(ls, k);
        } else {
            ndc_connector_reject(conn, NULL, 0);
            ndc_connector_close(conn);
        }
    }
    pthread_mutex_unlock(&c->av_lock);
}

/* The event thread: a request of the AV machinery completed. */
static void av_done(struct vb_work *w, int st)
{
    struct av_link *k = vb_container_of(w, struct av_link, work);
    struct vb_context *c = k->c;
    struct vb_qp *q;

    pthread_mutex_lock(&c->av_lock);
    k->pending = false;
    q = k->q;
    if (!q) {
        /* Its QP is gone: unlink from the orphans and free. */
        for (struct av_link **p = &c->av_orphans; *p; p = &(*p)->next_orphan)
            if (*p == k) {
                *p = k->next_orphan;
                break;
            }
        link_free(k);
    } else if (st != 0) {
        qp_failed(q, st);
    } else if (k->step == AVL_CONNECT) {
        k->step = AVL_COMPLETE;
        st = ndc_connector_complete_connect(k->conn, &k->work.ov);
        if (st == 0)
            release_held(q, false);
        else if (!link_started(k, st))
            qp_failed(q, st);
    } else {
        k->step = AVL_UP;
        release_held(q, false);
    }
    pthread_mutex_unlock(&c->av_lock);
}

/* The local and the peer's address of an address vector; EINVAL unless both are IPv4
 * GIDs (IPv4-mapped, RoCE v2), as this device's are. */
static int av_addresses(const struct ibv_qp_attr *attr, struct sockaddr_in *local, struct sockaddr_in *peer)
{
    static const uint8_t v4map[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
    const struct ibv_global_route *g = &attr->ah_attr.grh;
    struct vb_gid gids[VB_GID_MAX];
    uint32_t n = vb_gids(gids, VB_GID_MAX);

    if (!attr->ah_attr.is_global || g->sgid_index >= n || !gids[g->sgid_index].ipv4 ||
        memcmp(g->dgid.raw, v4map, sizeof(v4map)) != 0)
        return EINVAL;
    memset(local, 0, sizeof(*local));
    memset(peer, 0, sizeof(*peer));
    local->sin_family = peer->sin_family = AF_INET;
    memcpy(&local->sin_addr, &gids[g->sgid_index].gid.raw[12], 4);
    memcpy(&peer->sin_addr, &g->dgid.raw[12], 4);
    peer->sin_port = htons((uint16_t)(attr->dest_qp_num >> 8));
    return 0;
}

static int start_dial(struct vb_context *c, struct vb_qp *q, const struct sockaddr_in *local,
                      const struct sockaddr_in *peer)
{
    struct av_hello h = { htonl(AV_HELLO_MAGIC), htonl(q->av.dest_qpn), htonl(q->qp.qp_num) };
    struct av_link *k = link_new(c, q, AVL_CONNECT, NULL);
    int st;

    if (!k)
        return ENOMEM;
    st = ndc_connector_bind(k->conn, (const struct sockaddr *)local, sizeof(*local));
    if (st == 0)
        st = ndc_connector_connect(k->conn, q->core, (const struct sockaddr *)peer, sizeof(*peer), q->av.ird,
                                  q->av.ord, &h, sizeof(h), &k->work.ov);
    if (!link_started(k, st)) {
        link_free(k);
        return nd_errno_of(st);
    }
    q->av.link = k;
    return 0;
}

/* ibv_modify_qp to RTR with IBV_QP_AV: decide who dials, and start. */
int vb_av_check(const struct vb_qp *q, const struct ibv_qp_attr *attr, int mask)
{
    struct sockaddr_in local, peer;

    if (!(mask & IBV_QP_DEST_QPN) || !q->av.listener)
        return EINVAL;
    return av_addresses(attr, &local, &peer);
}

int vb_av_rtr(struct vb_qp *q, const struct ibv_qp_attr *attr, int mask)
{
    struct vb_context *c = vb_ctx(q->qp.context);
    struct sockaddr_in local, peer;
    int err;

    if ((err = vb_av_check(q, attr, mask)) != 0)
        return err;
    av_addresses(attr, &local, &peer);
    __atomic_store_n(&c->event_tick, vb_av_tick, __ATOMIC_RELEASE);
    err = vb_event_thread_start(c);
    if (err)
        return err;
    pthread_mutex_lock(&c->av_lock);
    if (q->av.on) {
        pthread_mutex_unlock(&c->av_lock);
        return EINVAL;
    }
    q->av.dest_qpn = attr->dest_qp_num;
    q->av.ah = attr->ah_attr;
    q->av.ird = (mask & IBV_QP_MAX_DEST_RD_ATOMIC) ? attr->max_dest_rd_atomic : 1;
    if (q->av.ird > nd_caps.max_ird)
        q->av.ird = nd_caps.max_ird;
    /* The RTS step gives max_rd_atomic, after the connection may be under way: offer the
     * device's, which the peer's RTR limit clamps. */
    q->av.ord = nd_caps.max_ord;
    q->av.dialer = q->qp.qp_num != attr->dest_qp_num ? q->qp.qp_num < attr->dest_qp_num
                   : memcmp(&local.sin_addr, &peer.sin_addr, 4) < 0;
    q->av.on = true;
    /* The peer's QP may go without a word (destroyed, its process gone): as on an RC
     * fabric, ours stays as it is and keeps its receives until a send of its own fails. */
    nd_qp_keep_receives(q->core);
    __atomic_store_n(&q->av.hold, true, __ATOMIC_RELEASE);
    if (q->av.dialer) {
        err = start_dial(c, q, &local, &peer);
        if (err && err != ENOMEM) {
            /* Unreachable (refused, no route): RTR itself succeeds, as on a fabric; the
             * sends fail instead, the held ones now. */
            qp_failed(q, -ECONNREFUSED);
            err = 0;
        }
    } else if (q->av.parked) {
        struct av_link *k = q->av.parked;

        q->av.parked = NULL;
        if (q->av.parked_src == q->av.dest_qpn)
            accept_request(q, k);
        else
            reject_link(k);
    }
    if (err) {
        q->av.on = false;
        __atomic_store_n(&q->av.hold, false, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&c->av_lock);
    return err;
}

/* ibv_modify_qp to RTS, the core's QP there already: the retry budget of held sends
 * (IBV_QP_TIMEOUT, IBV_QP_RETRY_CNT; timeout 0 waits forever, as it retries forever on
 * InfiniBand). A connection that failed in RTR fails the QP now. */
void vb_av_rts(struct vb_qp *q, const struct ibv_qp_attr *attr, int mask)
{
    uint64_t t = (mask & IBV_QP_TIMEOUT) ? attr->timeout : 14;
    uint64_t tries = ((mask & IBV_QP_RETRY_CNT) ? attr->retry_cnt : 7) + 1;
    uint64_t ns = t >= 32 ? UINT64_MAX / 4 : 4096ull << t;

    q->av.timeout = (uint8_t)t;
    q->av.retry_cnt = (uint8_t)(tries - 1);
    if (!(mask & IBV_QP_RNR_RETRY))
        ndv_qp_rnr_retry(&q->qp, 7);    /* ibv_modify_qp set it otherwise */

    q->av.retry_ns = t == 0 ? 0 : ns * tries < AV_HOLD_FLOOR_NS ? AV_HOLD_FLOOR_NS : ns * tries;
    pthread_mutex_lock(&vb_ctx(q->qp.context)->av_lock);
    if (q->av.failed_in_rtr) {
        q->av.failed_in_rtr = false;
        vb_qp_enter_err(q);
    }
    pthread_mutex_unlock(&vb_ctx(q->qp.context)->av_lock);
}

static struct av_held *held_copy(const struct ibv_send_wr *wr)
{
    size_t n = wr->num_sge > 0 ? (size_t)wr->num_sge : 0, bytes = 0;
    struct av_held *h;
    uint8_t *data;

    if (wr->send_flags & IBV_SEND_INLINE)
        for (size_t i = 0; i < n; i++)
            bytes += wr->sg_list[i].length;
    h = malloc(sizeof(*h) + n * sizeof(struct ibv_sge) + bytes);
    if (!h)
        return NULL;
    h->next = NULL;
    h->bind1 = false;
    h->wr = *wr;
    h->wr.sg_list = h->sge;
    if (n)
        memcpy(h->sge, wr->sg_list, n * sizeof(struct ibv_sge));   /* a request of no SGEs may name none */
    data = (uint8_t *)&h->sge[n];
    if (wr->send_flags & IBV_SEND_INLINE)
        for (size_t i = 0; i < n; i++) {
            memcpy(data, (const void *)(uintptr_t)wr->sg_list[i].addr, wr->sg_list[i].length);
            h->sge[i].addr = (uintptr_t)data;
            data += wr->sg_list[i].length;
        }
    return h;
}

/* Append @h to the QP's held requests; true if the event thread must learn of a new
 * deadline (av_lock held). */
static bool hold(struct vb_context *c, struct vb_qp *q, struct av_held *h)
{
    *q->av.held_tail = h;
    q->av.held_tail = &h->next;
    q->av.nheld++;
    if (q->av.deadline_ns || !q->av.retry_ns)
        return false;
    q->av.deadline_ns = nd_now_ns() + q->av.retry_ns;
    __atomic_add_fetch(&c->av_deadlines, 1, __ATOMIC_RELAXED);
    return true;
}

/* The event thread looks at the held sends' deadlines again (av.c's tick). */
static void av_kick(struct vb_context *c)
{
    __atomic_store_n(&c->event_tick, vb_av_tick, __ATOMIC_RELEASE);
    vb_event_thread_kick(c);
}

/* ibv_post_send on a QP whose connection is not up yet: hold copies (or post, if it came
 * up meanwhile). Each is checked as the post would check it. */
int vb_av_post_send(struct vb_qp *q, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
    struct vb_context *c = vb_ctx(q->qp.context);
    bool kick = false;
    int err = 0;

    if (__atomic_load_n(&q->cm_attaching, __ATOMIC_ACQUIRE)) {
        vb_wait_cm_attach(q);
        return vb_post_send_now(&q->qp, wr, bad);
    }
    pthread_mutex_lock(&c->av_lock);
    if (!__atomic_load_n(&q->av.hold, __ATOMIC_ACQUIRE)) {
        pthread_mutex_unlock(&c->av_lock);
        return vb_post_send_now(&q->qp, wr, bad);
    }
    if (nd_qp_get_state(q->core) != ND_QPS_RTS) {
        *bad = wr;
        pthread_mutex_unlock(&c->av_lock);
        return EINVAL;
    }
    for (; wr; wr = wr->next) {
        struct av_held *h;

        if ((err = vb_send_wr_check(q, wr)) != 0)
            break;
        if (q->av.nheld >= q->cap.max_send_wr || !(h = held_copy(wr))) {
            err = ENOMEM;
            break;
        }
        kick |= hold(c, q, h);
    }
    if (err)
        *bad = wr;
    pthread_mutex_unlock(&c->av_lock);
    if (kick)
        av_kick(c);
    return err;
}


int vb_av_hold_bind1(struct vb_qp *q, struct ibv_mw *mw, const struct ibv_mw_bind *bind, uint32_t flags,
                     uint8_t key)
{
    struct vb_context *c = vb_ctx(q->qp.context);
    struct av_held *h;
    bool kick;

    if (__atomic_load_n(&q->cm_attaching, __ATOMIC_ACQUIRE)) {
        vb_wait_cm_attach(q);
        return vb_post_bind1(&q->qp, mw, &bind->bind_info, bind->wr_id, flags, key);
    }
    pthread_mutex_lock(&c->av_lock);
    if (!__atomic_load_n(&q->av.hold, __ATOMIC_ACQUIRE)) {
        pthread_mutex_unlock(&c->av_lock);
        return vb_post_bind1(&q->qp, mw, &bind->bind_info, bind->wr_id, flags, key);
    }
    if (nd_qp_get_state(q->core) != ND_QPS_RTS || q->av.nheld >= q->cap.max_send_wr ||
        !(h = calloc(1, sizeof(*h)))) {
        int err = nd_qp_get_state(q->core) != ND_QPS_RTS ? EINVAL : ENOMEM;

        pthread_mutex_unlock(&c->av_lock);
        return err;
    }
    h->bind1 = true;
    h->key = key;
    h->flags = flags;
    h->wr = (struct ibv_send_wr){ .wr_id = bind->wr_id, .opcode = IBV_WR_BIND_MW,
                                  .bind_mw = { .mw = mw, .bind_info = bind->bind_info } };
    kick = hold(c, q, h);
    pthread_mutex_unlock(&c->av_lock);
    if (kick)
        av_kick(c);
    return 0;
}

/* The event thread, between requests: fail the QPs whose held sends waited too long.
 * Returns how long it may wait before it looks again, in ms (-1: until a request). */
int vb_av_tick(struct vb_context *c)
{
    uint64_t now, next = UINT64_MAX;

    if (!__atomic_load_n(&c->av_deadlines, __ATOMIC_RELAXED))
        return -1;
    now = nd_now_ns();
    pthread_mutex_lock(&c->av_lock);
    for (uint32_t i = 0; i < c->av_nlisteners; i++)
        for (uint32_t s = 0; s < VB_AV_SLOTS; s++) {
            struct vb_qp *q = c->av_listeners[i]->slot[s];

            if (!q || !q->av.deadline_ns)
                continue;
            if (q->av.deadline_ns <= now)
                qp_failed(q, -ETIMEDOUT);
            else if (q->av.deadline_ns < next)
                next = q->av.deadline_ns;
        }
    pthread_mutex_unlock(&c->av_lock);
    return next == UINT64_MAX ? -1 : (int)((next - now) / 1000000 + 1);
}

/* ibv_modify_qp to RESET (qp.c's qp_renew): the QP is as before its RTR, its number and
 * slot kept. Its connector closes; held requests are discarded, as RESET discards work. A
 * request parked for it waits on for its next RTR. */
void vb_av_reset(struct vb_qp *q)
{
    struct vb_context *c = vb_ctx(q->qp.context);

    pthread_mutex_lock(&c->av_lock);
    if (q->av.link)
        link_orphan(c, q->av.link);
    q->av.link = NULL;
    hold_free_all(q);
    q->av.on = q->av.dialer = q->av.failed_in_rtr = false;
    __atomic_store_n(&q->av.hold, false, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&c->av_lock);
}

/* ibv_destroy_qp: the QP leaves its slot; its connector closes (a connected one
 * disconnects, which flushes the peer's QP). */
void vb_av_detach(struct vb_qp *q)
{
    struct vb_context *c = vb_ctx(q->qp.context);
    struct av_listener *ls = q->av.listener;

    if (!ls)
        return;
    pthread_mutex_lock(&c->av_lock);
    ls->slot[q->av.slot] = NULL;
    ls->used--;
    q->av.listener = NULL;
    if (q->av.link)
        link_orphan(c, q->av.link);
    if (q->av.parked)
        reject_link(q->av.parked);
    q->av.link = q->av.parked = NULL;
    hold_free_all(q);
    __atomic_store_n(&q->av.hold, false, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&c->av_lock);
}

/*
 * The QP numbered @qpn of context @c, held for the CM (ndv_qp_find): an application-managed
 * QP named by rdma_conn_param's qp_num. The slot is read under av_lock, which
 * ibv_destroy_qp's vb_av_detach takes too, so a QP found is not yet destroyed.
 */
struct vb_qp *vb_av_find(struct vb_context *c, uint32_t qpn)
{
    struct vb_qp *q = NULL;

    pthread_mutex_lock(&c->av_lock);
    for (uint32_t i = 0; i < c->av_nlisteners && !q; i++)
        if (c->av_listeners[i]->port == qpn >> 8 && (qpn & 0xff) < VB_AV_SLOTS)
            q = c->av_listeners[i]->slot[qpn & 0xff];
    if (q)
        __atomic_add_fetch(&q->grave_refs, 1, __ATOMIC_ACQ_REL);
    pthread_mutex_unlock(&c->av_lock);
    return q;
}

/* ibv_close_device, after the event thread stopped: every QP is gone. */
void vb_av_close(struct vb_context *c)
{
    pthread_mutex_lock(&c->av_lock);
    c->av_closing = true;
    for (uint32_t i = 0; i < c->av_nlisteners; i++) {
        struct av_listener *ls = c->av_listeners[i];

        ndc_listener_close(ls->l);   /* the requests still queued are refused */
        free(ls);
    }
    c->av_nlisteners = 0;
    while (c->av_orphans) {
        struct av_link *k = c->av_orphans;

        c->av_orphans = k->next_orphan;
        link_free(k);
    }
    pthread_mutex_unlock(&c->av_lock);
}
