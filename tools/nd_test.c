// SPDX-License-Identifier: MIT
/*
 * nd_test: ND's conformance behaviours on Linux, client and server.
 *   nd_test -s <ip>[:port]                serve cases a client asks for (default port 54350)
 *   nd_test -c <ip>[:port] [-t <Name>]... run the named cases (default: all) against it
 *   nd_test --list                        the cases
 * Each check prints the status it got and the one it expected; the exit status is 0 when
 * every check on both sides passed. A case that does not finish in --timeout seconds
 * (default 60) fails the run.
 */
#include "nd_test.h"
#include "nd_tool.h"

#include <pthread.h>
#include <signal.h>

static const char *current_step = "";
static const char *current_case = "";
static unsigned case_timeout_s = 60;

void nt_step(const char *step)
{
    current_step = step;
}

/* The watchdog: a case that blocks past its bound fails the whole run, saying where. */
static void on_alarm(int sig)
{
    char msg[256];
    int n = snprintf(msg, sizeof(msg), "%s: FAILED: timed out after %u s in \"%s\"\n", current_case,
                     case_timeout_s, current_step);

    (void)sig;
    if (n > 0 && write(STDOUT_FILENO, msg, (size_t)n) < 0)
        _exit(2);
    _exit(1);
}

/* ndmpic's ranks run in threads of their own and check concurrently. */
static pthread_mutex_t check_lock = PTHREAD_MUTEX_INITIALIZER;

bool nt_check(struct nt *t, const char *step, bool ok, const char *detail)
{
    pthread_mutex_lock(&check_lock);
    t->checks++;
    if (!ok)
        t->failures++;
    printf("  %s %s: %s%s%s\n", t->server ? "[server]" : "[client]", step, ok ? "ok" : "FAILED",
           detail ? ": " : "", detail ? detail : "");
    fflush(stdout);
    pthread_mutex_unlock(&check_lock);
    return ok;
}

bool nt_expect(struct nt *t, const char *step, nd_status got, nd_status want)
{
    char detail[160];

    snprintf(detail, sizeof(detail), "got %s (0x%08x), expected %s", nd_strerror(got), (unsigned)got,
             nd_strerror(want));
    return nt_check(t, step, got == want, detail);
}

_Noreturn void nt_abort(struct nt *t, const char *why, nd_status st)
{
    printf("%s: FAILED: set-up step %s returned %s (0x%08x) on the %s\n", current_case, why, nd_strerror(st),
           (unsigned)st, t->server ? "server" : "client");
    exit(1);
}

nd_status nt_wait(nd_status st, nd_overlapped *ov)
{
    return st == ND_PENDING ? nd_get_overlapped_result(ov, 1) : st;
}

nd_result nt_next(nd_cq *cq, int ms)
{
    double end = tool_now_us() + ms * 1e3;
    nd_result r;

    for (;;) {
        if (nd_cq_get_results(cq, &r, 1) == 1)
            return r;
        if (tool_now_us() > end)
            break;
        /* A conformance tool, not a benchmark: poll gently so two sides share two CPUs. */
        struct timespec ts = { 0, 50000 };
        nanosleep(&ts, NULL);
    }
    memset(&r, 0, sizeof(r));
    r.status = ND_TIMEOUT;
    return r;
}

nd_status nt_post_recv(struct nt_ep *e, void *ctx, size_t off, uint32_t len)
{
    nd_sge sge = { e->buf + off, len, e->token };

    return nd_qp_receive(e->qp, ctx, &sge, len ? 1 : 0);
}

nd_status nt_post_send(struct nt_ep *e, void *ctx, size_t off, uint32_t len, uint32_t flags)
{
    nd_sge sge = { e->buf + off, len, e->token };

    return nd_qp_send(e->qp, ctx, &sge, len ? 1 : 0, flags);
}

struct sockaddr_in nt_server_addr(const struct nt *t, uint16_t port)
{
    struct sockaddr_in sin = t->addr;

    sin.sin_port = htons(port);
    return sin;
}

uint16_t nt_listen_any(struct nt *t, nd_port *port, nd_listener **l)
{
    struct sockaddr_in sin = t->addr;
    uint32_t len = sizeof(sin);

    sin.sin_addr = t->my_ip;
    sin.sin_port = 0;
    NT_SETUP(t, nd_adapter_create_listener(t->adapter, port, l));
    NT_SETUP(t, nd_listener_bind(*l, (struct sockaddr *)&sin, sizeof(sin)));
    NT_SETUP(t, nd_listener_listen(*l, 0));
    NT_SETUP(t, nd_listener_get_local_address(*l, (struct sockaddr *)&sin, &len));
    return ntohs(sin.sin_port);
}

void nt_announce(struct nt *t, uint16_t port)
{
    nt_ctl_send(t, NT_CTL_READY);
    nt_ctl_send(t, port);
}

uint16_t nt_await_listener(struct nt *t)
{
    nt_step("wait for the server's listener");
    if (nt_ctl_recv(t) != NT_CTL_READY)
        nt_abort(t, "control message READY", ND_INVALID_DEVICE_STATE);
    return (uint16_t)nt_ctl_recv(t);
}

void nt_ep_open(struct nt *t, struct nt_ep *e, size_t len, uint32_t mr_flags, uint32_t rq_depth, uint32_t iq_depth)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    uint32_t depth = rq_depth > iq_depth ? rq_depth : iq_depth;

    memset(e, 0, sizeof(*e));
    NT_SETUP(t, nd_adapter_create_completion_queue(t->adapter, t->port, depth * 4, 0, 0, &e->cq));
    NT_SETUP(t, nd_adapter_create_queue_pair(t->adapter, e->cq, e->cq, e, rq_depth, iq_depth, 1, 1, 0, &e->qp));
    NT_SETUP(t, nd_adapter_create_connector(t->adapter, t->port, &e->conn));
    NT_SETUP(t, nd_adapter_create_memory_region(t->adapter, t->port, &e->mr));
    e->len = len;
    e->buf = aligned_alloc(4096, (len + 4095) & ~(size_t)4095);
    if (!e->buf)
        nt_abort(t, "aligned_alloc", ND_NO_MEMORY);
    memset(e->buf, 0, len);
    NT_SETUP(t, nt_wait(nd_mr_register(e->mr, e->buf, len, mr_flags, &ov), &ov));
    e->token = nd_mr_get_local_token(e->mr);
}

void nt_ep_close(struct nt *t, struct nt_ep *e)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };

    (void)t;
    if (e->conn)
        nd_connector_close(e->conn);
    if (e->listener)
        nd_listener_close(e->listener);
    if (e->qp)
        nd_qp_close(e->qp);
    if (e->mw)
        nd_mw_close(e->mw);
    if (e->mr) {
        nt_wait(nd_mr_deregister(e->mr, &ov), &ov);
        nd_mr_close(e->mr);
    }
    if (e->cq)
        nd_cq_close(e->cq);
    free(e->buf);
    memset(e, 0, sizeof(*e));
}

void nt_ep_listen(struct nt *t, struct nt_ep *e)
{
    nt_step("listen");
    nt_announce(t, nt_listen_any(t, t->port, &e->listener));
}

void nt_ep_get_request(struct nt *t, struct nt_ep *e)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };

    nt_step("GetConnectionRequest");
    NT_SETUP(t, nt_wait(nd_listener_get_connection_request(e->listener, e->conn, &ov), &ov));
}

void nt_ep_take(struct nt *t, struct nt_ep *e)
{
    nt_ep_listen(t, e);
    nt_ep_get_request(t, e);
}

void nt_ep_open_small(struct nt *t, struct nt_ep *e)
{
    nt_ep_open(t, e, 4096, ND_MR_FLAG_ALLOW_LOCAL_WRITE, 1, 1);
}

nd_status nt_ep_accept(struct nt *t, struct nt_ep *e)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };

    (void)t;
    nt_step("Accept");
    return nt_wait(nd_connector_accept(e->conn, e->qp, 1, 1, NULL, 0, &ov), &ov);
}

nd_status nt_ep_connect(struct nt *t, struct nt_ep *e, const void *pdata, uint32_t plen)
{
    struct sockaddr_in dest, local;
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };

    if (!e->bound) {
        e->port = nt_await_listener(t);
        local = t->addr;
        local.sin_addr = t->my_ip;
        local.sin_port = 0;
        NT_SETUP(t, nd_connector_bind(e->conn, (struct sockaddr *)&local, sizeof(local)));
        e->bound = true;
    }
    dest = nt_server_addr(t, e->port);
    nt_step("Connect");
    return nt_wait(nd_connector_connect(e->conn, e->qp, (struct sockaddr *)&dest, sizeof(dest), 1, 1, pdata, plen,
                                        &ov), &ov);
}

void nt_ep_connect_complete(struct nt *t, struct nt_ep *e)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };

    NT_SETUP(t, nt_ep_connect(t, e, NULL, 0));
    nt_step("CompleteConnect");
    NT_SETUP(t, nt_wait(nd_connector_complete_connect(e->conn, &ov), &ov));
}

/* ---- the control connection ---- */

enum { CTL_RECVS = 8, CTL_SLOT = 64, CTL_SEND_OFF = CTL_RECVS * CTL_SLOT };

/* Messages that arrived while we waited for our own send to complete. */
static uint32_t ctl_stash[CTL_RECVS];
static unsigned ctl_stashed;

static uint32_t ctl_take(struct nt *t, const nd_result *r)
{
    uintptr_t slot = (uintptr_t)r->request_context;
    uint32_t msg;

    if (r->status != ND_SUCCESS || r->bytes_transferred != sizeof(msg) || slot >= CTL_RECVS) {
        printf("%s: FAILED: the control connection broke (%s; request type %d, slot %zu, %u bytes)\n",
               current_case, nd_strerror(r->status), (int)r->request_type, (size_t)slot, r->bytes_transferred);
        exit(1);
    }
    memcpy(&msg, t->ctl.buf + slot * CTL_SLOT, sizeof(msg));
    NT_SETUP(t, nt_post_recv(&t->ctl, (void *)slot, slot * CTL_SLOT, CTL_SLOT));
    return msg;
}

static nd_result ctl_next(struct nt *t)
{
    /* Bounded by the case watchdog; between cases the server waits for its client. */
    for (;;) {
        nd_result r = nt_next(t->ctl.cq, 1000);

        if (r.status != ND_TIMEOUT)
            return r;
    }
}

/* Has the peer's QUIT arrived (stashed while we waited for a Send of ours)? */
static bool ctl_quit_stashed(void)
{
    for (unsigned i = 0; i < ctl_stashed; i++)
        if (ctl_stash[i] == NT_CTL_QUIT)
            return true;
    return false;
}

void nt_ctl_send(struct nt *t, uint32_t msg)
{
    memcpy(t->ctl.buf + CTL_SEND_OFF, &msg, sizeof(msg));
    NT_SETUP(t, nt_post_send(&t->ctl, (void *)(uintptr_t)CTL_RECVS, CTL_SEND_OFF, sizeof(msg), 0));
    for (;;) {
        nd_result r = ctl_next(t);
        /* QUIT is the last word: its sender may close before either side reaps its own
         * Send's completion, and the receives still posted then flush. The server met
         * that too: the client's QUIT arrived while it waited on its verdict's Send, and
         * the flushes came out of the CQ before that Send's completion. */
        bool ended = (msg == NT_CTL_QUIT || ctl_quit_stashed()) && r.status == ND_CANCELED;

        if (r.request_type == ND_REQUEST_TYPE_SEND) {
            if (r.status != ND_SUCCESS && !ended)
                nt_abort(t, "a control message", r.status);
            return;
        }
        if (ended)
            continue;
        uint32_t got = ctl_take(t, &r);
        if (ctl_stashed < CTL_RECVS)
            ctl_stash[ctl_stashed++] = got;
    }
}

uint32_t nt_ctl_recv(struct nt *t)
{
    if (ctl_stashed) {
        uint32_t msg = ctl_stash[0];

        memmove(ctl_stash, ctl_stash + 1, --ctl_stashed * sizeof(ctl_stash[0]));
        return msg;
    }
    nd_result r = ctl_next(t);
    return ctl_take(t, &r);
}

void nt_ctl_barrier(struct nt *t)
{
    nt_step("barrier");
    nt_ctl_send(t, NT_CTL_GO);
    if (nt_ctl_recv(t) != NT_CTL_GO)
        nt_abort(t, "control barrier", ND_INVALID_DEVICE_STATE);
}

static void ctl_accept(struct nt *t)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    nd_listener *l;

    NT_SETUP(t, nd_adapter_create_listener(t->adapter, t->port, &l));
    NT_SETUP(t, nd_listener_bind(l, (struct sockaddr *)&t->addr, sizeof(t->addr)));
    NT_SETUP(t, nd_listener_listen(l, 0));
    struct sockaddr_in bound;
    uint32_t blen = sizeof(bound);
    NT_SETUP(t, nd_listener_get_local_address(l, (struct sockaddr *)&bound, &blen));
    fprintf(stderr, "nd_test: listening on %s:%u\n", inet_ntoa(bound.sin_addr), ntohs(bound.sin_port));
    NT_SETUP(t, nt_wait(nd_listener_get_connection_request(l, t->ctl.conn, &ov), &ov));
    NT_SETUP(t, nt_wait(nd_connector_accept(t->ctl.conn, t->ctl.qp, 0, 0, NULL, 0, &ov), &ov));
    NT_SETUP(t, nd_listener_close(l));
    struct sockaddr_in peer;
    uint32_t len = sizeof(peer);
    NT_SETUP(t, nd_connector_get_peer_address(t->ctl.conn, (struct sockaddr *)&peer, &len));
    t->peer_ip = peer.sin_addr;
}

static void ctl_connect(struct nt *t)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    struct sockaddr_in local;
    nd_status st;

    local = t->addr;
    local.sin_addr = t->my_ip;
    local.sin_port = 0;
    NT_SETUP(t, nd_connector_bind(t->ctl.conn, (struct sockaddr *)&local, sizeof(local)));
    /* The server may start after us: retry a refused connect for a while (a user-facing wait). */
    for (int tries = 0;; tries++) {
        st = nt_wait(nd_connector_connect(t->ctl.conn, t->ctl.qp, (struct sockaddr *)&t->addr, sizeof(t->addr), 0, 0,
                                          NULL, 0, &ov), &ov);
        if (st != ND_CONNECTION_REFUSED || tries == 10000)
            break;
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
    }
    NT_SETUP(t, st);
    NT_SETUP(t, nt_wait(nd_connector_complete_connect(t->ctl.conn, &ov), &ov));
    t->peer_ip = t->addr.sin_addr;
}

static void ctl_open(struct nt *t)
{
    struct nt_ep *e = &t->ctl;

    current_case = "control connection";
    alarm(t->server ? 0 : case_timeout_s);
    nt_ep_open(t, e, CTL_SEND_OFF + CTL_SLOT, ND_MR_FLAG_ALLOW_LOCAL_WRITE, CTL_RECVS, 2);
    for (uintptr_t i = 0; i < CTL_RECVS; i++)
        NT_SETUP(t, nt_post_recv(e, (void *)i, i * CTL_SLOT, CTL_SLOT));
    if (t->server)
        ctl_accept(t);
    else
        ctl_connect(t);
}

/* ---- the case table and the two drivers ---- */

static const struct nt_case *case_at(unsigned i)
{
    if (i < nt_conn_case_count)
        return &nt_conn_cases[i];
    i -= nt_conn_case_count;
    return i < nt_mem_case_count ? &nt_mem_cases[i] : NULL;
}

static int case_index(const char *name)
{
    for (unsigned i = 0; case_at(i); i++)
        if (strcasecmp(case_at(i)->name, name) == 0)
            return (int)i;
    return -1;
}

static unsigned run_half(struct nt *t, const struct nt_case *c)
{
    void (*half)(struct nt *) = t->server ? c->server : c->client;

    current_case = c->name;
    t->name = c->name;
    t->failures = 0;
    alarm(case_timeout_s);
    if (half)
        half(t);
    return t->failures;
}

static int serve(struct nt *t, int only)
{
    unsigned failed_cases = 0;

    for (;;) {
        current_case = "waiting for the client";
        alarm(0);
        uint32_t msg = nt_ctl_recv(t);
        if (msg == NT_CTL_QUIT)
            return failed_cases ? 1 : 0;
        const struct nt_case *c = case_at(msg);
        if (!c || (only >= 0 && (int)msg != only)) {
            printf("client asked for case %u, which this server does not run\n", msg);
            return 1;
        }
        unsigned failed = run_half(t, c);
        printf("%s: server side %s\n", c->name, failed ? "FAILED" : "passed");
        failed_cases += failed != 0;
        fflush(stdout);
        nt_ctl_send(t, failed);
    }
}

static int drive(struct nt *t, const int *which, unsigned n)
{
    unsigned failed_cases = 0;

    for (unsigned i = 0; i < n; i++) {
        const struct nt_case *c = case_at((unsigned)which[i]);

        printf("%s: %s\n", c->name, c->what);
        nt_ctl_send(t, (uint32_t)which[i]);
        unsigned failed = run_half(t, c);
        nt_step("the server's verdict");
        failed += nt_ctl_recv(t);
        alarm(0);
        printf("%s: %s\n", c->name, failed ? "FAILED" : "passed");
        fflush(stdout);
        failed_cases += failed != 0;
    }
    nt_ctl_send(t, NT_CTL_QUIT);
    printf("%u of %u cases passed\n", n - failed_cases, n);
    return failed_cases ? 1 : 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: nd_test -s|-c <ip>[:port] [-t <case>]... [--timeout <s>]\n"
                    "       nd_test --list\n");
    exit(2);
}

int main(int argc, char **argv)
{
    static const struct option longs[] = {
        { "list", no_argument, NULL, 'L' }, { "timeout", required_argument, NULL, 'T' }, { 0 } };
    struct nt t = { 0 };
    int which[64], n = 0, c;
    bool have_addr = false;

    while ((c = getopt_long(argc, argv, "s:c:t:", longs, NULL)) != -1) {
        switch (c) {
        case 's': case 'c':
            t.server = c == 's';
            have_addr = tool_parse_addr(optarg, 54350, &t.addr);
            if (!have_addr)
                usage();
            break;
        case 't':
            if (n == (int)(sizeof(which) / sizeof(which[0])) || (which[n] = case_index(optarg)) < 0) {
                fprintf(stderr, "nd_test: no case named %s (see --list)\n", optarg);
                return 2;
            }
            n++;
            break;
        case 'L':
            for (unsigned i = 0; case_at(i); i++)
                printf("%-20s %s\n", case_at(i)->name, case_at(i)->what);
            return 0;
        case 'T': case_timeout_s = (unsigned)atoi(optarg); break;
        default: usage();
        }
    }
    if (!have_addr || optind != argc || (t.server && n > 1))
        usage();
    if (!t.server && n == 0)
        for (unsigned i = 0; case_at(i); i++)
            which[n++] = (int)i;
    signal(SIGALRM, on_alarm);
    setvbuf(stdout, NULL, _IOLBF, 0);

    struct sockaddr_in local = t.addr;
    uint32_t size = sizeof(t.info);
    if (!t.server && !tool_local_addr(&t.addr, &local)) {
        fprintf(stderr, "nd_test: no route to %s\n", inet_ntoa(t.addr.sin_addr));
        return 1;
    }
    t.my_ip = local.sin_addr;
    t.info.info_version = ND_VERSION_2;
    current_case = "set-up";
    NT_SETUP(&t, nd_open_adapter_by_address((struct sockaddr *)&local, sizeof(local), &t.adapter));
    NT_SETUP(&t, nd_adapter_query(t.adapter, &t.info, &size));
    NT_SETUP(&t, nd_port_create(&t.port));
    ctl_open(&t);
    int rc = t.server ? serve(&t, n ? which[0] : -1) : drive(&t, which, (unsigned)n);
    alarm(0);
    nt_ep_close(&t, &t.ctl);
    nd_port_close(t.port);
    nd_adapter_close(t.adapter);
    return rc;
}
