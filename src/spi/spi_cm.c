// SPDX-License-Identifier: MIT
/* IND2Connector and IND2Listener over the C API's connection manager. */
#include "spi_com.h"

#include <stdlib.h>


/* --- IND2Connector -------------------------------------------------------------------------- */

struct spi_connector {
    struct spi_object obj;
    nd_connector *nd;
    struct spi_file *file;
};

static struct spi_connector *conn_of(IND2Connector *This) { return (struct spi_connector *)This; }

static nd_status connector_close(struct spi_object *o)
{
    struct spi_connector *c = (struct spi_connector *)o;
    nd_status st = nd_connector_close(c->nd);

    if (st == ND_DEVICE_BUSY)
        return st;
    spi_file_unref(c->file);
    free(c);
    return st;
}

SPI_UNKNOWN_METHODS(connector, IND2Connector, IID_IND2Connector, true)

static HRESULT connector_cancel(IND2Connector *This)
{
    return nd_connector_cancel_overlapped_requests(conn_of(This)->nd);
}

static HRESULT connector_get_overlapped_result(IND2Connector *This, OVERLAPPED *ov, BOOL wait)
{
    (void)This;
    return spi_ov_result(ov, wait);
}

static HRESULT connector_bind(IND2Connector *This, const struct sockaddr *addr, ULONG len)
{
    return nd_connector_bind(conn_of(This)->nd, addr, len);
}

static HRESULT connector_connect(IND2Connector *This, IUnknown *qp, const struct sockaddr *dest,
                                 ULONG dest_len, ULONG ird, ULONG ord, const VOID *pdata,
                                 ULONG pdata_len, OVERLAPPED *ov)
{
    struct spi_connector *c = conn_of(This);
    nd_qp *q = spi_qp_nd(qp);

    nd_overlapped *nd;
    nd_status st;

    if (!q)
        return ND_INVALID_PARAMETER_1;
    nd = spi_ov_begin(c->file, ov);
    if (ov && !nd)
        return ND_NO_MEMORY;
    st = nd_connector_connect(c->nd, q, dest, dest_len, ird, ord, pdata, pdata_len, nd);
    /* The C API dials at once and may know the answer at once; ND reports these through the
     * request (a Windows program handles a refusal in its completion, and retries). */
    return spi_ov_settle(nd, st, st == ND_CONNECTION_REFUSED || st == ND_IO_TIMEOUT ||
                                     st == ND_NETWORK_UNREACHABLE || st == ND_HOST_UNREACHABLE);
}

static HRESULT connector_complete_connect(IND2Connector *This, OVERLAPPED *ov)
{
    struct spi_connector *c = conn_of(This);
    SPI_OVERLAPPED_CALL(c->file, ov, nd_connector_complete_connect(c->nd, nd));
}

static HRESULT connector_accept(IND2Connector *This, IUnknown *qp, ULONG ird, ULONG ord,
                                const VOID *pdata, ULONG pdata_len, OVERLAPPED *ov)
{
    struct spi_connector *c = conn_of(This);
    nd_qp *q = spi_qp_nd(qp);

    if (!q)
        return ND_INVALID_PARAMETER_1;
    SPI_OVERLAPPED_CALL(c->file, ov, nd_connector_accept(c->nd, q, ird, ord, pdata, pdata_len, nd));
}

static HRESULT connector_reject(IND2Connector *This, const VOID *pdata, ULONG pdata_len)
{
    return nd_connector_reject(conn_of(This)->nd, pdata, pdata_len);
}

static HRESULT connector_get_read_limits(IND2Connector *This, ULONG *ird, ULONG *ord)
{
    return nd_connector_get_read_limits(conn_of(This)->nd, ird, ord);
}

static HRESULT connector_get_private_data(IND2Connector *This, VOID *buf, ULONG *len)
{
    return nd_connector_get_private_data(conn_of(This)->nd, buf, len);
}

static HRESULT connector_get_local_address(IND2Connector *This, struct sockaddr *addr, ULONG *len)
{
    return nd_connector_get_local_address(conn_of(This)->nd, addr, len);
}

static HRESULT connector_get_peer_address(IND2Connector *This, struct sockaddr *addr, ULONG *len)
{
    return nd_connector_get_peer_address(conn_of(This)->nd, addr, len);
}

static HRESULT connector_notify_disconnect(IND2Connector *This, OVERLAPPED *ov)
{
    struct spi_connector *c = conn_of(This);
    SPI_OVERLAPPED_CALL(c->file, ov, nd_connector_notify_disconnect(c->nd, nd));
}

static HRESULT connector_disconnect(IND2Connector *This, OVERLAPPED *ov)
{
    struct spi_connector *c = conn_of(This);
    SPI_OVERLAPPED_CALL(c->file, ov, nd_connector_disconnect(c->nd, nd));
}

static const IND2ConnectorVtbl connector_vtbl = {
    SPI_UNKNOWN_VTBL(connector),
    .CancelOverlappedRequests = connector_cancel,
    .GetOverlappedResult = connector_get_overlapped_result,
    .Bind = connector_bind,
    .Connect = connector_connect,
    .CompleteConnect = connector_complete_connect,
    .Accept = connector_accept,
    .Reject = connector_reject,
    .GetReadLimits = connector_get_read_limits,
    .GetPrivateData = connector_get_private_data,
    .GetLocalAddress = connector_get_local_address,
    .GetPeerAddress = connector_get_peer_address,
    .NotifyDisconnect = connector_notify_disconnect,
    .Disconnect = connector_disconnect,
};

nd_connector *spi_connector_nd(IUnknown *connector)
{
    struct spi_connector *c = spi_object_as(connector, &connector_vtbl);

    return c ? c->nd : NULL;
}

HRESULT spi_connector_create(nd_adapter *adapter, struct spi_file *file, VOID **out)
{
    struct spi_connector *c = calloc(1, sizeof(*c));
    nd_status st;

    if (!c)
        return ND_NO_MEMORY;
    st = nd_adapter_create_connector(adapter, file->port, &c->nd);
    if (st != ND_SUCCESS) {
        free(c);
        return st;
    }
    spi_object_init(&c->obj, &connector_vtbl, connector_close);
    spi_file_ref(file);
    c->file = file;
    *out = c;
    return ND_SUCCESS;
}

/* --- IND2Listener ---------------------------------------------------------------------------- */

struct spi_listener {
    struct spi_object obj;
    nd_listener *nd;
    struct spi_file *file;
};

static struct spi_listener *listener_of(IND2Listener *This) { return (struct spi_listener *)This; }

static nd_status listener_close(struct spi_object *o)
{
    struct spi_listener *l = (struct spi_listener *)o;
    nd_status st = nd_listener_close(l->nd);

    if (st == ND_DEVICE_BUSY)
        return st;
    spi_file_unref(l->file);
    free(l);
    return st;
}

SPI_UNKNOWN_METHODS(listener, IND2Listener, IID_IND2Listener, true)

static HRESULT listener_cancel(IND2Listener *This)
{
    return nd_listener_cancel_overlapped_requests(listener_of(This)->nd);
}

static HRESULT listener_get_overlapped_result(IND2Listener *This, OVERLAPPED *ov, BOOL wait)
{
    (void)This;
    return spi_ov_result(ov, wait);
}

static HRESULT listener_bind(IND2Listener *This, const struct sockaddr *addr, ULONG len)
{
    return nd_listener_bind(listener_of(This)->nd, addr, len);
}

static HRESULT listener_listen(IND2Listener *This, ULONG backlog)
{
    return nd_listener_listen(listener_of(This)->nd, backlog);
}

static HRESULT listener_get_local_address(IND2Listener *This, struct sockaddr *addr, ULONG *len)
{
    return nd_listener_get_local_address(listener_of(This)->nd, addr, len);
}

static HRESULT listener_get_connection_request(IND2Listener *This, IUnknown *connector, OVERLAPPED *ov)
{
    struct spi_listener *l = listener_of(This);
    nd_connector *c = spi_connector_nd(connector);

    if (!c)
        return ND_INVALID_PARAMETER_1;
    SPI_OVERLAPPED_CALL(l->file, ov, nd_listener_get_connection_request(l->nd, c, nd));
}

static const IND2ListenerVtbl listener_vtbl = {
    SPI_UNKNOWN_VTBL(listener),
    .CancelOverlappedRequests = listener_cancel,
    .GetOverlappedResult = listener_get_overlapped_result,
    .Bind = listener_bind,
    .Listen = listener_listen,
    .GetLocalAddress = listener_get_local_address,
    .GetConnectionRequest = listener_get_connection_request,
};

HRESULT spi_listener_create(nd_adapter *adapter, struct spi_file *file, VOID **out)
{
    struct spi_listener *l = calloc(1, sizeof(*l));
    nd_status st;

    if (!l)
        return ND_NO_MEMORY;
    st = nd_adapter_create_listener(adapter, file->port, &l->nd);
    if (st != ND_SUCCESS) {
        free(l);
        return st;
    }
    spi_object_init(&l->obj, &listener_vtbl, listener_close);
    spi_file_ref(file);
    l->file = file;
    *out = l;
    return ND_SUCCESS;
}
