// SPDX-License-Identifier: MIT
/*
 * IND2CompletionQueue, IND2SharedReceiveQueue, IND2MemoryRegion, IND2MemoryWindow and
 * IND2QueuePair. ND2_RESULT, ND2_SGE and ND2_ADAPTER_INFO have the C API's layouts
 * (nddef.h checks it), so the data path passes them through without copying.
 */
#include "spi_com.h"

#include <stdlib.h>


/* --- IND2CompletionQueue ------------------------------------------------------------------ */

struct spi_cq {
    struct spi_object obj;
    nd_cq *nd;
    struct spi_file *file;
};

static struct spi_cq *cq_of(IND2CompletionQueue *This) { return (struct spi_cq *)This; }

static nd_status cq_close(struct spi_object *o)
{
    struct spi_cq *c = (struct spi_cq *)o;
    nd_status st = nd_cq_close(c->nd);

    if (st == ND_DEVICE_BUSY)
        return st;
    spi_file_unref(c->file);
    free(c);
    return st;
}

SPI_UNKNOWN_METHODS(cq, IND2CompletionQueue, IID_IND2CompletionQueue, true)

static HRESULT cq_cancel(IND2CompletionQueue *This)
{
    return nd_cq_cancel_overlapped_requests(cq_of(This)->nd);
}

static HRESULT cq_get_overlapped_result(IND2CompletionQueue *This, OVERLAPPED *ov, BOOL wait)
{
    (void)This;
    return spi_ov_result(ov, wait);
}

static HRESULT cq_get_notify_affinity(IND2CompletionQueue *This, USHORT *group, KAFFINITY *affinity)
{
    return nd_cq_get_notify_affinity(cq_of(This)->nd, group, affinity);
}

static HRESULT cq_resize(IND2CompletionQueue *This, ULONG depth)
{
    return nd_cq_resize(cq_of(This)->nd, depth);
}

static HRESULT cq_notify(IND2CompletionQueue *This, ULONG type, OVERLAPPED *ov)
{
    struct spi_cq *c = cq_of(This);
    SPI_OVERLAPPED_CALL(c->file, ov, nd_cq_notify(c->nd, type, nd));
}

static ULONG cq_get_results(IND2CompletionQueue *This, ND2_RESULT results[], ULONG count)
{
    return nd_cq_get_results(cq_of(This)->nd, (nd_result *)results, count);
}

static const IND2CompletionQueueVtbl cq_vtbl = {
    SPI_UNKNOWN_VTBL(cq),
    .CancelOverlappedRequests = cq_cancel,
    .GetOverlappedResult = cq_get_overlapped_result,
    .GetNotifyAffinity = cq_get_notify_affinity,
    .Resize = cq_resize,
    .Notify = cq_notify,
    .GetResults = cq_get_results,
};

HRESULT spi_cq_create(nd_adapter *adapter, struct spi_file *file, ULONG depth, USHORT group,
                      KAFFINITY affinity, VOID **out)
{
    struct spi_cq *c = calloc(1, sizeof(*c));
    nd_status st;

    if (!c)
        return ND_NO_MEMORY;
    st = nd_adapter_create_completion_queue(adapter, file->port, depth, group, affinity, &c->nd);
    if (st != ND_SUCCESS) {
        free(c);
        return st;
    }
    spi_object_init(&c->obj, &cq_vtbl, cq_close);
    spi_file_ref(file);
    c->file = file;
    *out = c;
    return ND_SUCCESS;
}

/* --- IND2SharedReceiveQueue ----------------------------------------------------------------- */

struct spi_srq {
    struct spi_object obj;
    nd_srq *nd;
    struct spi_file *file;
};

static struct spi_srq *srq_of(IND2SharedReceiveQueue *This) { return (struct spi_srq *)This; }

static nd_status srq_close(struct spi_object *o)
{
    struct spi_srq *s = (struct spi_srq *)o;
    nd_status st = nd_srq_close(s->nd);

    if (st == ND_DEVICE_BUSY)
        return st;
    spi_file_unref(s->file);
    free(s);
    return st;
}

SPI_UNKNOWN_METHODS(srq, IND2SharedReceiveQueue, IID_IND2SharedReceiveQueue, true)

static HRESULT srq_cancel(IND2SharedReceiveQueue *This)
{
    return nd_srq_cancel_overlapped_requests(srq_of(This)->nd);
}

static HRESULT srq_get_overlapped_result(IND2SharedReceiveQueue *This, OVERLAPPED *ov, BOOL wait)
{
    (void)This;
    return spi_ov_result(ov, wait);
}

static HRESULT srq_get_notify_affinity(IND2SharedReceiveQueue *This, USHORT *group, KAFFINITY *affinity)
{
    return nd_srq_get_notify_affinity(srq_of(This)->nd, group, affinity);
}

static HRESULT srq_modify(IND2SharedReceiveQueue *This, ULONG depth, ULONG threshold)
{
    return nd_srq_modify(srq_of(This)->nd, depth, threshold);
}

static HRESULT srq_notify(IND2SharedReceiveQueue *This, OVERLAPPED *ov)
{
    struct spi_srq *s = srq_of(This);
    SPI_OVERLAPPED_CALL(s->file, ov, nd_srq_notify(s->nd, nd));
}

static HRESULT srq_receive(IND2SharedReceiveQueue *This, VOID *context, const ND2_SGE sge[], ULONG n)
{
    return nd_srq_receive(srq_of(This)->nd, context, (const nd_sge *)sge, n);
}

static const IND2SharedReceiveQueueVtbl srq_vtbl = {
    SPI_UNKNOWN_VTBL(srq),
    .CancelOverlappedRequests = srq_cancel,
    .GetOverlappedResult = srq_get_overlapped_result,
    .GetNotifyAffinity = srq_get_notify_affinity,
    .Modify = srq_modify,
    .Notify = srq_notify,
    .Receive = srq_receive,
};

HRESULT spi_srq_create(nd_adapter *adapter, struct spi_file *file, ULONG depth, ULONG max_sge,
                       ULONG threshold, USHORT group, KAFFINITY affinity, VOID **out)
{
    struct spi_srq *s = calloc(1, sizeof(*s));
    nd_status st;

    if (!s)
        return ND_NO_MEMORY;
    st = nd_adapter_create_shared_receive_queue(adapter, file->port, depth, max_sge, threshold,
                                                group, affinity, &s->nd);
    if (st != ND_SUCCESS) {
        free(s);
        return st;
    }
    spi_object_init(&s->obj, &srq_vtbl, srq_close);
    spi_file_ref(file);
    s->file = file;
    *out = s;
    return ND_SUCCESS;
}

/* --- IND2MemoryRegion ------------------------------------------------------------------------ */

struct spi_mr {
    struct spi_object obj;
    nd_mr *nd;
    struct spi_file *file;
};

static struct spi_mr *mr_of(IND2MemoryRegion *This) { return (struct spi_mr *)This; }

static nd_status mr_close(struct spi_object *o)
{
    struct spi_mr *m = (struct spi_mr *)o;
    nd_status st = nd_mr_close(m->nd);

    if (st == ND_DEVICE_BUSY)
        return st;
    spi_file_unref(m->file);
    free(m);
    return st;
}

SPI_UNKNOWN_METHODS(mr, IND2MemoryRegion, IID_IND2MemoryRegion, true)

static HRESULT mr_cancel(IND2MemoryRegion *This)
{
    return nd_mr_cancel_overlapped_requests(mr_of(This)->nd);
}

static HRESULT mr_get_overlapped_result(IND2MemoryRegion *This, OVERLAPPED *ov, BOOL wait)
{
    (void)This;
    return spi_ov_result(ov, wait);
}

static HRESULT mr_register(IND2MemoryRegion *This, const VOID *buf, SIZE_T len, ULONG flags,
                           OVERLAPPED *ov)
{
    struct spi_mr *m = mr_of(This);
    SPI_OVERLAPPED_CALL(m->file, ov, nd_mr_register(m->nd, buf, len, flags, nd));
}

static HRESULT mr_deregister(IND2MemoryRegion *This, OVERLAPPED *ov)
{
    struct spi_mr *m = mr_of(This);
    SPI_OVERLAPPED_CALL(m->file, ov, nd_mr_deregister(m->nd, nd));
}

static UINT32 mr_get_local_token(IND2MemoryRegion *This) { return nd_mr_get_local_token(mr_of(This)->nd); }
static UINT32 mr_get_remote_token(IND2MemoryRegion *This) { return nd_mr_get_remote_token(mr_of(This)->nd); }

static const IND2MemoryRegionVtbl mr_vtbl = {
    SPI_UNKNOWN_VTBL(mr),
    .CancelOverlappedRequests = mr_cancel,
    .GetOverlappedResult = mr_get_overlapped_result,
    .Register = mr_register,
    .Deregister = mr_deregister,
    .GetLocalToken = mr_get_local_token,
    .GetRemoteToken = mr_get_remote_token,
};

HRESULT spi_mr_create(nd_adapter *adapter, struct spi_file *file, VOID **out)
{
    struct spi_mr *m = calloc(1, sizeof(*m));
    nd_status st;

    if (!m)
        return ND_NO_MEMORY;
    st = nd_adapter_create_memory_region(adapter, file->port, &m->nd);
    if (st != ND_SUCCESS) {
        free(m);
        return st;
    }
    spi_object_init(&m->obj, &mr_vtbl, mr_close);
    spi_file_ref(file);
    m->file = file;
    *out = m;
    return ND_SUCCESS;
}

/* --- IND2MemoryWindow ------------------------------------------------------------------------ */

struct spi_mw {
    struct spi_object obj;
    nd_mw *nd;
};

static nd_status mw_close(struct spi_object *o)
{
    struct spi_mw *w = (struct spi_mw *)o;
    nd_status st = nd_mw_close(w->nd);

    if (st != ND_DEVICE_BUSY)
        free(w);
    return st;
}

SPI_UNKNOWN_METHODS(mw, IND2MemoryWindow, IID_IND2MemoryWindow, false)

static UINT32 mw_get_remote_token(IND2MemoryWindow *This)
{
    return nd_mw_get_remote_token(((struct spi_mw *)This)->nd);
}

static const IND2MemoryWindowVtbl mw_vtbl = {
    SPI_UNKNOWN_VTBL(mw),
    .GetRemoteToken = mw_get_remote_token,
};

HRESULT spi_mw_create(nd_adapter *adapter, VOID **out)
{
    struct spi_mw *w = calloc(1, sizeof(*w));
    nd_status st;

    if (!w)
        return ND_NO_MEMORY;
    st = nd_adapter_create_memory_window(adapter, &w->nd);
    if (st != ND_SUCCESS) {
        free(w);
        return st;
    }
    spi_object_init(&w->obj, &mw_vtbl, mw_close);
    *out = w;
    return ND_SUCCESS;
}

/* --- IND2QueuePair ---------------------------------------------------------------------------- */

struct spi_qp {
    struct spi_object obj;
    nd_qp *nd;
};

static nd_qp *qp_nd(IND2QueuePair *This) { return ((struct spi_qp *)This)->nd; }

static nd_status qp_close(struct spi_object *o)
{
    struct spi_qp *q = (struct spi_qp *)o;
    nd_status st = nd_qp_close(q->nd);

    if (st != ND_DEVICE_BUSY)
        free(q);
    return st;
}

SPI_UNKNOWN_METHODS(qp, IND2QueuePair, IID_IND2QueuePair, false)

static HRESULT qp_flush(IND2QueuePair *This) { return nd_qp_flush(qp_nd(This)); }

static HRESULT qp_send(IND2QueuePair *This, VOID *context, const ND2_SGE sge[], ULONG n, ULONG flags)
{
    return nd_qp_send(qp_nd(This), context, (const nd_sge *)sge, n, flags);
}

static HRESULT qp_receive(IND2QueuePair *This, VOID *context, const ND2_SGE sge[], ULONG n)
{
    return nd_qp_receive(qp_nd(This), context, (const nd_sge *)sge, n);
}

static HRESULT qp_bind(IND2QueuePair *This, VOID *context, IUnknown *mr, IUnknown *mw,
                       const VOID *buf, SIZE_T len, ULONG flags)
{
    struct spi_mr *m = spi_object_as(mr, &mr_vtbl);
    struct spi_mw *w = spi_object_as(mw, &mw_vtbl);

    if (!m)
        return ND_INVALID_PARAMETER_2;
    if (!w)
        return ND_INVALID_PARAMETER_3;
    return nd_qp_bind(qp_nd(This), context, m->nd, w->nd, buf, len, flags);
}

static HRESULT qp_invalidate(IND2QueuePair *This, VOID *context, IUnknown *mw, ULONG flags)
{
    struct spi_mw *w = spi_object_as(mw, &mw_vtbl);

    if (!w)
        return ND_INVALID_PARAMETER_2;
    return nd_qp_invalidate(qp_nd(This), context, w->nd, flags);
}

static HRESULT qp_read(IND2QueuePair *This, VOID *context, const ND2_SGE sge[], ULONG n,
                       UINT64 remote_address, UINT32 remote_token, ULONG flags)
{
    return nd_qp_read(qp_nd(This), context, (const nd_sge *)sge, n, remote_address, remote_token, flags);
}

static HRESULT qp_write(IND2QueuePair *This, VOID *context, const ND2_SGE sge[], ULONG n,
                        UINT64 remote_address, UINT32 remote_token, ULONG flags)
{
    return nd_qp_write(qp_nd(This), context, (const nd_sge *)sge, n, remote_address, remote_token, flags);
}

static const IND2QueuePairVtbl qp_vtbl = {
    SPI_UNKNOWN_VTBL(qp),
    .Flush = qp_flush,
    .Send = qp_send,
    .Receive = qp_receive,
    .Bind = qp_bind,
    .Invalidate = qp_invalidate,
    .Read = qp_read,
    .Write = qp_write,
};

nd_qp *spi_qp_nd(IUnknown *qp)
{
    struct spi_qp *q = spi_object_as(qp, &qp_vtbl);

    return q ? q->nd : NULL;
}

/*
 * An RNIC sizes its work queue entries in whole units, so ND providers give a QP more SGEs
 * than asked (ND allows it, unadvertised) and Windows programs come to rely on it: the
 * SDK's ndmw sends 2 SGEs on a QP created for 1. The SPI rounds up as hardware does, to
 * a power of two and at least 4, never past the adapter's limit.
 */
static ULONG round_sge(ULONG asked, ULONG adapter_max)
{
    ULONG n = 4;

    if (asked == 0 || asked > adapter_max)
        return asked;   /* the C API reports what is wrong with it */
    while (n < asked)
        n <<= 1;
    return n < adapter_max ? n : adapter_max;
}

HRESULT spi_qp_create(nd_adapter *adapter, IUnknown *rcq, IUnknown *icq, IUnknown *srq, VOID *context,
                      ULONG rq_depth, ULONG iq_depth, ULONG rsge, ULONG isge, ULONG inline_size,
                      VOID **out)
{
    struct spi_cq *r = spi_object_as(rcq, &cq_vtbl), *i = spi_object_as(icq, &cq_vtbl);
    struct spi_srq *s = srq ? spi_object_as(srq, &srq_vtbl) : NULL;
    nd_adapter_info info = { 0 };
    uint32_t info_len = sizeof(info);
    struct spi_qp *q;
    nd_status st;

    if (!r)
        return ND_INVALID_PARAMETER_2;
    if (!i)
        return ND_INVALID_PARAMETER_3;
    if (srq && !s)
        return ND_INVALID_PARAMETER_4;
    q = calloc(1, sizeof(*q));
    if (!q)
        return ND_NO_MEMORY;
    info.info_version = ND_VERSION_2;
    if (nd_adapter_query(adapter, &info, &info_len) == ND_SUCCESS) {
        rsge = round_sge(rsge, info.max_receive_sge);
        isge = round_sge(isge, info.max_initiator_sge);
    }
    if (s)
        st = nd_adapter_create_queue_pair_with_srq(adapter, r->nd, i->nd, s->nd, context, iq_depth,
                                                   isge, inline_size, &q->nd);
    else
        st = nd_adapter_create_queue_pair(adapter, r->nd, i->nd, context, rq_depth, iq_depth, rsge,
                                          isge, inline_size, &q->nd);
    if (st != ND_SUCCESS) {
        free(q);
        return st;
    }
    spi_object_init(&q->obj, &qp_vtbl, qp_close);
    *out = q;
    return ND_SUCCESS;
}
