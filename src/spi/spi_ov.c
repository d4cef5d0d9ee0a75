// SPDX-License-Identifier: MIT
/*
 * Overlapped files, completion ports and the requests between them. A Windows OVERLAPPED
 * is smaller than nd_overlapped, so each request gets an spi_ov that the C API owns; the
 * caller's OVERLAPPED finds it through InternalHigh while Internal reads STATUS_PENDING.
 */
#include "spi_int.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

/* One lock for request bookkeeping: taken twice per blocking request, never on the data
 * path, and never held across a call into the C API. */
static pthread_mutex_t spi_ov_lock = PTHREAD_MUTEX_INITIALIZER;

/* A thread in GetQueuedCompletionStatus, in line behind the ones that came before it. */
struct spi_waiter {
    struct spi_waiter *next;
    pthread_cond_t turn;
};

struct spi_iocp {
    struct ndw_handle h;
    struct spi_file *file;   /* the file whose completions it delivers, or NULL */
    nd_port *own_port;       /* a port of its own when no file is bound */
    ULONG_PTR key;
    /* Windows hands a packet to a thread already waiting on the port, never to one that
     * arrives later: ndconn posts one NULL packet per worker and then waits on the port
     * itself for a CQ's cancel packet, which a worker must not get. So waiters queue here
     * and only the first of them waits on the core's port. */
    pthread_mutex_t line_lock;
    struct spi_waiter *head, *tail;
};

static void live_link(struct spi_ov *w)
{
    struct spi_file *f = w->file;

    w->prev = NULL;
    w->next = f->live;
    if (f->live)
        f->live->prev = w;
    f->live = w;
}

static void live_unlink(struct spi_ov *w)
{
    if (w->prev)
        w->prev->next = w->next;
    else if (w->file)
        w->file->live = w->next;
    if (w->next)
        w->next->prev = w->prev;
}

/* Called with spi_ov_lock held: the status reaches the caller's OVERLAPPED unless that
 * has since been reused for another request. */
static void publish(struct spi_ov *w)
{
    OVERLAPPED *u = w->user;

    if (u && u->Internal == (ULONG_PTR)(LONG_PTR)ND_PENDING && u->InternalHigh == (ULONG_PTR)w) {
        u->InternalHigh = (ULONG_PTR)w->nd.bytes;
        u->Internal = (ULONG_PTR)(LONG_PTR)w->nd.status;
        if (u->hEvent)
            ndw_event_signal(u->hEvent);
    }
}

static void maybe_free(struct spi_ov *w)
{
    if (w->on_port || w->users)
        return;
    if (w->user && w->user->InternalHigh == (ULONG_PTR)w)
        return;   /* still the caller's pending request: GetOverlappedResult will free it */
    live_unlink(w);
    free(w);
}

nd_overlapped *spi_ov_begin(struct spi_file *file, OVERLAPPED *user)
{
    struct spi_ov *w;

    if (!user || !file)
        return NULL;
    w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    w->user = user;
    w->file = file;
    pthread_mutex_lock(&spi_ov_lock);
    /* A set low bit in hEvent asks for no port packet, as does a file with no port. */
    w->on_port = file->iocp && !((ULONG_PTR)user->hEvent & 1);
    w->nd.flags = w->on_port ? 0 : ND_OV_FLAG_NO_PORT;
    user->Internal = (ULONG_PTR)(LONG_PTR)ND_PENDING;
    user->InternalHigh = (ULONG_PTR)w;
    live_link(w);
    pthread_mutex_unlock(&spi_ov_lock);
    return &w->nd;
}

HRESULT spi_ov_end(nd_overlapped *nd, nd_status st)
{
    return spi_ov_settle(nd, st, false);
}

HRESULT spi_ov_settle(nd_overlapped *nd, nd_status st, bool completes)
{
    struct spi_ov *w;
    bool queue;

    if (!nd || st == ND_PENDING)
        return st;
    /* Finished at once: the C API no longer holds the request and queued nothing. */
    w = SPI_CONTAINER_OF(nd, struct spi_ov, nd);
    pthread_mutex_lock(&spi_ov_lock);
    w->user->InternalHigh = 0;
    w->user->Internal = (ULONG_PTR)(LONG_PTR)st;
    completes = completes || ND_SUCCEEDED(st);
    queue = w->on_port && completes;
    if (!queue)
        live_unlink(w);
    pthread_mutex_unlock(&spi_ov_lock);
    if (!completes) {
        free(w);
        return st;   /* a request refused at once queues nothing and is not pending */
    }
    /*
     * A request that succeeded at once is reported as pending and completes the usual way:
     * a packet on the port (if bound), the status already in the OVERLAPPED. Windows ND
     * programs count on exactly one packet per accepted request: ndmrlat waits for one
     * after every Register, ndconn posts its own after a CompleteConnect that returned
     * ND_SUCCESS, so an ND_SUCCESS with a packet would be delivered twice.
     */
    if (!queue)
        free(w);
    else if (nd_port_post(w->file->port, &w->nd, st, 0) != ND_SUCCESS)
        w->on_port = false;   /* cannot happen for a valid port; freed with the file */
    return ND_PENDING;
}

HRESULT spi_ov_result(OVERLAPPED *user, BOOL wait)
{
    struct spi_ov *w;
    nd_status st;

    if (!user)
        return ND_INVALID_PARAMETER_1;
    pthread_mutex_lock(&spi_ov_lock);
    if (user->Internal != (ULONG_PTR)(LONG_PTR)ND_PENDING || !user->InternalHigh) {
        st = (nd_status)user->Internal;
        pthread_mutex_unlock(&spi_ov_lock);
        return st;
    }
    w = (struct spi_ov *)user->InternalHigh;
    w->users++;
    pthread_mutex_unlock(&spi_ov_lock);

    st = nd_get_overlapped_result(&w->nd, wait ? 1 : 0);

    pthread_mutex_lock(&spi_ov_lock);
    w->users--;
    if (st != ND_PENDING) {
        publish(w);
        maybe_free(w);
    }
    pthread_mutex_unlock(&spi_ov_lock);
    return st;
}

/* --- Overlapped files ------------------------------------------------------------------ */

static void file_close_handle(struct ndw_handle *h)
{
    spi_file_unref(SPI_CONTAINER_OF(h, struct spi_file, h));
}

struct spi_file *spi_file_create(nd_port *port)
{
    struct spi_file *f = calloc(1, sizeof(*f));

    if (!f)
        return NULL;
    f->h.type = NDW_HANDLE_FILE;
    f->h.close = file_close_handle;
    f->port = port;
    f->refs = 1;
    return f;
}

struct spi_file *spi_file_from_handle(HANDLE h)
{
    struct ndw_handle *hd = ndw_handle_get(h, NDW_HANDLE_FILE);

    return hd ? SPI_CONTAINER_OF(hd, struct spi_file, h) : NULL;
}

void spi_file_ref(struct spi_file *f)
{
    __atomic_add_fetch(&f->refs, 1, __ATOMIC_RELAXED);
}

void spi_file_unref(struct spi_file *f)
{
    struct spi_ov *w, *next;

    if (__atomic_sub_fetch(&f->refs, 1, __ATOMIC_ACQ_REL))
        return;
    /* Every object on the port is closed, so the C API holds none of these requests. */
    if (nd_port_close(f->port) != ND_SUCCESS)
        return;
    pthread_mutex_lock(&spi_ov_lock);
    for (w = f->live; w; w = next) {
        next = w->next;
        if (w->user && w->user->InternalHigh == (ULONG_PTR)w)
            w->user->InternalHigh = 0;
        free(w);
    }
    f->live = NULL;
    pthread_mutex_unlock(&spi_ov_lock);
    f->h.type = 0;
    free(f);
}

/* --- Completion ports ------------------------------------------------------------------- */

static void iocp_close(struct ndw_handle *h)
{
    struct spi_iocp *p = SPI_CONTAINER_OF(h, struct spi_iocp, h);

    if (p->file) {
        pthread_mutex_lock(&spi_ov_lock);
        p->file->iocp = NULL;
        pthread_mutex_unlock(&spi_ov_lock);
        spi_file_unref(p->file);
    }
    if (p->own_port)
        nd_port_close(p->own_port);
    pthread_mutex_destroy(&p->line_lock);
    p->h.type = 0;
    free(p);
}

static nd_port *iocp_port(struct spi_iocp *p)
{
    return p->file ? p->file->port : p->own_port;
}

SPI_API HANDLE CreateIoCompletionPort(HANDLE file, HANDLE existing, ULONG_PTR key, DWORD threads)
{
    struct spi_file *f = NULL;
    struct spi_iocp *p;

    (void)threads;
    if (file != INVALID_HANDLE_VALUE && !(f = spi_file_from_handle(file))) {
        ndw_set_last_error(ERROR_INVALID_HANDLE);
        return NULL;
    }
    if (existing || (f && f->iocp)) {
        /* One file per port: binding a second file, or a file twice, is not provided. */
        ndw_set_last_error(ERROR_NOT_SUPPORTED);
        return NULL;
    }
    p = calloc(1, sizeof(*p));
    if (!p) {
        ndw_set_last_error(ERROR_NOT_ENOUGH_MEMORY);
        return NULL;
    }
    p->h.type = NDW_HANDLE_IOCP;
    p->h.close = iocp_close;
    p->key = key;
    pthread_mutex_init(&p->line_lock, NULL);
    if (f) {
        spi_file_ref(f);
        p->file = f;
        pthread_mutex_lock(&spi_ov_lock);
        f->iocp = p;
        pthread_mutex_unlock(&spi_ov_lock);
    } else if (nd_port_create(&p->own_port) != ND_SUCCESS) {
        free(p);
        ndw_set_last_error(ERROR_NOT_ENOUGH_MEMORY);
        return NULL;
    }
    return p;
}

static struct spi_iocp *iocp_from_handle(HANDLE h)
{
    struct ndw_handle *hd = ndw_handle_get(h, NDW_HANDLE_IOCP);

    return hd ? SPI_CONTAINER_OF(hd, struct spi_iocp, h) : NULL;
}

SPI_API BOOL PostQueuedCompletionStatus(HANDLE port, DWORD bytes, ULONG_PTR key, LPOVERLAPPED ov)
{
    struct spi_iocp *p = iocp_from_handle(port);
    struct spi_ov *w;

    if (!p) {
        ndw_set_last_error(ERROR_INVALID_HANDLE);
        return FALSE;
    }
    w = calloc(1, sizeof(*w));
    if (!w) {
        ndw_set_last_error(ERROR_NOT_ENOUGH_MEMORY);
        return FALSE;
    }
    w->posted = true;
    w->user = ov;
    w->posted_bytes = bytes;
    w->posted_key = key;
    if (nd_port_post(iocp_port(p), &w->nd, ND_SUCCESS, bytes) != ND_SUCCESS) {
        free(w);
        ndw_set_last_error(ERROR_NOT_ENOUGH_MEMORY);
        return FALSE;
    }
    return TRUE;
}

/* A request's packet: its status reaches the OVERLAPPED, and a failure the thread's last
 * error, as GetQueuedCompletionStatus reports failed I/O on Windows. */
static BOOL deliver_request(struct spi_iocp *p, struct spi_ov *w, LPDWORD bytes, PULONG_PTR key,
                            LPOVERLAPPED *ov)
{
    nd_status st = w->nd.status;

    *bytes = (DWORD)w->nd.bytes;
    *key = p->key;
    *ov = w->user;
    pthread_mutex_lock(&spi_ov_lock);
    w->on_port = false;
    publish(w);
    maybe_free(w);
    pthread_mutex_unlock(&spi_ov_lock);
    if (ND_FAILED(st)) {
        ndw_set_last_error(ndw_error_from_status(st));
        return FALSE;
    }
    return TRUE;
}

static uint64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Line lock held: @w leaves the line; the new first waiter is told it is its turn. */
static void leave_line(struct spi_iocp *p, struct spi_waiter *w)
{
    struct spi_waiter **pp = &p->head, *prev = NULL;

    while (*pp && *pp != w) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (*pp)
        *pp = w->next;
    if (p->tail == w)
        p->tail = prev;
    if (p->head)
        pthread_cond_signal(&p->head->turn);
}

/* Wait behind the threads already waiting, then on the port, within @timeout_ms in all. */
static nd_status wait_in_line(struct spi_iocp *p, DWORD timeout_ms, nd_overlapped **nd)
{
    uint64_t deadline = timeout_ms == INFINITE ? 0 : now_ms() + timeout_ms;
    struct spi_waiter me = { .next = NULL };
    nd_status st = ND_TIMEOUT;

    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&me.turn, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_lock(&p->line_lock);
    if (p->tail)
        p->tail->next = &me;
    else
        p->head = &me;
    p->tail = &me;
    while (p->head != &me) {
        if (!deadline) {
            pthread_cond_wait(&me.turn, &p->line_lock);
            continue;
        }
        struct timespec ts = { .tv_sec = (time_t)(deadline / 1000), .tv_nsec = (long)(deadline % 1000) * 1000000 };
        if (pthread_cond_timedwait(&me.turn, &p->line_lock, &ts) == ETIMEDOUT && p->head != &me)
            goto out;
    }
    pthread_mutex_unlock(&p->line_lock);
    uint64_t now = deadline ? now_ms() : 0;
    int left = !deadline ? ND_INFINITE : now >= deadline ? 0 : (int)(deadline - now);
    st = nd_port_wait(iocp_port(p), left, nd);
    pthread_mutex_lock(&p->line_lock);
out:
    leave_line(p, &me);
    pthread_mutex_unlock(&p->line_lock);
    pthread_cond_destroy(&me.turn);
    return st;
}

SPI_API BOOL GetQueuedCompletionStatus(HANDLE port, LPDWORD bytes, PULONG_PTR key,
                                       LPOVERLAPPED *ov, DWORD timeout_ms)
{
    struct spi_iocp *p = iocp_from_handle(port);
    nd_overlapped *nd;
    struct spi_ov *w;
    nd_status st;

    if (!p || !bytes || !key || !ov) {
        if (ov)
            *ov = NULL;
        ndw_set_last_error(p ? ERROR_INVALID_PARAMETER : ERROR_INVALID_HANDLE);
        return FALSE;
    }
    st = wait_in_line(p, timeout_ms, &nd);
    if (st != ND_SUCCESS) {
        *ov = NULL;
        ndw_set_last_error(st == ND_TIMEOUT ? WAIT_TIMEOUT : ERROR_ABANDONED_WAIT_0);
        return FALSE;
    }
    w = SPI_CONTAINER_OF(nd, struct spi_ov, nd);
    if (!w->posted)
        return deliver_request(p, w, bytes, key, ov);
    *bytes = w->posted_bytes;
    *key = w->posted_key;
    *ov = w->user;
    free(w);
    return TRUE;
}
