// SPDX-License-Identifier: MIT
/*
 * Reliable connected queue pairs over the core's. A QP is connected by the CM (librdmacm,
 * through the private entry points at the end): the library moves it through INIT, RTR
 * and RTS as the connection is made, and to ERR when it ends. Or the application connects
 * it by moving it to RTR with an address vector (the rc_pingpong way): av.c.
 *
 * Work requests map one to one: ibv_sge has nd_sge's layout, wr_id is the request
 * context, and a send request without IBV_SEND_SIGNALED on a QP without sq_sig_all is a
 * silent success (its failure still completes, as verbs wants).
 */
#include "post.h"
#include "ndv.h"
#include "core/qp_int.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(struct ibv_sge) == sizeof(nd_sge) && offsetof(struct ibv_sge, length) ==
               offsetof(nd_sge, buffer_length) && offsetof(struct ibv_sge, lkey) ==
               offsetof(nd_sge, memory_region_token), "ibv_sge is nd_sge");

/* The core names its states as verbs does, in verbs' order. */
_Static_assert(ND_QPS_RESET == (int)IBV_QPS_RESET && ND_QPS_INIT == (int)IBV_QPS_INIT &&
               ND_QPS_RTR == (int)IBV_QPS_RTR && ND_QPS_RTS == (int)IBV_QPS_RTS && ND_QPS_SQD == (int)IBV_QPS_SQD &&
               ND_QPS_SQE == (int)IBV_QPS_SQE && ND_QPS_ERR == (int)IBV_QPS_ERR, "core QP states are verbs'");

static uint32_t next_qp_num = 0x100;   /* atomic */

/* The core's QP of an RC QP with @q's CQs, SRQ, sizes and protection domain, in RESET. */
static int core_qp_new(struct vb_qp *q, struct vb_context *c, struct nd_qp_sizes *sz, nd_qp **out)
{
    struct ibv_qp *qp = &q->qp;
    int st = nd_qp_create(c->adapter, to_vb_cq(qp->recv_cq)->core, to_vb_cq(qp->send_cq)->core,
                          qp->srq ? vb_srq_core(qp->srq) : NULL, qp, sz, ND_QPS_RESET, out);

    if (st)
        return st;
    nd_qp_set_pd(*out, vb_pd_id(qp->pd));
    /* An RNIC checks a receive's key when a message comes for it (the receive then fails
     * with a local protection error, the sender with a remote operation error). */
    nd_qp_check_receives_late(*out);
    /* On an InfiniBand-style device the peer's going leaves the QP as it is, receives
     * posted, until the application's own disconnect (librdmacm's rule) or a send of its
     * own fails; an RNIC's connection end flushes them (siw). From creation: the peer may
     * disconnect before the CM has marked the connection established. */
    if (c->dev->personality == VB_ROCE)
        nd_qp_keep_receives(*out);
    return 0;
}

/*
 * RESET of an RC QP that has left INIT: the core never connects a QP twice, so it gets a
 * new core QP in place, with its number, its address-vector slot and its CQs, as an RNIC's
 * QP is reusable after RESET (rdma-core's tests restate a QP from ERR so). RESET discards
 * the QP's work: what the old one still held is dropped, its flushes too (as rdma-core's
 * providers clean the CQ of a QP moved to RESET); its connection, if any, ends.
 */
static int qp_renew(struct vb_qp *q)
{
    struct ibv_qp *qp = &q->qp;
    struct nd_qp_sizes sz = { qp->srq ? 0 : q->cap.max_recv_wr, q->cap.max_send_wr, qp->srq ? 0 : q->cap.max_recv_sge,
                              q->cap.max_send_sge, q->cap.max_inline_data };
    nd_qp *fresh, *old = q->core;
    bool atomics = nd_qp_remote_atomic(old);
    int st = core_qp_new(q, vb_ctx(qp->context), &sz, &fresh);

    if (st)
        return nd_errno_of(st);
    nd_qp_set_remote_atomic(fresh, atomics);
    vb_av_reset(q);
    q->core = fresh;
    ndv_qp_rnr_retry(qp, q->av.rnr_retry);
    ndc_qp_close(old);
    nd_cq_forget(to_vb_cq(qp->send_cq)->core, qp);
    if (qp->recv_cq != qp->send_cq)
        nd_cq_forget(to_vb_cq(qp->recv_cq)->core, qp);
    __atomic_store_n(&qp->state, IBV_QPS_RESET, __ATOMIC_RELEASE);
    return 0;
}

VB_API struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
    struct vb_qp *q;
    struct vb_context *c;
    struct ibv_qp_cap cap;
    int st;

    if (!pd || !attr || !attr->send_cq || !attr->recv_cq) {
        errno = EINVAL;
        return NULL;
    }
    if (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UD) {
        errno = EOPNOTSUPP;         /* RC and UD */
        return NULL;
    }
    if (attr->srq && attr->srq->context != pd->context) {
        errno = EINVAL;
        return NULL;
    }
    cap = attr->cap;
    /* A side that only sends or only receives may ask for no room for the other (qperf's
     * bandwidth tests do): it gets the least the core makes. */
    if (!cap.max_send_wr)
        cap.max_send_wr = 1;
    if (!cap.max_recv_wr)
        cap.max_recv_wr = 1;
    if (!cap.max_send_sge)
        cap.max_send_sge = 1;
    if (!cap.max_recv_sge)
        cap.max_recv_sge = 1;
    if (attr->srq)
        cap.max_recv_wr = cap.max_recv_sge = 0;     /* its receives are the SRQ's */
    struct nd_qp_sizes sz = { cap.max_recv_wr, cap.max_send_wr, cap.max_recv_sge, cap.max_send_sge,
                              cap.max_inline_data };
    if (nd_qp_limit_exceeded(&sz, attr->srq != NULL) != ND_QPL_OK) {
        errno = EINVAL;
        return NULL;
    }
    /* The device's inline room whatever was asked, as rdma-core's providers grant theirs
     * (siw its maximum): programs post inline data having asked for none (rdma_xclient). */
    cap.max_inline_data = sz.inline_size = nd_caps.max_inline;
    c = vb_ctx(pd->context);
    q = calloc(1, sizeof(*q));
    if (!q) {
        errno = ENOMEM;
        return NULL;
    }
    q->qp.context = pd->context;
    q->qp.qp_context = attr->qp_context;
    q->qp.pd = pd;
    q->qp.send_cq = attr->send_cq;
    q->qp.recv_cq = attr->recv_cq;
    q->qp.srq = attr->srq;
    if (attr->qp_type == IBV_QPT_UD)
        st = vb_ud_create(c, q, attr, &sz);
    else
        st = core_qp_new(q, c, &sz, &q->core);
    if (st) {
        free(q);
        errno = nd_errno_of(st);
        return NULL;
    }
    if (q->ud)
        nd_qp_set_pd(q->core, vb_pd_id(pd));
    q->av.held_tail = &q->av.held;
    pthread_mutex_init(&q->qp.mutex, NULL);
    pthread_cond_init(&q->qp.cond, NULL);
    /* A number that says where the QP can be dialled (av.c); a counter, below every such
     * number, when no listener can be had. */
    if (!q->ud) {
        q->qp.qp_num = vb_av_attach(c, q);
        while (!q->qp.qp_num || ND_DGRAM_IS_QPN(q->qp.qp_num))
            q->qp.qp_num = __atomic_fetch_add(&next_qp_num, 1, __ATOMIC_RELAXED);
    }
    q->qp.state = IBV_QPS_RESET;
    q->qp.qp_type = attr->qp_type;
    q->sig_all = attr->sq_sig_all != 0;
    q->cap = cap;
    attr->cap = cap;                /* what was granted */
    return &q->qp;
}

VB_API int ibv_destroy_qp(struct ibv_qp *qp)
{
    struct vb_qp *q = to_vb_qp(qp);
    int st;

    if (!qp)
        return EINVAL;
    vb_av_detach(q);
    /* From here the CM leaves a QP it holds alone (ndv_qp_cm_state, under the same lock). */
    pthread_mutex_lock(&qp->mutex);
    q->closing = true;
    pthread_mutex_unlock(&qp->mutex);
    st = ndc_qp_close(q->core);
    if (st != 0)
        return nd_errno_of(st);
    vb_qp_ex_free(q);
    /* The CQs' references join any the CM holds (ndv_qp_find) before the QP is dead: a
     * release that finds the count at 0 then knows it is the last. */
    __atomic_add_fetch(&q->grave_refs, qp->send_cq == qp->recv_cq ? 1 : 2, __ATOMIC_ACQ_REL);
    __atomic_store_n(&q->dead, true, __ATOMIC_RELEASE);
    vb_cq_bury(qp->send_cq, q, 0);
    if (qp->recv_cq != qp->send_cq)
        vb_cq_bury(qp->recv_cq, q, 1);
    return 0;
}

/* The state moves a connected RC QP makes, along the core's edges. RTR with IBV_QP_AV on a
 * QP the CM did not connect starts the connection to the QP the address vector names
 * (av.c). ERR flushes every request. */
VB_API int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
    struct vb_qp *q = to_vb_qp(qp);
    int err;

    if (!qp || !attr)
        return EINVAL;
    if (q->ud)
        return vb_ud_modify(q, attr, mask);
    if (__atomic_load_n(&q->cm_attaching, __ATOMIC_ACQUIRE))
        vb_wait_cm_attach(q);       /* the CM is connecting it (ndv_qp_cm_attaching) */
    if (mask & IBV_QP_RNR_RETRY)
        ndv_qp_rnr_retry(qp, attr->rnr_retry);
    /* Of the access flags, the one the core enforces (Reads and Writes are the memory's). */
    if (mask & IBV_QP_ACCESS_FLAGS)
        nd_qp_set_remote_atomic(q->core, attr->qp_access_flags & IBV_ACCESS_REMOTE_ATOMIC);
    if (!(mask & IBV_QP_STATE))
        return 0;                   /* other attributes only: nothing the core keeps */
    if ((unsigned)attr->qp_state > IBV_QPS_ERR)
        return EINVAL;
    if (attr->qp_state == IBV_QPS_RESET && !q->cm_connected && nd_qp_get_state(q->core) > ND_QPS_INIT)
        return qp_renew(q);
    bool av = attr->qp_state == IBV_QPS_RTR && (mask & IBV_QP_AV) && !q->cm_connected;

    if (av && (err = vb_av_check(q, attr, mask)) != 0)
        return err;
    /* A peer that went while this QP waited in RTR: on a fabric nothing tells the QP, and RTS
     * succeeds; its own sends then fail (rxe's does so). The core's QP failed quietly. */
    if ((err = nd_qp_modify_state(q->core, (enum nd_qp_state)attr->qp_state)) != 0 &&
        !(attr->qp_state == IBV_QPS_RTS && qp->state == IBV_QPS_RTR && nd_qp_peer_left_quietly(q->core)))
        return -err;
    /* In RTR before the connection starts: it may come up at once, and leaves the state
     * where the application put it. */
    if (av && (err = vb_av_rtr(q, attr, mask)) != 0) {
        vb_qp_enter_err(q);
        return err;
    }
    __atomic_store_n(&qp->state, attr->qp_state, __ATOMIC_RELEASE);
    if (attr->qp_state == IBV_QPS_RTS && q->av.on)
        vb_av_rts(q, attr, mask);
    return 0;
}

VB_API int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask, struct ibv_qp_init_attr *init)
{
    struct vb_qp *q = to_vb_qp(qp);

    (void)mask;
    if (!qp || !attr || !init)
        return EINVAL;
    /* Right after ESTABLISHED the CM may still be connecting it: the answer is the connected QP's. */
    if (__atomic_load_n(&q->cm_attaching, __ATOMIC_ACQUIRE))
        vb_wait_cm_attach(q);
    memset(attr, 0, sizeof(*attr));
    /* The core's: a QP that failed is in ERR whatever its last modify said. rdma-core
     * updates the field from the answer too. */
    attr->qp_state = attr->cur_qp_state = (enum ibv_qp_state)nd_qp_get_state(q->core);
    if (attr->qp_state == IBV_QPS_ERR && nd_qp_peer_left_quietly(q->core))
        attr->qp_state = attr->cur_qp_state = __atomic_load_n(&qp->state, __ATOMIC_ACQUIRE);
    /* An RNIC's QP (siw's) has no RESET of its own: it reports it as INIT. */
    if (attr->qp_state == IBV_QPS_RESET && vb_ctx(qp->context)->dev->personality == VB_IWARP)
        attr->qp_state = attr->cur_qp_state = IBV_QPS_INIT;
    __atomic_store_n(&qp->state, attr->qp_state, __ATOMIC_RELEASE);
    attr->path_mtu = (enum ibv_mtu)vb_port_mtu();
    attr->qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                            (nd_qp_remote_atomic(q->core) ? IBV_ACCESS_REMOTE_ATOMIC : 0);
    attr->cap = q->cap;
    attr->port_num = VB_PORT;
    attr->max_rd_atomic = attr->max_dest_rd_atomic = (uint8_t)q->ird;
    if (q->av.on) {
        attr->dest_qp_num = q->av.dest_qpn;
        attr->ah_attr = q->av.ah;
        attr->max_dest_rd_atomic = (uint8_t)q->av.ird;
        attr->max_rd_atomic = (uint8_t)q->av.ord;
        attr->retry_cnt = q->av.retry_cnt;
        attr->rnr_retry = q->av.rnr_retry;
    }
    attr->timeout = q->av.timeout;  /* RTS's, or the CM's ACK timeout */
    if (q->ud) {
        attr->qkey = q->qkey;
        attr->sq_psn = q->sq_psn;
        attr->qp_access_flags = 0;
        attr->max_rd_atomic = attr->max_dest_rd_atomic = 0;
    }
    memset(init, 0, sizeof(*init));
    init->qp_context = qp->qp_context;
    init->send_cq = qp->send_cq;
    init->recv_cq = qp->recv_cq;
    init->srq = qp->srq;
    init->cap = q->cap;
    init->qp_type = qp->qp_type;
    init->sq_sig_all = q->sig_all;
    return 0;
}


/*
 * One Send, the request of every latency loop, goes straight to the core: no list walk, no
 * opcode switch. Anything else takes the general loop.
 */
int vb_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
    struct vb_qp *q = to_vb_qp(qp);

    if (__builtin_expect(__atomic_load_n(&q->av.hold, __ATOMIC_ACQUIRE), 0))
        return q->ud ? vb_ud_post_send(q, wr, bad) : vb_av_post_send(q, wr, bad);
    if (ND_LIKELY(wr && !wr->next && wr->opcode == IBV_WR_SEND && wr->num_sge >= 0)) {
        int64_t flags = vb_send_flags_of(q, wr->send_flags);
        int st;

        if (ND_LIKELY(flags >= 0)) {
            st = ndc_qp_send(q->core, (void *)(uintptr_t)wr->wr_id, (const nd_sge *)wr->sg_list,
                            (uint32_t)wr->num_sge, (uint32_t)flags);
            if (ND_LIKELY(st == 0))
                return 0;
            *bad = wr;
            return vb_post_errno(st);
        }
    }
    return vb_post_send_now(qp, wr, bad);
}

VB_API nd_adapter *ndv_context_adapter(struct ibv_context *ctx)
{
    return vb_ctx(ctx)->adapter;
}

VB_API nd_qp *ndv_qp_core(struct ibv_qp *qp)
{
    return to_vb_qp(qp)->core;
}

VB_API bool ndv_qp_receives_pending(struct ibv_qp *qp)
{
    return nd_qp_inbound_pending(to_vb_qp(qp)->core);
}

/* The CM queued ESTABLISHED before it connects the QP (the peer may send the moment it is
 * connected): a post that comes meanwhile waits for it on the hold path, off the fast one. */
VB_API void ndv_qp_cm_attaching(struct ibv_qp *qp, bool on)
{
    struct vb_qp *q = to_vb_qp(qp);

    pthread_mutex_lock(&qp->mutex);
    __atomic_store_n(&q->cm_attaching, on, __ATOMIC_RELEASE);
    __atomic_store_n(&q->av.hold, on, __ATOMIC_RELEASE);
    if (!on)
        pthread_cond_broadcast(&qp->cond);
    pthread_mutex_unlock(&qp->mutex);
}

VB_API void ndv_qp_cm_timeout(struct ibv_qp *qp, uint8_t timeout)
{
    to_vb_qp(qp)->av.timeout = timeout;
}

/* An application-managed QP, held until ndv_qp_release: its memory outlives an
 * ibv_destroy_qp meanwhile (as the kernel's iWARP CM holds a QP it connects). */
VB_API struct ibv_qp *ndv_qp_find(struct ibv_context *ctx, uint32_t qpn)
{
    struct vb_qp *q = ctx ? vb_av_find(vb_ctx(ctx), qpn) : NULL;

    return q ? &q->qp : NULL;
}

VB_API void ndv_qp_release(struct ibv_qp *qp)
{
    struct vb_qp *q = to_vb_qp(qp);

    if (__atomic_sub_fetch(&q->grave_refs, 1, __ATOMIC_ACQ_REL) == 0 && __atomic_load_n(&q->dead, __ATOMIC_ACQUIRE))
        vb_qp_free(q);
}

/* Moves a QP the CM holds only while the application has not begun to destroy it. */
VB_API void ndv_qp_cm_state_held(struct ibv_qp *qp, enum ibv_qp_state state, uint32_t ird, uint32_t ord)
{
    pthread_mutex_lock(&qp->mutex);
    if (!to_vb_qp(qp)->closing)
        ndv_qp_cm_state(qp, state, ird, ord);
    pthread_mutex_unlock(&qp->mutex);
}

VB_API void ndv_qp_cm_state(struct ibv_qp *qp, enum ibv_qp_state state, uint32_t ird, uint32_t ord)
{
    struct vb_qp *q = to_vb_qp(qp);

    if (state == IBV_QPS_RTS) {
        q->cm_connected = true;
        q->ird = ird;
        q->ord = ord;
    }
    /* Refused only where the QP failed meanwhile (it stays in ERR), or where the
     * application moved it first. From the CM's thread: applications read the field. */
    enum ibv_qp_state now = nd_qp_modify_state(q->core, (enum nd_qp_state)state) == 0 ? state
                            : (enum ibv_qp_state)nd_qp_get_state(q->core);

    /* A peer gone before the CM marked the connection up leaves it up as far as the QP
     * shows (nd_qp_peer_left_quietly). */
    if (now == IBV_QPS_ERR && nd_qp_peer_left_quietly(q->core))
        now = state;
    __atomic_store_n(&qp->state, now, __ATOMIC_RELEASE);
}
