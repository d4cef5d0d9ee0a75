/* SPDX-License-Identifier: MIT */
/* libnetdirect-spi internals: Win32 handles, overlapped bookkeeping, COM object headers. */
#ifndef ND_SPI_INT_H
#define ND_SPI_INT_H

#include <ndspi/ndsupport.h>
#include <netdirect/netdirect.h>

#include <pthread.h>
#include <stdbool.h>

#define SPI_API __attribute__((visibility("default")))
#define SPI_CONTAINER_OF(p, type, member) ((type *)((char *)(p) - offsetof(type, member)))

/* --- Win32 handles --------------------------------------------------------------------- */

enum ndw_handle_type {
    NDW_HANDLE_EVENT = 0x45564e54,   /* distinct words, so a stray pointer is rarely taken */
    NDW_HANDLE_THREAD = 0x54485244,
    NDW_HANDLE_IOCP = 0x494f4350,
    NDW_HANDLE_FILE = 0x4e444649,
};

/* Every HANDLE the library hands out starts with this; close() runs at CloseHandle. */
struct ndw_handle {
    uint32_t type;
    void (*close)(struct ndw_handle *h);
};

/* The handle of @h if it is a live one of @type, else NULL. The low bit of an event
 * handle (the "do not queue to the port" mark) is ignored. */
struct ndw_handle *ndw_handle_get(HANDLE h, enum ndw_handle_type type);
void ndw_set_last_error(DWORD error);
void ndw_event_signal(HANDLE event);
DWORD ndw_error_from_status(nd_status status);

/* --- Overlapped files and requests -------------------------------------------------- */

struct spi_iocp;

/*
 * The HANDLE of IND2Adapter::CreateOverlappedFile: an nd_port. Objects created on it hold
 * a reference, so the port closes when the handle and the last of them are gone.
 */
struct spi_file {
    struct ndw_handle h;
    nd_port *port;
    uint32_t refs;
    struct spi_iocp *iocp;        /* the completion port bound to it, if any */
    struct spi_ov *live;          /* requests the library still owns (under spi_ov_lock) */
};

struct spi_file *spi_file_from_handle(HANDLE h);
struct spi_file *spi_file_create(nd_port *port);
void spi_file_ref(struct spi_file *f);
void spi_file_unref(struct spi_file *f);

/*
 * One request in flight: the nd_overlapped the C API owns while the caller's OVERLAPPED
 * reads STATUS_PENDING with InternalHigh pointing here. Freed once the status has reached
 * the caller (GetOverlappedResult) and, if it was queued, the completion port.
 */
struct spi_ov {
    nd_overlapped nd;
    OVERLAPPED *user;
    struct spi_file *file;
    struct spi_ov *prev, *next;   /* the file's live list */
    uint32_t users;               /* threads inside GetOverlappedResult on it */
    bool on_port;                 /* queued to the port and not yet dequeued */
    bool posted;                  /* a PostQueuedCompletionStatus packet */
    DWORD posted_bytes;
    ULONG_PTR posted_key;
};

/* Start a request on @file for @user (NULL passes through: the C API rejects it). */
nd_overlapped *spi_ov_begin(struct spi_file *file, OVERLAPPED *user);
/* The C API returned @st for the request begun with @nd; returns @st. */
HRESULT spi_ov_end(nd_overlapped *nd, nd_status st);
/* As spi_ov_end, but with @completes a failure too is reported as pending and delivered
 * as the request's completion (as a refused Connect is on Windows). */
HRESULT spi_ov_settle(nd_overlapped *nd, nd_status st, bool completes);
/* IND2Overlapped::GetOverlappedResult, for any object. */
HRESULT spi_ov_result(OVERLAPPED *user, BOOL wait);

/* --- COM objects ------------------------------------------------------------------------ */

/* Every object starts with its vtable pointer, then this. */
struct spi_object {
    const void *vtbl;
    uint32_t refs;
    /* Closes the netdirect object; ND_DEVICE_BUSY defers it until another object closes. */
    nd_status (*close)(struct spi_object *o);
    struct spi_object *deferred_next;
};

void spi_object_init(struct spi_object *o, const void *vtbl, nd_status (*close)(struct spi_object *));
ULONG spi_object_add_ref(struct spi_object *o);
ULONG spi_object_release(struct spi_object *o);

/* The object behind an interface pointer, if it is one of ours with @vtbl; else NULL. */
static inline void *spi_object_as(const void *iface, const void *vtbl)
{
    return iface && *(const void *const *)iface == vtbl ? (void *)iface : NULL;
}

HRESULT spi_adapter_wrap(nd_adapter *nd, VOID **out);
HRESULT spi_provider_get(REFIID iid, VOID **out);

/* The factories of IND2Adapter's objects. */
HRESULT spi_cq_create(nd_adapter *adapter, struct spi_file *file, ULONG depth, USHORT group,
                      KAFFINITY affinity, VOID **out);
HRESULT spi_srq_create(nd_adapter *adapter, struct spi_file *file, ULONG depth, ULONG max_sge,
                       ULONG threshold, USHORT group, KAFFINITY affinity, VOID **out);
HRESULT spi_mr_create(nd_adapter *adapter, struct spi_file *file, VOID **out);
HRESULT spi_mw_create(nd_adapter *adapter, VOID **out);
HRESULT spi_qp_create(nd_adapter *adapter, IUnknown *rcq, IUnknown *icq, IUnknown *srq, VOID *context,
                      ULONG rq_depth, ULONG iq_depth, ULONG rsge, ULONG isge, ULONG inline_size,
                      VOID **out);

/* Objects of the adapter family the CM objects need to look inside. */
nd_qp *spi_qp_nd(IUnknown *qp);
HRESULT spi_connector_create(nd_adapter *adapter, struct spi_file *file, VOID **out);
HRESULT spi_listener_create(nd_adapter *adapter, struct spi_file *file, VOID **out);
nd_connector *spi_connector_nd(IUnknown *connector);

#endif
