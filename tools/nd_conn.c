// SPDX-License-Identifier: MIT
/*
 * nd_conn: connection set-up rate, as ND's ndconn. Each connection lives a full life:
 * create a QP and a connector, connect, 4 KiB each way, disconnect, destroy. Each of -t
 * threads runs one connection at a time, with its own CQ and buffer on the shared adapter.
 *   nd_conn -s <ip>[:port] [-t threads] [-n count]      server (until killed, or -n connections)
 *   nd_conn -c <ip>[:port] [-t threads] [-d seconds] [-n count] [--json]
 */
#include "nd_tool.h"

#include <pthread.h>

#define DEFAULT_PORT 54321
#define MSG 4096

struct timing {
    double connect, complete, accept, disconnect;
    uint64_t n, failures, timeouts;
};

static nd_qp *make_qp(struct tool_ep *e)
{
    nd_qp *qp;

    TOOL_CHECK(nd_adapter_create_queue_pair(e->adapter, e->cq, e->cq, e, 4, 4, 1, 1, 0, &qp));
    return qp;
}

/* The next completion. The library's CQ wait spins a moment before it sleeps, and only
 * while no other thread of this process spins: with -t threads on each side there are
 * more waiters than CPUs, and a spin of our own here cost 10% at 2 threads. (Yielding
 * while spinning gained 12% at 2 threads on an idle machine, but with other busy
 * processes each yield waits out their time slices: 3x slower. Not done.) */
static nd_result next_result(struct tool_ep *e)
{
    nd_result r;

    while (nd_cq_get_results(e->cq, &r, 1) == 0) {
        nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };

        if (tool_wait(nd_cq_notify(e->cq, ND_CQ_NOTIFY_ANY, &ov), &ov) != ND_SUCCESS)
            TOOL_DIE("CQ notify failed");
    }
    return r;
}

/* One client connection's whole life; false when the server refused or went away. */
/* The client's source address (the route's to the server), found once. */
static struct sockaddr_in client_src;

static bool client_once(struct tool_ep *e, const struct sockaddr_in *dest, struct timing *t)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    nd_connector *c;
    nd_qp *qp = make_qp(e);
    nd_sge sge = { e->buf, MSG, e->token }, rsge = { (uint8_t *)e->buf + MSG, MSG, e->token };
    nd_status st;
    double t0;

    TOOL_CHECK(nd_adapter_create_connector(e->adapter, e->port, &c));
    TOOL_CHECK(nd_connector_bind(c, (struct sockaddr *)&client_src, sizeof(client_src)));
    TOOL_CHECK(nd_qp_receive(qp, NULL, &rsge, 1));
    t0 = tool_now_us();
    st = tool_wait(nd_connector_connect(c, qp, (struct sockaddr *)dest, sizeof(*dest), 0, 0, NULL, 0, &ov), &ov);
    t->connect += tool_now_us() - t0;
    if (st == ND_SUCCESS) {
        t0 = tool_now_us();
        st = tool_wait(nd_connector_complete_connect(c, &ov), &ov);
        t->complete += tool_now_us() - t0;
    }
    if (st == ND_SUCCESS) {
        TOOL_CHECK(nd_qp_send(qp, NULL, &sge, 1, 0));
        for (int got = 0; got < 2;) {
            nd_result r = next_result(e);

            if (r.status != ND_SUCCESS)
                TOOL_DIE("data exchange failed: %s", nd_strerror(r.status));
            got++;
        }
        t0 = tool_now_us();
        st = tool_wait(nd_connector_disconnect(c, &ov), &ov);
        t->disconnect += tool_now_us() - t0;
    }
    t->n += st == ND_SUCCESS;
    t->failures += st != ND_SUCCESS;
    t->timeouts += st == ND_IO_TIMEOUT;
    nd_connector_close(c);
    nd_qp_close(qp);
    while (nd_cq_get_results(e->cq, &(nd_result){ 0 }, 1))
        ;
    return st == ND_SUCCESS;
}

static void server_once(struct tool_ep *e, struct timing *t)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    nd_connector *c;
    nd_qp *qp = make_qp(e);
    nd_sge sge = { e->buf, MSG, e->token }, rsge = { (uint8_t *)e->buf + MSG, MSG, e->token };
    double t0;

    TOOL_CHECK(nd_adapter_create_connector(e->adapter, e->port, &c));
    TOOL_CHECK(nd_qp_receive(qp, NULL, &rsge, 1));
    TOOL_CHECK(tool_wait(nd_listener_get_connection_request(e->listener, c, &ov), &ov));
    t0 = tool_now_us();
    nd_status st = tool_wait(nd_connector_accept(c, qp, 0, 0, NULL, 0, &ov), &ov);
    t->accept += tool_now_us() - t0;
    if (st == ND_SUCCESS) {
        nd_result r = next_result(e);

        if (r.status == ND_SUCCESS) {
            TOOL_CHECK(nd_qp_send(qp, NULL, &sge, 1, 0));
            next_result(e);
        }
        tool_wait(nd_connector_notify_disconnect(c, &ov), &ov);
        nd_connector_disconnect(c, &ov);
    }
    t->n += st == ND_SUCCESS;
    t->failures += st != ND_SUCCESS;
    nd_connector_close(c);
    nd_qp_close(qp);
    while (nd_cq_get_results(e->cq, &(nd_result){ 0 }, 1))
        ;
}

struct worker {
    pthread_t thread;
    struct tool_ep e;
    struct timing t;
    const struct sockaddr_in *addr;
    double seconds;
    uint64_t count;                 /* connections for this worker (0: no limit) */
};

/* A worker's own port, CQ and registered buffer, on the shared adapter. */
static void worker_open(struct tool_ep *e, nd_adapter *a)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };

    e->adapter = a;
    TOOL_CHECK(nd_adapter_create_overlapped_file(a, &e->port));
    TOOL_CHECK(nd_adapter_create_completion_queue(a, e->port, 64, 0, 0, &e->cq));
    e->buf = aligned_alloc(4096, 2 * MSG);
    if (!e->buf)
        TOOL_DIE("out of memory");
    TOOL_CHECK(nd_adapter_create_memory_region(a, e->port, &e->mr));
    TOOL_CHECK(nd_mr_register(e->mr, e->buf, 2 * MSG, ND_MR_FLAG_ALLOW_LOCAL_WRITE, &ov));
    e->token = nd_mr_get_local_token(e->mr);
}

static void worker_close(struct tool_ep *e)
{
    nd_mr_close(e->mr);
    nd_cq_close(e->cq);
    nd_port_close(e->port);
    free(e->buf);
}

static void *client_main(void *arg)
{
    struct worker *w = arg;
    double start = tool_now_us();

    while (tool_now_us() - start < w->seconds * 1e6 && (!w->count || w->t.n + w->t.failures < w->count))
        client_once(&w->e, w->addr, &w->t);
    return NULL;
}

static void *server_main(void *arg)
{
    struct worker *w = arg;

    for (uint64_t i = 0; !w->count || i < w->count; i++)
        server_once(&w->e, &w->t);
    return NULL;
}

/* Run @nthreads workers of @fn; their timings summed into @sum. */
static void run_workers(nd_adapter *a, nd_listener *l, const struct sockaddr_in *addr, uint32_t nthreads,
                        double seconds, uint64_t count, void *(*fn)(void *), struct timing *sum)
{
    struct worker w[64];

    for (uint32_t i = 0; i < nthreads; i++) {
        w[i] = (struct worker){ .addr = addr, .seconds = seconds,
                                .count = count ? count / nthreads + (i < count % nthreads) : 0 };
        worker_open(&w[i].e, a);
        w[i].e.listener = l;
        if (pthread_create(&w[i].thread, NULL, fn, &w[i]))
            TOOL_DIE("cannot start a thread");
    }
    for (uint32_t i = 0; i < nthreads; i++) {
        pthread_join(w[i].thread, NULL);
        sum->connect += w[i].t.connect;
        sum->complete += w[i].t.complete;
        sum->accept += w[i].t.accept;
        sum->disconnect += w[i].t.disconnect;
        sum->n += w[i].t.n;
        sum->failures += w[i].t.failures;
        sum->timeouts += w[i].t.timeouts;
        worker_close(&w[i].e);
    }
}

int main(int argc, char **argv)
{
    static const struct option longs[] = { { "json", no_argument, NULL, 'j' }, { 0 } };
    struct sockaddr_in addr;
    struct tool_ep e = { 0 };
    struct timing t = { 0 };
    bool server = false, have = false, json = false;
    double seconds = 2;
    uint64_t count = 0;
    uint32_t nthreads = 1;
    int ch;

    while ((ch = getopt_long(argc, argv, "s:c:d:n:t:", longs, NULL)) != -1) {
        switch (ch) {
        case 's': case 'c':
            server = ch == 's';
            have = tool_parse_addr(optarg, DEFAULT_PORT, &addr);
            break;
        case 'd': seconds = atof(optarg); break;
        case 'n': count = strtoull(optarg, NULL, 10); break;
        case 't': nthreads = (uint32_t)atoi(optarg); break;
        case 'j': json = true; break;
        default: have = false;
        }
    }
    if (!have || nthreads < 1 || nthreads > 64) {
        fprintf(stderr, "usage: nd_conn -s|-c <ip>[:port] [-t threads] [-d seconds] [-n connections] [--json]\n");
        return 2;
    }
    struct sockaddr_in local = addr;
    local.sin_port = 0;
    if (!server && !tool_local_addr(&addr, &local))
        TOOL_DIE("no route to %s", inet_ntoa(addr.sin_addr));
    client_src = local;
    nd_adapter *a;
    TOOL_CHECK(nd_open_adapter_by_address((struct sockaddr *)&local, sizeof(local), &a));
    worker_open(&e, a);
    if (server) {
        TOOL_CHECK(nd_adapter_create_listener(a, e.port, &e.listener));
        TOOL_CHECK(nd_listener_bind(e.listener, (struct sockaddr *)&addr, sizeof(addr)));
        TOOL_CHECK(nd_listener_listen(e.listener, 0));
        fprintf(stderr, "nd_conn: listening on %s:%u\n", inet_ntoa(addr.sin_addr), ntohs(addr.sin_port));
        run_workers(a, e.listener, &addr, nthreads, 0, count, server_main, &t);
        nd_listener_close(e.listener);
        worker_close(&e);
        nd_adapter_close(a);
        double an = t.n ? (double)t.n : 1;
        if (json)
            printf("{\"accepted\":%llu,\"accept_us\":%.2f,\"failures\":%llu}\n", (unsigned long long)t.n,
                   t.accept / an, (unsigned long long)t.failures);
        else
            printf("%llu connections accepted; average Accept %.1f us; %llu failures\n", (unsigned long long)t.n,
                   t.accept / an, (unsigned long long)t.failures);
        return t.failures ? 1 : 0;
    }
    /* The server may still be starting: the first connection retries a refusal. */
    for (int tries = 0; !client_once(&e, &addr, &t) && tries < 5000; tries++) {
        struct timespec ts = { 0, 1000000 };

        t = (struct timing){ 0 };
        nanosleep(&ts, NULL);
    }
    t = (struct timing){ 0 };
    double start = tool_now_us();
    /* That first connection was one of -n's (the server counts it): the timed ones are the rest. */
    if (!count || count > 1)
        run_workers(a, NULL, &addr, nthreads, seconds, count ? count - 1 : 0, client_main, &t);
    double elapsed = tool_now_us() - start;
    worker_close(&e);
    nd_adapter_close(a);
    double n = t.n ? (double)t.n : 1;
    if (json)
        printf("{\"connections\":%llu,\"seconds\":%.3f,\"per_second\":%.0f,\"connect_us\":%.2f,"
               "\"complete_connect_us\":%.2f,\"disconnect_us\":%.2f,\"failures\":%llu,\"timeouts\":%llu}\n",
               (unsigned long long)t.n, elapsed / 1e6, t.n / (elapsed / 1e6), t.connect / n, t.complete / n,
               t.disconnect / n, (unsigned long long)t.failures, (unsigned long long)t.timeouts);
    else
        printf("%llu connections in %.2f s: %.0f/s; average Connect %.1f us, CompleteConnect %.1f us, "
               "Disconnect %.1f us; %llu failures, %llu timeouts\n",
               (unsigned long long)t.n, elapsed / 1e6, t.n / (elapsed / 1e6), t.connect / n, t.complete / n,
               t.disconnect / n, (unsigned long long)t.failures, (unsigned long long)t.timeouts);
    return t.failures ? 1 : 0;
}
