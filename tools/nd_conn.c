// SPDX-License-Identifier: MIT
/*
 * nd_conn: connection set-up rate, as ND's ndconn. Each connection lives a full life:
 * create a QP and a connector, connect, 4 KiB each way, disconnect, destroy. One
 * connection at a time.
 *   nd_conn -s <ip>[:port]                      server (serves until killed, or -n connections)
 *   nd_conn -c <ip>[:port] [-d seconds] [-n count] [--json]
 */
#include "nd_tool.h"

#include <getopt.h>

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

static nd_result next_result(struct tool_ep *e)
{
    nd_result r;

    while (nd_cq_get_results(e->cq, &r, 1) == 0)
        ;
    return r;
}

/* One client connection's whole life; false when the server refused or went away. */
static bool client_once(struct tool_ep *e, const struct sockaddr_in *dest, struct timing *t)
{
    struct sockaddr_in local = *dest;
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    nd_connector *c;
    nd_qp *qp = make_qp(e);
    nd_sge sge = { e->buf, MSG, e->token }, rsge = { (uint8_t *)e->buf + MSG, MSG, e->token };
    nd_status st;
    double t0;

    local.sin_port = 0;
    TOOL_CHECK(nd_adapter_create_connector(e->adapter, e->port, &c));
    TOOL_CHECK(nd_connector_bind(c, (struct sockaddr *)&local, sizeof(local)));
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

int main(int argc, char **argv)
{
    static const struct option longs[] = { { "json", no_argument, NULL, 'j' }, { 0 } };
    struct sockaddr_in addr;
    struct tool_ep e = { 0 };
    struct timing t = { 0 };
    bool server = false, have = false, json = false;
    double seconds = 2;
    uint64_t count = 0;
    int ch;

    while ((ch = getopt_long(argc, argv, "s:c:d:n:", longs, NULL)) != -1) {
        switch (ch) {
        case 's': case 'c':
            server = ch == 's';
            have = tool_parse_addr(optarg, DEFAULT_PORT, &addr);
            break;
        case 'd': seconds = atof(optarg); break;
        case 'n': count = strtoull(optarg, NULL, 10); break;
        case 'j': json = true; break;
        default: have = false;
        }
    }
    if (!have) {
        fprintf(stderr, "usage: nd_conn -s|-c <ip>[:port] [-d seconds] [-n connections] [--json]\n");
        return 2;
    }
    struct sockaddr_in local = addr;
    local.sin_port = 0;
    TOOL_CHECK(nd_open_adapter_by_address((struct sockaddr *)&local, sizeof(local), &e.adapter));
    TOOL_CHECK(nd_adapter_create_overlapped_file(e.adapter, &e.port));
    TOOL_CHECK(nd_adapter_create_completion_queue(e.adapter, e.port, 64, 0, 0, &e.cq));
    e.buf = aligned_alloc(4096, 2 * MSG);
    nd_overlapped rov = { 0 };
    TOOL_CHECK(nd_adapter_create_memory_region(e.adapter, e.port, &e.mr));
    TOOL_CHECK(nd_mr_register(e.mr, e.buf, 2 * MSG, ND_MR_FLAG_ALLOW_LOCAL_WRITE, &rov));
    e.token = nd_mr_get_local_token(e.mr);
    if (server) {
        TOOL_CHECK(nd_adapter_create_listener(e.adapter, e.port, &e.listener));
        TOOL_CHECK(nd_listener_bind(e.listener, (struct sockaddr *)&addr, sizeof(addr)));
        TOOL_CHECK(nd_listener_listen(e.listener, 0));
        fprintf(stderr, "nd_conn: listening on %s:%u\n", inet_ntoa(addr.sin_addr), ntohs(addr.sin_port));
        for (uint64_t i = 0; !count || i < count; i++)
            server_once(&e, &t);
        return 0;
    }
    /* The server may still be starting: the first connection retries a refusal. */
    for (int tries = 0; !client_once(&e, &addr, &t) && tries < 5000; tries++) {
        struct timespec ts = { 0, 1000000 };

        t = (struct timing){ 0 };
        nanosleep(&ts, NULL);
    }
    t = (struct timing){ 0 };
    double start = tool_now_us(), elapsed;
    while ((elapsed = tool_now_us() - start) < seconds * 1e6 && (!count || t.n + t.failures < count))
        client_once(&e, &addr, &t);
    nd_mr_close(e.mr);
    nd_cq_close(e.cq);
    nd_port_close(e.port);
    nd_adapter_close(e.adapter);
    free(e.buf);
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
