// SPDX-License-Identifier: MIT
/*
 * Extended QPs: ibv_create_qp_ex with send ops flags, and the ibv_wr_* posting calls.
 *
 * A batch between ibv_wr_start and ibv_wr_complete is built as a list of ibv_send_wr in the
 * QP's own memory and posted as one list through ibv_post_send's path, so each request is
 * checked and carried exactly as a classic post's. Inline data is copied at the call that
 * gives it (the caller may reuse its buffer at once), into the batch's byte store.
 *
 * As rdma-core's providers do, a builder's error (a batch longer than the send queue, too
 * many SGEs, inline data past the QP's room) is kept and returned by ibv_wr_complete,
 * which then posts nothing of the batch. ibv_wr_start takes the batch's lock, which
 * complete and abort release: one thread builds a batch at a time.
 */
#include "post.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* The operations an extended QP of @type may be created with. */
static uint64_t ops_offered(enum ibv_qp_type type)
{
    if (type == IBV_QPT_UD)
        return IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
    return IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_SEND_WITH_INV |
           IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |
           IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
           IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
}

static struct vb_qp *qpx_of(struct ibv_qp_ex *x)
{
    return vb_container_of(x, struct vb_qp, qpx);
}

static void batch_fail(struct vb_wr_batch *b, int err)
{
    if (!b->err)
        b->err = err;
}

/* A new request of the batch, with the QP's wr_id and wr_flags now; NULL once it failed. */
static struct ibv_send_wr *batch_next(struct ibv_qp_ex *x, enum ibv_wr_opcode op)
{
    struct vb_wr_batch *b = qpx_of(x)->batch;
    struct ibv_send_wr *wr;

    if (b->err)
        return NULL;
    if (b->n == b->cap) {
        batch_fail(b, ENOMEM);      /* more than the send queue holds */
        return NULL;
    }
    wr = &b->wr[b->n++];
    *wr = (struct ibv_send_wr){ .wr_id = x->wr_id, .opcode = op, .send_flags = x->wr_flags };
    return wr;
}

/* The request the setters apply to: the last one built. */
static struct ibv_send_wr *batch_cur(struct ibv_qp_ex *x)
{
    struct vb_wr_batch *b = qpx_of(x)->batch;

    if (b->err)
        return NULL;
    if (!b->n) {
        batch_fail(b, EINVAL);      /* a setter before any builder */
        return NULL;
    }
    return &b->wr[b->n - 1];
}

static void wr_rdma(struct ibv_qp_ex *x, enum ibv_wr_opcode op, uint32_t rkey, uint64_t addr, __be32 imm)
{
    struct ibv_send_wr *wr = batch_next(x, op);

    if (wr) {
        wr->wr.rdma.rkey = rkey;
        wr->wr.rdma.remote_addr = addr;
        wr->imm_data = imm;
    }
}

static void wr_rdma_write(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr)
{
    wr_rdma(x, IBV_WR_RDMA_WRITE, rkey, addr, 0);
}

static void wr_rdma_write_imm(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr, __be32 imm)
{
    wr_rdma(x, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, addr, imm);
}

static void wr_rdma_read(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr)
{
    wr_rdma(x, IBV_WR_RDMA_READ, rkey, addr, 0);
}

static void wr_atomic(struct ibv_qp_ex *x, enum ibv_wr_opcode op, uint32_t rkey, uint64_t addr, uint64_t compare_add,
                      uint64_t swap)
{
    struct ibv_send_wr *wr = batch_next(x, op);

    if (wr)
        wr->wr.atomic = (typeof(wr->wr.atomic)){ .remote_addr = addr, .compare_add = compare_add, .swap = swap,
                                                  .rkey = rkey };
}

static void wr_atomic_cmp_swp(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr, uint64_t compare, uint64_t swap)
{
    wr_atomic(x, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, addr, compare, swap);
}

static void wr_atomic_fetch_add(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr, uint64_t add)
{
    wr_atomic(x, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, addr, add, 0);
}

static void wr_send(struct ibv_qp_ex *x)
{
    batch_next(x, IBV_WR_SEND);
}

static void wr_send_imm(struct ibv_qp_ex *x, __be32 imm)
{
    struct ibv_send_wr *wr = batch_next(x, IBV_WR_SEND_WITH_IMM);

    if (wr)
        wr->imm_data = imm;
}

static void wr_send_inv(struct ibv_qp_ex *x, uint32_t rkey)
{
    struct ibv_send_wr *wr = batch_next(x, IBV_WR_SEND_WITH_INV);

    if (wr)
        wr->invalidate_rkey = rkey;
}

static void wr_local_inv(struct ibv_qp_ex *x, uint32_t rkey)
{
    struct ibv_send_wr *wr = batch_next(x, IBV_WR_LOCAL_INV);

    if (wr)
        wr->invalidate_rkey = rkey;
}

static void wr_bind_mw(struct ibv_qp_ex *x, struct ibv_mw *mw, uint32_t rkey, const struct ibv_mw_bind_info *info)
{
    struct ibv_send_wr *wr = batch_next(x, IBV_WR_BIND_MW);

    if (wr) {
        wr->bind_mw.mw = mw;
        wr->bind_mw.rkey = rkey;
        wr->bind_mw.bind_info = *info;
    }
}

static void wr_set_ud_addr(struct ibv_qp_ex *x, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey)
{
    struct ibv_send_wr *wr = batch_cur(x);

    if (wr) {
        wr->wr.ud.ah = ah;
        wr->wr.ud.remote_qpn = qpn;
        wr->wr.ud.remote_qkey = qkey;
    }
}

static void wr_set_sge_list(struct ibv_qp_ex *x, size_t n, const struct ibv_sge *list)
{
    struct vb_wr_batch *b = qpx_of(x)->batch;
    struct ibv_send_wr *wr = batch_cur(x);

    if (!wr)
        return;
    if (n > b->max_sge) {
        batch_fail(b, EINVAL);
        return;
    }
    wr->sg_list = &b->sge[(size_t)(wr - b->wr) * b->max_sge];
    memcpy(wr->sg_list, list, n * sizeof(*list));
    wr->num_sge = (int)n;
    wr->send_flags &= ~(unsigned)IBV_SEND_INLINE;
}

static void wr_set_sge(struct ibv_qp_ex *x, uint32_t lkey, uint64_t addr, uint32_t length)
{
    struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

    wr_set_sge_list(x, 1, &sge);
}

static void wr_set_inline_data_list(struct ibv_qp_ex *x, size_t n, const struct ibv_data_buf *list)
{
    struct vb_qp *q = qpx_of(x);
    struct vb_wr_batch *b = q->batch;
    struct ibv_send_wr *wr = batch_cur(x);
    size_t len = 0;

    if (!wr)
        return;
    for (size_t i = 0; i < n; i++)
        len += list[i].length;
    if (len > q->cap.max_inline_data) {
        batch_fail(b, ENOMEM);      /* as rdma-core's providers refuse it */
        return;
    }
    if (b->inl_len + len > b->inl_cap) {
        size_t want = (b->inl_len + len) * 2;
        uint8_t *p = realloc(b->inl, want);

        if (!p) {
            batch_fail(b, ENOMEM);
            return;
        }
        b->inl = p;
        b->inl_cap = want;
    }
    wr->sg_list = &b->sge[(size_t)(wr - b->wr) * b->max_sge];
    wr->sg_list[0] = (struct ibv_sge){ .addr = b->inl_len, .length = (uint32_t)len };
    wr->num_sge = 1;
    wr->send_flags |= IBV_SEND_INLINE;
    for (size_t i = 0; i < n; i++) {
        if (list[i].length)
            memcpy(b->inl + b->inl_len, list[i].addr, list[i].length);
        b->inl_len += list[i].length;
    }
}

static void wr_set_inline_data(struct ibv_qp_ex *x, void *addr, size_t length)
{
    struct ibv_data_buf buf = { .addr = addr, .length = length };

    wr_set_inline_data_list(x, 1, &buf);
}

static void wr_start(struct ibv_qp_ex *x)
{
    struct vb_wr_batch *b = qpx_of(x)->batch;

    pthread_mutex_lock(&b->lock);
    b->n = 0;
    b->err = 0;
    b->inl_len = 0;
}

static void batch_end(struct vb_wr_batch *b)
{
    b->n = 0;
    b->err = 0;
    b->inl_len = 0;
    pthread_mutex_unlock(&b->lock);
}

static int wr_complete(struct ibv_qp_ex *x)
{
    struct vb_wr_batch *b = qpx_of(x)->batch;
    struct ibv_send_wr *bad;
    int err = b->err;

    if (!err && b->n) {
        for (uint32_t i = 0; i < b->n; i++) {
            struct ibv_send_wr *wr = &b->wr[i];

            if (wr->send_flags & IBV_SEND_INLINE)
                wr->sg_list[0].addr += (uintptr_t)b->inl;
            wr->next = i + 1 < b->n ? wr + 1 : NULL;
        }
        err = vb_post_send(&x->qp_base, b->wr, &bad);
    }
    batch_end(b);
    return err;
}

static void wr_abort(struct ibv_qp_ex *x)
{
    batch_end(qpx_of(x)->batch);
}

static void fill_ops(struct ibv_qp_ex *x)
{
    x->wr_send = wr_send;
    x->wr_send_imm = wr_send_imm;
    x->wr_set_ud_addr = wr_set_ud_addr;
    x->wr_set_sge = wr_set_sge;
    x->wr_set_sge_list = wr_set_sge_list;
    x->wr_set_inline_data = wr_set_inline_data;
    x->wr_set_inline_data_list = wr_set_inline_data_list;
    x->wr_start = wr_start;
    x->wr_complete = wr_complete;
    x->wr_abort = wr_abort;
    if (x->qp_base.qp_type == IBV_QPT_UD)
        return;
    x->wr_send_inv = wr_send_inv;
    x->wr_rdma_write = wr_rdma_write;
    x->wr_rdma_write_imm = wr_rdma_write_imm;
    x->wr_rdma_read = wr_rdma_read;
    x->wr_local_inv = wr_local_inv;
    x->wr_bind_mw = wr_bind_mw;
    x->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
    x->wr_atomic_fetch_add = wr_atomic_fetch_add;
}

static struct vb_wr_batch *batch_new(const struct ibv_qp_cap *cap)
{
    struct vb_wr_batch *b = calloc(1, sizeof(*b));

    if (!b)
        return NULL;
    b->cap = cap->max_send_wr;
    b->max_sge = cap->max_send_sge ? cap->max_send_sge : 1;
    b->wr = calloc(b->cap, sizeof(*b->wr));
    b->sge = calloc((size_t)b->cap * b->max_sge, sizeof(*b->sge));
    if (!b->wr || !b->sge) {
        free(b->wr);
        free(b->sge);
        free(b);
        return NULL;
    }
    pthread_mutex_init(&b->lock, NULL);
    return b;
}

/* The context's create_qp_ex (what ibv_create_qp_ex calls for anything past a PD). */
struct ibv_qp *vb_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *ax)
{
    const uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS | IBV_QP_INIT_ATTR_CREATE_FLAGS;
    bool ex = ax && (ax->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS);
    struct ibv_qp *qp;
    struct vb_qp *q;

    if (!ax || !(ax->comp_mask & IBV_QP_INIT_ATTR_PD) || !ax->pd || ax->pd->context != ctx) {
        errno = EINVAL;
        return NULL;
    }
    if ((ax->comp_mask & ~known) || ((ax->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && ax->create_flags) ||
        (ex && (ax->send_ops_flags & ~ops_offered(ax->qp_type)))) {
        errno = EOPNOTSUPP;         /* XRC, RSS, TSO, atomic writes, source QPN: not offered */
        return NULL;
    }
    qp = ibv_create_qp(ax->pd, (struct ibv_qp_init_attr *)ax);
    if (!qp || !ex)
        return qp;
    q = to_vb_qp(qp);
    q->batch = batch_new(&q->cap);
    if (!q->batch) {
        ibv_destroy_qp(qp);
        errno = ENOMEM;
        return NULL;
    }
    fill_ops(&q->qpx);
    q->qpx.comp_mask = 0;
    return qp;
}

/* As rdma-core: the extended view only of a QP made with send ops flags. */
VB_API struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
    struct vb_qp *q = to_vb_qp(qp);

    return q->batch ? &q->qpx : NULL;
}
