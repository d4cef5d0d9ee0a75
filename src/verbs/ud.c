// SPDX-License-Identifier: MIT
/*
 * UD queue pairs over the core's datagram QPs. A UD QP's number names its UDP port
 * (ND_DGRAM_QPN), so a peer that knows (GID, QP number, Q_Key) reaches it as it would on a
 * RoCE fabric. The state moves and the attributes each move requires or allows are the
 * kernel's (ib_modify_qp_is_ok for UD), as rxe enforces them; a Send carries at most the
 * port's active MTU, and every receive begins with the 40 bytes of GRH space.
 */
#include "post.h"
#include "ndv.h"
#include "core/qp_int.h"

#include <errno.h>
#include <string.h>

#define UD_ANY_STATE (IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY)

/* The bytes of an IBV_MTU_* value. */
static uint32_t mtu_bytes(uint32_t mtu)
{
    return 128u << mtu;
}

int vb_ud_create(struct vb_context *c, struct vb_qp *q, struct ibv_qp_init_attr *attr, const struct nd_qp_sizes *sz)
{
    uint32_t qpn;
    int st;

    if (attr->srq)
        return -EOPNOTSUPP;         /* UD receives come from the QP's own queue */
    st = nd_qp_create_datagram(c->adapter, to_vb_cq(attr->recv_cq)->core, to_vb_cq(attr->send_cq)->core, &q->qp,
                               sz, mtu_bytes(vb_port_mtu()), &q->core, &qpn);
    if (st != 0)
        return st;
    q->ud = true;
    q->qp.qp_num = qpn;
    __atomic_store_n(&q->av.hold, true, __ATOMIC_RELEASE);     /* sends go through vb_ud_post_send */
    return 0;
}

/* What a move from @from to @to must and may name (beyond the state), or false for none. */
static bool ud_attrs(enum ibv_qp_state from, enum ibv_qp_state to, int *need, int *may)
{
    *need = *may = 0;
    if (to == IBV_QPS_RESET || to == IBV_QPS_ERR)
        return true;
    if (from == IBV_QPS_RESET && to == IBV_QPS_INIT) {
        *need = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
        return true;
    }
    if (from == IBV_QPS_INIT && to == IBV_QPS_INIT) {
        *may = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
        return true;
    }
    if (from == IBV_QPS_INIT && to == IBV_QPS_RTR) {
        *may = IBV_QP_PKEY_INDEX | IBV_QP_QKEY;
        return true;
    }
    if (from == IBV_QPS_RTR && to == IBV_QPS_RTS) {
        *need = IBV_QP_SQ_PSN;
        *may = IBV_QP_QKEY;
        return true;
    }
    if (from == IBV_QPS_RTS && to == IBV_QPS_RTS) {
        *may = IBV_QP_QKEY;
        return true;
    }
    return false;
}

int vb_ud_modify(struct vb_qp *q, struct ibv_qp_attr *attr, int mask)
{
    enum ibv_qp_state from = (enum ibv_qp_state)nd_qp_get_state(q->core), to;
    int need, may, st;

    if (mask & IBV_QP_CUR_STATE && attr->cur_qp_state != from)
        return EINVAL;
    to = (mask & IBV_QP_STATE) ? attr->qp_state : from;
    if ((unsigned)to > IBV_QPS_ERR || !ud_attrs(from, to, &need, &may))
        return EINVAL;
    if ((mask & need) != need || (mask & ~(need | may | UD_ANY_STATE)))
        return EINVAL;
    if ((mask & IBV_QP_PORT) && attr->port_num != VB_PORT)
        return EINVAL;
    if ((mask & IBV_QP_PKEY_INDEX) && attr->pkey_index != 0)
        return EINVAL;              /* one P_Key, the default */
    if ((mask & IBV_QP_STATE) && (st = nd_qp_modify_state(q->core, (enum nd_qp_state)to)) != 0)
        return nd_errno_of(st);
    if (mask & IBV_QP_QKEY) {
        q->qkey = attr->qkey;
        nd_qp_set_qkey(q->core, attr->qkey);
    }
    if (mask & IBV_QP_SQ_PSN)
        q->sq_psn = attr->sq_psn & 0xffffff;
    if (mask & IBV_QP_STATE)
        __atomic_store_n(&q->qp.state, to, __ATOMIC_RELEASE);
    return 0;
}

int vb_ud_post_send(struct vb_qp *q, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
    /* Sends from RTS on, as rxe's: one posted in ERR is flushed. */
    if (__atomic_load_n(&q->qp.state, __ATOMIC_ACQUIRE) < IBV_QPS_RTS) {
        *bad = wr;
        return EINVAL;
    }
    for (; wr; wr = wr->next) {
        int64_t flags = vb_send_flags_of(q, wr->send_flags);
        struct nd_dgram_dest d;
        int st;

        if (flags < 0 || wr->num_sge < 0 || (wr->opcode != IBV_WR_SEND && wr->opcode != IBV_WR_SEND_WITH_IMM) ||
            !wr->wr.ud.ah || wr->wr.ud.ah->context != q->qp.context) {
            *bad = wr;
            return EINVAL;
        }
        vb_ah_dest(wr->wr.ud.ah, &d);
        d.qpn = wr->wr.ud.remote_qpn;
        d.qkey = wr->wr.ud.remote_qkey;
        st = nd_qp_send_datagram(q->core, (void *)(uintptr_t)wr->wr_id, (const nd_sge *)wr->sg_list,
                                 (uint32_t)wr->num_sge, (uint32_t)flags,
                                 wr->opcode == IBV_WR_SEND_WITH_IMM ? ND_WR_IMM : 0, wr->imm_data, &d);
        if (st != 0) {
            *bad = wr;
            return st == -EMSGSIZE ? EINVAL : vb_post_errno(st);
        }
    }
    return 0;
}
