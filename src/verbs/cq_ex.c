// SPDX-License-Identifier: MIT
/*
 * Extended CQs: ibv_create_cq_ex, the start/next/end poll iterator and the ibv_wc_read_*
 * accessors. The iterator takes one completion at a time through the classic poll (so a
 * completion of a destroyed QP is dropped the same way) into the CQ's current work
 * completion, which the accessors read. The fields offered are the standard ones, all of
 * which a work completion carries: byte length, immediate data, QP number, source QP, SLID,
 * SL and DLID path bits (the last two of a RoCE-style port: 0). No completion timestamp:
 * this device has no clock of its own to stamp completions with.
 */
#include "verbs_int.h"

#include <errno.h>

static struct vb_cq *cqx_of(struct ibv_cq_ex *x)
{
    return vb_container_of(x, struct vb_cq, cqx);
}

static int take_next(struct ibv_cq_ex *x)
{
    struct vb_cq *q = cqx_of(x);

    if (x->context->ops.poll_cq(&q->cq, 1, &q->cur) != 1)
        return ENOENT;
    x->wr_id = q->cur.wr_id;
    x->status = q->cur.status;
    return 0;
}

static int start_poll(struct ibv_cq_ex *x, struct ibv_poll_cq_attr *attr)
{
    if (attr && attr->comp_mask)
        return EINVAL;
    return take_next(x);
}

static int next_poll(struct ibv_cq_ex *x)
{
    return take_next(x);
}

/* Nothing held between start and end: the core's CQ is safe to poll from any thread. */
static void end_poll(struct ibv_cq_ex *x)
{
    (void)x;
}

/* The accessors: each reads one field of the current completion. */
#define CQ_EX_READ(name, type, field)                                                                         \
    static type name(struct ibv_cq_ex *x)                                                                     \
    {                                                                                                         \
        return cqx_of(x)->cur.field;                                                                          \
    }

CQ_EX_READ(read_opcode, enum ibv_wc_opcode, opcode)
CQ_EX_READ(read_vendor_err, uint32_t, vendor_err)
CQ_EX_READ(read_byte_len, uint32_t, byte_len)
CQ_EX_READ(read_imm_data, __be32, imm_data)
CQ_EX_READ(read_qp_num, uint32_t, qp_num)
CQ_EX_READ(read_src_qp, uint32_t, src_qp)
CQ_EX_READ(read_wc_flags, unsigned int, wc_flags)
CQ_EX_READ(read_slid, uint32_t, slid)
CQ_EX_READ(read_sl, uint8_t, sl)
CQ_EX_READ(read_dlid_path_bits, uint8_t, dlid_path_bits)

/* The context's create_cq_ex. */
struct ibv_cq_ex *vb_create_cq_ex(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *a)
{
    struct ibv_cq *cq;
    struct ibv_cq_ex *x;

    if (!a) {
        errno = EINVAL;
        return NULL;
    }
    if ((a->wc_flags & ~(uint64_t)IBV_WC_STANDARD_FLAGS) || (a->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) ||
        ((a->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) && (a->flags & ~(uint32_t)IBV_CREATE_CQ_ATTR_SINGLE_THREADED))) {
        errno = EOPNOTSUPP;         /* timestamps, VLAN, flow tags, parent domains, overrun */
        return NULL;
    }
    if (a->cqe > INT32_MAX || a->comp_vector > INT32_MAX) {
        errno = EINVAL;
        return NULL;
    }
    cq = ibv_create_cq(ctx, (int)a->cqe, a->cq_context, a->channel, (int)a->comp_vector);
    if (!cq)
        return NULL;
    x = &to_vb_cq(cq)->cqx;
    x->comp_mask = 0;
    x->start_poll = start_poll;
    x->next_poll = next_poll;
    x->end_poll = end_poll;
    x->read_opcode = read_opcode;
    x->read_vendor_err = read_vendor_err;
    x->read_byte_len = read_byte_len;
    x->read_imm_data = read_imm_data;
    x->read_qp_num = read_qp_num;
    x->read_src_qp = read_src_qp;
    x->read_wc_flags = read_wc_flags;
    x->read_slid = read_slid;
    x->read_sl = read_sl;
    x->read_dlid_path_bits = read_dlid_path_bits;
    return x;
}
