// SPDX-License-Identifier: MIT
/*
 * A port adds its objects' descriptors to its epoll set only when a thread is about to
 * sleep on it (or nd_port_fd hands the set out). None of that may lose an event:
 *  - a thread already asleep in nd_port_wait gets a Connect's completion made afterwards;
 *  - a thread that starts waiting later gets one whose descriptor was still pending;
 *  - an application polling nd_port_fd in its own poll() is woken by one;
 *  - connections whose waits never touch the port leave nothing registered behind, and a
 *    connection made after them is still heard through the port.
 */
#include "t_conn.h"

#include <pthread.h>
#include <sys/syscall.h>

#define QUIET_CONNS 50
#define CONNS (3 + QUIET_CONNS + 1)

static void serve(int port_pipe)
{
    struct t_side s;
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };

    t_serve_open(&s, port_pipe);
    for (int i = 0; i < CONNS; i++) {
        if (i) {
            CHECK_ST(nd_adapter_create_queue_pair(s.a, s.cq, s.cq, &s, 4, 4, 1, 1, 0, &s.qp), ND_SUCCESS);
            CHECK_ST(nd_adapter_create_connector(s.a, s.port, &s.c), ND_SUCCESS);
        }
        t_accept(&s, 0, NULL, 0);
        if (i != 1)     /* the second client waits for us to disconnect */
            CHECK_ST(t_wait(nd_connector_notify_disconnect(s.c, &ov), &ov), ND_SUCCESS);
        CHECK_ST(nd_connector_disconnect(s.c, &ov), ND_SUCCESS);
        CHECK_ST(nd_connector_close(s.c), ND_SUCCESS);
        CHECK_ST(nd_qp_close(s.qp), ND_SUCCESS);
        while (nd_cq_get_results(s.cq, &(nd_result){ 0 }, 1))
            ;
    }
    s.c = NULL;
    CHECK_ST(nd_adapter_create_queue_pair(s.a, s.cq, s.cq, &s, 4, 4, 1, 1, 0, &s.qp), ND_SUCCESS);
    t_side_close(&s);
}

struct client {
    nd_adapter *a;
    nd_cq *cq;
    struct sockaddr_in dest;
};

struct conn {
    nd_port *port;
    nd_connector *c;
    nd_qp *qp;
};

/* Start a Connect on a connector of @port; its completion goes to the port unless @flags
 * has ND_OV_FLAG_NO_PORT. */
static void connect_start(struct client *cl, struct conn *k, nd_port *port, nd_overlapped *ov, uint32_t flags)
{
    struct sockaddr_in local = t_ipv4(t_my_ip(), 0);

    k->port = port;
    CHECK_ST(nd_adapter_create_queue_pair(cl->a, cl->cq, cl->cq, k, 4, 4, 1, 1, 0, &k->qp), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_connector(cl->a, port, &k->c), ND_SUCCESS);
    CHECK_ST(nd_connector_bind(k->c, (struct sockaddr *)&local, sizeof(local)), ND_SUCCESS);
    memset(ov, 0, sizeof(*ov));
    ov->flags = flags;
    nd_status st = nd_connector_connect(k->c, k->qp, (struct sockaddr *)&cl->dest, sizeof(cl->dest), 0, 0, NULL, 0, ov);
    CHECK(st == ND_PENDING || st == ND_SUCCESS);
}

/* Take completions from the port until @ov comes (it must, within 10 s). */
static void port_expect(nd_port *port, nd_overlapped *ov)
{
    uint64_t end = t_now_ms() + 10000;
    nd_overlapped *got = NULL;

    while (got != ov) {
        CHECK(t_now_ms() < end);
        nd_status st = nd_port_wait(port, 1000, &got);
        CHECK(st == ND_SUCCESS || st == ND_TIMEOUT);
    }
    CHECK_ST(nd_get_overlapped_result(ov, 0), ND_SUCCESS);
}

static void connect_finish(struct conn *k)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };

    CHECK_ST(t_wait(nd_connector_complete_connect(k->c, &ov), &ov), ND_SUCCESS);
    CHECK_ST(nd_connector_disconnect(k->c, &ov), ND_SUCCESS);
    CHECK_ST(nd_connector_close(k->c), ND_SUCCESS);
    CHECK_ST(nd_qp_close(k->qp), ND_SUCCESS);
}

struct sleeper {
    nd_port *port;
    _Atomic pid_t tid;
    nd_overlapped *got;
    nd_status st;
};

static void *sleeper_run(void *arg)
{
    struct sleeper *s = arg;

    s->tid = (pid_t)syscall(SYS_gettid);
    s->st = nd_port_wait(s->port, 10000, &s->got);
    return NULL;
}

/* Is thread @tid of this process asleep (state S)? */
static bool asleep(pid_t tid)
{
    char path[64], buf[256];
    FILE *f;
    bool s = false;

    snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
    f = fopen(path, "r");
    if (f && fgets(buf, sizeof(buf), f)) {
        const char *p = strrchr(buf, ')');
        s = p && p[1] == ' ' && p[2] == 'S';
    }
    if (f)
        fclose(f);
    return s;
}

/* The Connect is started while another thread already sleeps in nd_port_wait. */
static void case_sleeper(struct client *cl)
{
    struct sleeper s = { 0 };
    struct conn k;
    nd_overlapped ov;
    pthread_t t;

    CHECK_ST(nd_port_create(&s.port), ND_SUCCESS);
    CHECK(pthread_create(&t, NULL, sleeper_run, &s) == 0);
    for (uint64_t end = t_now_ms() + 5000; !(s.tid && asleep(s.tid)) && t_now_ms() < end;)
        sched_yield();
    connect_start(cl, &k, s.port, &ov, 0);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK_ST(s.st, ND_SUCCESS);
    CHECK(s.got == &ov);
    CHECK_ST(nd_get_overlapped_result(&ov, 0), ND_SUCCESS);
    connect_finish(&k);
    CHECK_ST(nd_port_close(s.port), ND_SUCCESS);
}

/* A connection made with GetOverlappedResult only: its socket never joined the set. The
 * server's disconnect must still reach a NotifyDisconnect waited for on the port (no
 * handshake deadline ticks the port now: only the descriptor can bring it). */
static void case_later_wait(struct client *cl)
{
    nd_port *port;
    struct conn k;
    nd_overlapped ov, notify = { 0 };

    CHECK_ST(nd_port_create(&port), ND_SUCCESS);
    connect_start(cl, &k, port, &ov, ND_OV_FLAG_NO_PORT);
    CHECK_ST(nd_get_overlapped_result(&ov, 1), ND_SUCCESS);
    ov.flags = ND_OV_FLAG_NO_PORT;
    CHECK_ST(t_wait(nd_connector_complete_connect(k.c, &ov), &ov), ND_SUCCESS);
    nd_status st = nd_connector_notify_disconnect(k.c, &notify);
    CHECK(st == ND_PENDING || st == ND_SUCCESS);
    if (st == ND_PENDING)
        port_expect(port, &notify);
    CHECK_ST(nd_connector_close(k.c), ND_SUCCESS);
    CHECK_ST(nd_qp_close(k.qp), ND_SUCCESS);
    CHECK_ST(nd_port_close(port), ND_SUCCESS);
}

/* The application sleeps in its own poll() on nd_port_fd. */
static void case_port_fd(struct client *cl)
{
    nd_port *port;
    struct conn k;
    nd_overlapped ov;

    CHECK_ST(nd_port_create(&port), ND_SUCCESS);
    connect_start(cl, &k, port, &ov, 0);
    struct pollfd pfd = { .fd = nd_port_fd(port), .events = POLLIN };
    CHECK(poll(&pfd, 1, 10000) == 1);
    port_expect(port, &ov);
    connect_finish(&k);
    CHECK_ST(nd_port_close(port), ND_SUCCESS);
}

/* How many descriptors an epoll set watches (its fdinfo lists one "tfd:" line each). */
static int epoll_watches(int epfd)
{
    char path[64], line[256];
    FILE *f;
    int n = 0;

    snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", epfd);
    f = fopen(path, "r");
    CHECK(f != NULL);
    while (fgets(line, sizeof(line), f))
        n += strncmp(line, "tfd:", 4) == 0;
    fclose(f);
    return n;
}

/* Connections waited for only with GetOverlappedResult leave the port's set as it was;
 * the next one, heard through the port, still is. */
static void case_quiet(struct client *cl)
{
    nd_port *port;
    struct conn k;
    nd_overlapped ov;

    CHECK_ST(nd_port_create(&port), ND_SUCCESS);
    for (int i = 0; i < QUIET_CONNS; i++) {
        connect_start(cl, &k, port, &ov, ND_OV_FLAG_NO_PORT);
        CHECK_ST(nd_get_overlapped_result(&ov, 1), ND_SUCCESS);
        connect_finish(&k);
    }
    int before = epoll_watches(nd_port_fd(port));     /* its own event, a kick descriptor at most */
    CHECK(before >= 1 && before <= 2);
    connect_start(cl, &k, port, &ov, 0);
    port_expect(port, &ov);
    CHECK(epoll_watches(nd_port_fd(port)) == before + 1);
    connect_finish(&k);
    CHECK(epoll_watches(nd_port_fd(port)) == before);
    CHECK_ST(nd_port_close(port), ND_SUCCESS);
}

int main(void)
{
    struct client cl = { 0 };
    nd_port *cq_port;
    uint16_t port;
    int rd;
    pid_t server = t_fork_server(serve, &rd);

    CHECK(read(rd, &port, sizeof(port)) == sizeof(port));
    cl.a = t_open_loopback();
    CHECK_ST(nd_port_create(&cq_port), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_completion_queue(cl.a, cq_port, 64, 0, 0, &cl.cq), ND_SUCCESS);
    cl.dest = t_ipv4(t_peer_ip(), port);
    case_sleeper(&cl);
    case_later_wait(&cl);
    case_port_fd(&cl);
    case_quiet(&cl);
    CHECK_ST(nd_cq_close(cl.cq), ND_SUCCESS);
    CHECK_ST(nd_port_close(cq_port), ND_SUCCESS);
    CHECK_ST(nd_adapter_close(cl.a), ND_SUCCESS);
    t_expect_child_ok(server);
    return 0;
}
