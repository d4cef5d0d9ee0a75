// SPDX-License-Identifier: MIT
/*
 * Handshakes a peer leaves unanswered end within ND_CM_TIMEOUT_MS (1 s here), on every
 * transport: a Connect whose listener never Accepts completes ND_IO_TIMEOUT and leaves
 * the connector and QP usable for a second Connect; an Accept whose peer never calls
 * CompleteConnect completes ND_IO_TIMEOUT and flushes the QP. The side left behind learns
 * that the other gave up. A wait spins a moment before it sleeps (on the shm doorbell, on
 * the socket for iwarp's MPA exchange): the unanswered Connect must have slept, not spun.
 */
#include "t_conn.h"

#include <sys/resource.h>

#define TIMEOUT_MS 1000

static int go[2];                   /* parent -> child: carry on */

static void wait_go(void)
{
    char c;

    CHECK(read(go[0], &c, 1) == 1);
}

/* Get a request, never Accept it; once the client has given up, Accept must fail; then
 * accept the client's second Connect and echo one message. */
static void slow_acceptor(int port_pipe)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    struct t_side s;
    nd_qp *qp2;
    nd_connector *c2;

    t_side_open(&s, 4096, 4, 1);
    uint16_t port = t_listen(&s);
    CHECK(write(port_pipe, &port, sizeof(port)) == sizeof(port));
    CHECK_ST(t_wait(nd_listener_get_connection_request(s.l, s.c, &ov), &ov), ND_SUCCESS);
    wait_go();
    nd_status st = t_wait(nd_connector_accept(s.c, s.qp, 0, 0, NULL, 0, &ov), &ov);
    /* iWARP cannot tell a Connect given up from an initiator's Reject: both close first. */
    if (st != ND_CONNECTION_ABORTED && st != ND_CONNECTION_REFUSED) {
        fprintf(stderr, "Accept after the peer gave up: got %s, expected ND_CONNECTION_ABORTED\n", nd_strerror(st));
        exit(1);
    }
    CHECK_ST(nd_adapter_create_queue_pair(s.a, s.cq, s.cq, NULL, 4, 4, 1, 1, 0, &qp2), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_connector(s.a, s.port, &c2), ND_SUCCESS);
    CHECK_ST(nd_qp_receive(qp2, (void *)7, &(nd_sge){ s.buf, 64, s.token }, 1), ND_SUCCESS);
    CHECK_ST(t_wait(nd_listener_get_connection_request(s.l, c2, &ov), &ov), ND_SUCCESS);
    CHECK_ST(t_wait(nd_connector_accept(c2, qp2, 0, 0, NULL, 0, &ov), &ov), ND_SUCCESS);
    nd_result r = t_poll_one(s.cq, 10000);
    CHECK(r.status == ND_SUCCESS && r.request_context == (void *)7 && r.bytes_transferred == 5 &&
          !memcmp(s.buf, "again", 5));
    wait_go();
    CHECK_ST(nd_connector_close(c2), ND_SUCCESS);
    CHECK_ST(nd_qp_close(qp2), ND_SUCCESS);
    t_side_close(&s);
}

/* CPU time this process has used (ms). */
static uint64_t cpu_ms(void)
{
    struct rusage ru;

    CHECK(getrusage(RUSAGE_SELF, &ru) == 0);
    return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
           (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
}

static void connect_unanswered(void)
{
    struct t_side s;
    int port_rd;
    uint16_t port;
    pid_t pid = t_fork_server(slow_acceptor, &port_rd);
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    struct sockaddr_in dest;
    uint64_t ms;

    CHECK(read(port_rd, &port, sizeof(port)) == sizeof(port));
    dest = t_ipv4(t_peer_ip(), port);
    t_side_open(&s, 4096, 4, 1);
    uint64_t cpu = cpu_ms();
    CHECK_ST(t_connect_timed(&s, &dest, &ms), ND_IO_TIMEOUT);
    cpu = cpu_ms() - cpu;
    CHECK(ms >= TIMEOUT_MS - 50);
    /* The wait spins 50 us, then sleeps (a 10 ms poll tick runs the deadline). */
    if (cpu > ms / 5) {
        fprintf(stderr, "the unanswered Connect used %llu ms of CPU in %llu ms\n", (unsigned long long)cpu,
                (unsigned long long)ms);
        exit(1);
    }
    CHECK(write(go[1], "g", 1) == 1);
    /* The same connector and QP connect again, and carry a message. */
    CHECK_ST(t_wait(nd_connector_connect(s.c, s.qp, (struct sockaddr *)&dest, sizeof(dest), 0, 0, NULL, 0, &ov), &ov),
             ND_SUCCESS);
    CHECK_ST(t_wait(nd_connector_complete_connect(s.c, &ov), &ov), ND_SUCCESS);
    memcpy(s.buf, "again", 5);
    CHECK_ST(nd_qp_send(s.qp, (void *)8, &(nd_sge){ s.buf, 5, s.token }, 1, 0), ND_SUCCESS);
    CHECK(t_poll_one(s.cq, 10000).status == ND_SUCCESS);
    CHECK(write(go[1], "g", 1) == 1);
    t_expect_child_ok(pid);
    t_side_close(&s);
    close(port_rd);
    printf("Connect left unanswered: ND_IO_TIMEOUT after %llu ms (%llu ms of CPU); a second Connect on the same "
           "connector worked\n", (unsigned long long)ms, (unsigned long long)cpu);
}

/* Connect, then never CompleteConnect until told: by then the server gave up on us. */
static void stalled_client(uint16_t port)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    struct sockaddr_in local = t_ipv4(t_my_ip(), 0), dest = t_ipv4(t_peer_ip(), port);
    struct t_side s;

    t_side_open(&s, 4096, 4, 1);
    CHECK_ST(nd_connector_bind(s.c, (struct sockaddr *)&local, sizeof(local)), ND_SUCCESS);
    CHECK_ST(t_wait(nd_connector_connect(s.c, s.qp, (struct sockaddr *)&dest, sizeof(dest), 0, 0, NULL, 0, &ov), &ov),
             ND_SUCCESS);
    wait_go();
    /* Too late: either CompleteConnect says so, or the connection it made ends at once. */
    nd_status st = t_wait(nd_connector_complete_connect(s.c, &ov), &ov);
    if (st == ND_SUCCESS)
        st = t_wait(nd_connector_notify_disconnect(s.c, &ov), &ov) == ND_SUCCESS ? ND_CONNECTION_ABORTED : st;
    if (st != ND_CONNECTION_ABORTED) {
        fprintf(stderr, "CompleteConnect after the server gave up: got %s\n", nd_strerror(st));
        exit(1);
    }
    t_side_close(&s);
}

static void complete_unanswered(void)
{
    struct t_side s;
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };

    t_side_open(&s, 4096, 4, 1);
    uint16_t port = t_listen(&s);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        t_become_child_side();
        stalled_client(port);
        _exit(0);
    }
    CHECK_ST(nd_qp_receive(s.qp, (void *)9, &(nd_sge){ s.buf, 64, s.token }, 1), ND_SUCCESS);
    CHECK_ST(t_wait(nd_listener_get_connection_request(s.l, s.c, &ov), &ov), ND_SUCCESS);
    uint64_t t0 = t_now_ms();
    CHECK_ST(t_wait(nd_connector_accept(s.c, s.qp, 0, 0, NULL, 0, &ov), &ov), ND_IO_TIMEOUT);
    uint64_t ms = t_now_ms() - t0;
    CHECK(ms >= TIMEOUT_MS - 50);
    nd_result r = t_poll_one(s.cq, 5000);
    CHECK(r.status == ND_CANCELED && r.request_context == (void *)9 && r.request_type == ND_REQUEST_TYPE_RECEIVE);
    CHECK_ST(nd_connector_complete_connect(s.c, &ov), ND_CONNECTION_ABORTED);
    CHECK(write(go[1], "g", 1) == 1);
    t_expect_child_ok(pid);
    t_side_close(&s);
    printf("Accept without CompleteConnect: ND_IO_TIMEOUT after %llu ms, receive flushed\n", (unsigned long long)ms);
}

int main(void)
{
    char v[16];

    snprintf(v, sizeof(v), "%d", TIMEOUT_MS);
    setenv("ND_CM_TIMEOUT_MS", v, 1);
    signal(SIGPIPE, SIG_IGN);
    CHECK(pipe(go) == 0);
    connect_unanswered();
    complete_unanswered();
    return 0;
}
