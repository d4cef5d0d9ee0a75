// SPDX-License-Identifier: MIT
/*
 * Misuse of overlapped requests and the objects that complete them gets a status, never a
 * use-after-free, a hang or a double completion:
 *  - an nd_overlapped still pending, handed to a second request, is refused;
 *  - a port closed while a thread sleeps in nd_port_wait(INFINITE) wakes that thread;
 *  - a connector whose listener holds a pending GetConnectionRequest cannot be released,
 *    and once that request is cancelled, the next client to connect and the listener's
 *    close touch nothing freed.
 */
#include "t_conn.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>

static void pending_overlapped_reused(void)
{
    nd_adapter *a = t_open_loopback();
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT }, *out;
    nd_port *port;
    nd_cq *cq;

    CHECK_ST(nd_port_create(&port), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_completion_queue(a, port, 4, 0, 0, &cq), ND_SUCCESS);
    CHECK_ST(nd_cq_notify(cq, ND_CQ_NOTIFY_ANY, &ov), ND_PENDING);
    CHECK_ST(nd_cq_notify(cq, ND_CQ_NOTIFY_ANY, &ov), ND_INVALID_PARAMETER);
    CHECK_ST(nd_cq_notify(cq, ND_CQ_NOTIFY_ERRORS, &ov), ND_INVALID_PARAMETER);
    CHECK_ST(nd_cq_cancel_overlapped_requests(cq), ND_SUCCESS);
    CHECK_ST(nd_get_overlapped_result(&ov, 0), ND_CANCELED);
    /* It came back once: nothing more on the port (NO_PORT), and it can be used again. */
    CHECK_ST(nd_port_wait(port, 0, &out), ND_TIMEOUT);
    CHECK_ST(nd_cq_notify(cq, ND_CQ_NOTIFY_ANY, &ov), ND_PENDING);
    CHECK_ST(nd_cq_cancel_overlapped_requests(cq), ND_SUCCESS);
    CHECK_ST(nd_get_overlapped_result(&ov, 0), ND_CANCELED);
    CHECK_ST(nd_cq_close(cq), ND_SUCCESS);
    CHECK_ST(nd_port_close(port), ND_SUCCESS);
    CHECK_ST(nd_adapter_close(a), ND_SUCCESS);
}

struct sleeper {
    nd_port *port;
    int ready[2];
    atomic_int result;
    pid_t tid;
};

/* Is thread @tid blocked in epoll_wait (the syscall number /proc shows for it)? */
static bool in_epoll_wait(pid_t tid)
{
    char path[64], line[256];
    long nr = -1;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
    if (!(f = fopen(path, "r")))
        return false;
    if (fgets(line, sizeof(line), f))
        nr = strtol(line, NULL, 10);
    fclose(f);
    return nr == SYS_epoll_wait || nr == SYS_epoll_pwait;
}

static void *sleep_in_port(void *arg)
{
    struct sleeper *s = arg;
    nd_overlapped *out = NULL;
    pid_t tid = (pid_t)syscall(SYS_gettid);

    CHECK(write(s->ready[1], &tid, sizeof(tid)) == sizeof(tid));
    atomic_store(&s->result, nd_port_wait(s->port, ND_INFINITE, &out));
    return NULL;
}

static void port_closed_under_sleeper(void)
{
    struct sleeper s = { .result = ND_PENDING };
    pthread_t t;
    uint64_t end = t_now_ms() + 10000;

    CHECK_ST(nd_port_create(&s.port), ND_SUCCESS);
    CHECK(pipe(s.ready) == 0);
    CHECK(pthread_create(&t, NULL, sleep_in_port, &s) == 0);
    CHECK(read(s.ready[0], &s.tid, sizeof(s.tid)) == sizeof(s.tid));
    /* Asleep in the port for good (an empty port waits forever): the close must wake it
     * and free nothing it still uses. */
    while (!in_epoll_wait(s.tid))
        CHECK(t_now_ms() < end);
    CHECK_ST(nd_port_close(s.port), ND_SUCCESS);
    pthread_join(t, NULL);
    CHECK_ST(atomic_load(&s.result), ND_CANCELED);
    close(s.ready[0]);
    close(s.ready[1]);
}

static void client(int port_pipe)
{
    uint16_t port;
    struct t_side s;
    struct sockaddr_in dest;
    uint64_t ms;

    CHECK(read(port_pipe, &port, sizeof(port)) == sizeof(port));
    t_side_open(&s, 4096, 4, 1);
    dest = t_ipv4(t_peer_ip(), port);
    CHECK_ST(t_connect_timed(&s, &dest, &ms), ND_CONNECTION_REFUSED);
    t_side_close(&s);
}

static void connector_released_while_queued(void)
{
    struct t_side s;
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    int p[2];
    pid_t pid;
    uint16_t port;

    t_side_open(&s, 4096, 4, 1);
    port = t_listen(&s);
    CHECK_ST(nd_listener_get_connection_request(s.l, s.c, &ov), ND_PENDING);
    CHECK_ST(nd_connector_close(s.c), ND_DEVICE_BUSY);
    CHECK_ST(nd_listener_cancel_overlapped_requests(s.l), ND_SUCCESS);
    CHECK_ST(nd_get_overlapped_result(&ov, 0), ND_CANCELED);
    CHECK_ST(nd_connector_close(s.c), ND_SUCCESS);
    s.c = NULL;
    CHECK(pipe(p) == 0);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        close(p[1]);
        t_become_child_side();
        client(p[0]);
        _exit(0);
    }
    close(p[0]);
    CHECK(write(p[1], &port, sizeof(port)) == sizeof(port));
    /* The client's request goes to a live connector (the released one is no longer
     * queued), which turns it away. */
    CHECK_ST(nd_adapter_create_connector(s.a, s.port, &s.c), ND_SUCCESS);
    CHECK_ST(t_wait(nd_listener_get_connection_request(s.l, s.c, &ov), &ov), ND_SUCCESS);
    CHECK_ST(nd_connector_reject(s.c, NULL, 0), ND_SUCCESS);
    t_expect_child_ok(pid);
    close(p[1]);
    t_side_close(&s);       /* closes the listener with the request it queued */
}

int main(int argc, char **argv)
{
    int only = argc > 1 ? atoi(argv[1]) : 0;     /* run one part: 1, 2 or 3 */

    if (!only || only == 1)
        pending_overlapped_reused();
    if (!only || only == 2)
        port_closed_under_sleeper();
    if (!only || only == 3)
        connector_released_while_queued();
    puts("overlapped misuse: statuses, no hang");
    return 0;
}
