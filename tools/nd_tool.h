/* SPDX-License-Identifier: MIT */
/* Shared pieces of the ND test programs: address parsing, set-up, waiting, timing. */
#ifndef ND_TOOL_H
#define ND_TOOL_H

#include <netdirect/netdirect.h>
#include "nd_syscount.h"

#include <arpa/inet.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <time.h>

struct tool_ep {
    nd_adapter *adapter;
    nd_port *port;
    nd_cq *cq;
    nd_qp *qp;
    nd_connector *conn;
    nd_listener *listener;
    nd_mr *mr;
    void *buf;
    size_t len;
    uint32_t token;
    uint32_t inline_threshold;      /* the adapter's inline_request_threshold */
    uint32_t extra_receives;        /* posted beyond a tool's own count (nd_pingpong -N) */
    uint32_t depth;                 /* of the QP's queues (tool_open) */
    bool blocking;
    bool pause_polls;               /* -P: a pause instruction after each empty poll */
    bool shared;                    /* buf from nd_alloc_memory (set before tool_open: -a) */
};

#define TOOL_DIE(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define TOOL_CHECK(expr) do { nd_status s_ = (expr); \
        if (ND_FAILED(s_)) TOOL_DIE("%s failed: %s (0x%08x)", #expr, nd_strerror(s_), (unsigned)s_); } while (0)

/* "<ip>[:port]" into @sin; the default port when none is given. */
static inline bool tool_parse_addr(const char *s, uint16_t def_port, struct sockaddr_in *sin)
{
    char ip[64];
    const char *colon = strrchr(s, ':');
    size_t n = colon ? (size_t)(colon - s) : strlen(s);

    if (n >= sizeof(ip))
        return false;
    memcpy(ip, s, n);
    ip[n] = 0;
    memset(sin, 0, sizeof(*sin));
    sin->sin_family = AF_INET;
    sin->sin_port = htons(colon ? (uint16_t)atoi(colon + 1) : def_port);
    return inet_pton(AF_INET, ip, &sin->sin_addr) == 1;
}

/*
 * The local address a connection to @dest leaves from (the route's source address): what a
 * client opens its adapter on and binds its connector to. A connected UDP socket asks the
 * kernel's routing table; nothing is sent.
 */
static inline bool tool_local_addr(const struct sockaddr_in *dest, struct sockaddr_in *local)
{
    socklen_t len = sizeof(*local);
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    bool ok = fd >= 0 && connect(fd, (const struct sockaddr *)dest, sizeof(*dest)) == 0 &&
              getsockname(fd, (struct sockaddr *)local, &len) == 0;

    if (fd >= 0)
        close(fd);
    local->sin_port = 0;
    return ok;
}

/* The options ND's tools share; each tool accepts the subset its letters name. */
struct tool_opts {
    bool server, json, blocking, read, shared_mem, pause_polls, watch_only, sdk_order, no_inline, turn_work;
    struct sockaddr_in addr;
    uint32_t nsge, depth, size, max_size, iters;
};

/*
 * -s|-c <ip>[:port] and --json always; then any of -b -p (blocking, polling), -w -r (Write,
 * Read), -n sge, -q depth, -S size, -M max size, -i iterations, -a (buffers from
 * nd_alloc_memory, which same-host peers map), -P (polling: a pause instruction after each
 * empty poll, as a spin loop on a CPU's sibling thread should), -W (watch memory without
 * polling, as ND's ndrpingpong does), -N (the ND SDK program's order of calls), -I (no
 * inline data), -T (perftest's own work of a turn, perftest_turn.h) that @accept lists. The caller sets the
 * defaults in @o first. false: a bad or incomplete command line.
 */
static inline bool tool_parse(int argc, char **argv, const char *accept, uint16_t def_port, struct tool_opts *o)
{
    static const struct option longs[] = { { "json", no_argument, NULL, 'j' }, { 0 } };
    char spec[40] = "s:c:";
    size_t n = strlen(spec);
    bool have = false;
    int c;

    for (const char *p = accept; *p && n < sizeof(spec) - 3; p++) {
        spec[n++] = *p;
        if (strchr("nqSMi", *p))
            spec[n++] = ':';
    }
    spec[n] = 0;
    while ((c = getopt_long(argc, argv, spec, longs, NULL)) != -1) {
        switch (c) {
        case 's': case 'c':
            o->server = c == 's';
            have = tool_parse_addr(optarg, def_port, &o->addr);
            break;
        case 'b': case 'p': o->blocking = c == 'b'; break;
        case 'w': case 'r': o->read = c == 'r'; break;
        case 'n': o->nsge = (uint32_t)atoi(optarg); break;
        case 'q': o->depth = (uint32_t)atoi(optarg); break;
        case 'S': o->size = (uint32_t)atoi(optarg); break;
        case 'M': o->max_size = (uint32_t)atoi(optarg); break;
        case 'i': o->iters = (uint32_t)atoi(optarg); break;
        case 'j': o->json = true; break;
        case 'a': o->shared_mem = true; break;
        case 'P': o->pause_polls = true; break;
        case 'W': o->watch_only = true; break;
        case 'N': o->sdk_order = true; break;
        case 'I': o->no_inline = true; break;
        case 'T': o->turn_work = true; break;
        default: return false;
        }
    }
    return have;
}

/* The sizes to run: -S alone, or the powers of two up to -M. Returns how many (<= 32). */
static inline uint32_t tool_sizes(const struct tool_opts *o, uint32_t *sizes)
{
    uint32_t n = 0;

    if (o->size)
        sizes[n++] = o->size;
    else
        for (uint32_t s = 1; s <= o->max_size && n < 32; s *= 2)
            sizes[n++] = s;
    return n;
}

/* Bandwidth runs move about 256 MiB per size: -i, or that many operations within [100, cap]. */
static inline uint32_t tool_bw_iters(const struct tool_opts *o, uint32_t size, uint32_t cap)
{
    uint64_t n = (256ull << 20) / size;

    if (o->iters)
        return o->iters;
    return n < 100 ? 100 : n > cap ? cap : (uint32_t)n;
}

static inline double tool_now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static inline double tool_cpu_us(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec * 1e6 + ru.ru_utime.tv_usec + ru.ru_stime.tv_sec * 1e6 + ru.ru_stime.tv_usec;
}

/* Requests the tools wait for with nd_get_overlapped_result carry ND_OV_FLAG_NO_PORT:
 * nobody dequeues the port, and completions queued there would pile up for good. */
static inline nd_status tool_wait(nd_status st, nd_overlapped *ov)
{
    return st == ND_PENDING ? nd_get_overlapped_result(ov, 1) : st;
}

/* Adapter, port, one CQ for both queues, a QP, a connector, a registered buffer (from
 * nd_alloc_memory when the caller set e->shared). */
static inline void tool_open(struct tool_ep *e, const struct sockaddr_in *local, size_t len, uint32_t depth,
                             uint32_t nsge)
{
    nd_adapter_info info = { .info_version = ND_VERSION_2 };
    uint32_t size = sizeof(info);
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };

    struct sockaddr_in src = *local;

    /* A server opens the adapter of its own address; a client the one its route leaves by. */
    if (nd_open_adapter_by_address((const struct sockaddr *)local, sizeof(*local), &e->adapter) != ND_SUCCESS) {
        if (!tool_local_addr(local, &src))
            TOOL_DIE("no route to %s", inet_ntoa(local->sin_addr));
        TOOL_CHECK(nd_open_adapter_by_address((const struct sockaddr *)&src, sizeof(src), &e->adapter));
    }
    TOOL_CHECK(nd_adapter_query(e->adapter, &info, &size));
    e->inline_threshold = info.inline_request_threshold;
    TOOL_CHECK(nd_adapter_create_overlapped_file(e->adapter, &e->port));
    TOOL_CHECK(nd_adapter_create_completion_queue(e->adapter, e->port, depth * 2, 0, 0, &e->cq));
    e->depth = depth;
    TOOL_CHECK(nd_adapter_create_queue_pair(e->adapter, e->cq, e->cq, e, depth, depth, nsge, nsge,
                                            info.inline_request_threshold, &e->qp));
    TOOL_CHECK(nd_adapter_create_connector(e->adapter, e->port, &e->conn));
    e->len = len;
    if (e->shared)
        TOOL_CHECK(nd_alloc_memory(len, &e->buf));
    else
        e->buf = aligned_alloc(4096, (len + 4095) & ~(size_t)4095);
    if (!e->buf)
        TOOL_DIE("out of memory");
    memset(e->buf, 0, len);
    TOOL_CHECK(nd_adapter_create_memory_region(e->adapter, e->port, &e->mr));
    TOOL_CHECK(nd_mr_register(e->mr, e->buf, len, ND_MR_FLAG_ALLOW_REMOTE_WRITE | ND_MR_FLAG_ALLOW_REMOTE_READ |
                              ND_MR_FLAG_RDMA_READ_SINK, &ov));
    e->token = nd_mr_get_local_token(e->mr);
}

static inline void tool_close(struct tool_ep *e)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };

    nd_connector_disconnect(e->conn, &ov);
    nd_connector_close(e->conn);
    if (e->listener)
        nd_listener_close(e->listener);
    nd_qp_close(e->qp);
    nd_mr_close(e->mr);
    nd_cq_close(e->cq);
    nd_port_close(e->port);
    nd_adapter_close(e->adapter);
    if (e->shared)
        nd_free_memory(e->buf);
    else
        free(e->buf);
}

/* Listen, take one request (its private data into @in, if any) and accept it with @pdata. */
static inline void tool_accept_pd(struct tool_ep *e, const struct sockaddr_in *addr, const void *pdata, uint32_t plen,
                                  void *in, uint32_t *in_len)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };

    TOOL_CHECK(nd_adapter_create_listener(e->adapter, e->port, &e->listener));
    TOOL_CHECK(nd_listener_bind(e->listener, (const struct sockaddr *)addr, sizeof(*addr)));
    TOOL_CHECK(nd_listener_listen(e->listener, 0));
    fprintf(stderr, "listening on %s:%u\n", inet_ntoa(addr->sin_addr), ntohs(addr->sin_port));
    TOOL_CHECK(tool_wait(nd_listener_get_connection_request(e->listener, e->conn, &ov), &ov));
    if (in)
        TOOL_CHECK(nd_connector_get_private_data(e->conn, in, in_len));
    TOOL_CHECK(tool_wait(nd_connector_accept(e->conn, e->qp, 8, 8, pdata, plen, &ov), &ov));
}

static inline void tool_accept(struct tool_ep *e, const struct sockaddr_in *addr, const void *pdata, uint32_t plen)
{
    tool_accept_pd(e, addr, pdata, plen, NULL, NULL);
}

/* Connect with @out (private data, may be NULL), retrying while the server is not
 * listening yet (it may start after us); the server's private data lands in @in. */
static inline void tool_connect_pd(struct tool_ep *e, const struct sockaddr_in *dest, const void *out, uint32_t out_len,
                                   void *pdata, uint32_t *plen)
{
    struct sockaddr_in local;
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    nd_status st;

    if (!tool_local_addr(dest, &local))
        TOOL_DIE("no route to %s", inet_ntoa(dest->sin_addr));
    TOOL_CHECK(nd_connector_bind(e->conn, (const struct sockaddr *)&local, sizeof(local)));
    for (int tries = 0;; tries++) {
        st = tool_wait(nd_connector_connect(e->conn, e->qp, (const struct sockaddr *)dest, sizeof(*dest), 8, 8,
                                            out, out_len, &ov), &ov);
        if (st != ND_CONNECTION_REFUSED || tries == 5000)
            break;
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);   /* the server's listener is not up yet: a user-facing retry */
    }
    TOOL_CHECK(st);
    if (pdata)
        TOOL_CHECK(nd_connector_get_private_data(e->conn, pdata, plen));
    TOOL_CHECK(tool_wait(nd_connector_complete_connect(e->conn, &ov), &ov));
}

static inline void tool_connect(struct tool_ep *e, const struct sockaddr_in *dest, void *pdata, uint32_t *plen)
{
    tool_connect_pd(e, dest, NULL, 0, pdata, plen);
}

/*
 * The next completion, whatever its status: spin on the CQ, or (-b) arm it and wait on the
 * Notify's overlapped (GetOverlappedResult with wait; the wait spins briefly, then sleeps).
 * NO_PORT: the Notify is reaped here, so it must not also pile up on the port.
 */
static inline nd_result tool_next_any(struct tool_ep *e)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    nd_result r;

    for (;;) {
        if (nd_cq_get_results(e->cq, &r, 1) == 1)
            return r;
#if defined(__x86_64__) || defined(__i386__)
        if (e->pause_polls)
            __builtin_ia32_pause();
#endif
        if (e->blocking)
            TOOL_CHECK(tool_wait(nd_cq_notify(e->cq, ND_CQ_NOTIFY_ANY, &ov), &ov));
    }
}

/* The next completion, which must have succeeded. */
static inline nd_result tool_next(struct tool_ep *e)
{
    nd_result r = tool_next_any(e);

    if (r.status != ND_SUCCESS)
        TOOL_DIE("completion failed: %s (type %d)", nd_strerror(r.status), r.request_type);
    return r;
}

#endif
