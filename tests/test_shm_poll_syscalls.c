// SPDX-License-Identifier: MIT
/*
 * Polling a shm queue pair's CQ makes no system call, even while a Send waits for the
 * peer's receive: the held Send is retried from memory on each poll, and the peer's
 * socket is asked whether it lives only once an interval (50 ms). Nor does a ping-pong
 * on a fresh connection, whose first hundreds of messages bias the queue pair and CQ
 * locks to this thread (lock.h). Counted with the kernel's syscall tracepoint on this
 * thread (skipped where perf events are not allowed).
 */
#include "t_conn.h"
#include "../tools/nd_syscount.h"

#include <sys/mount.h>

#define POLLS 20000
#define ECHOES 1000

static int go_pipe[2];      /* client -> server: polled, post the receive now */

static void serve(int port_pipe)
{
    struct t_side s;
    nd_sge sge;
    char go;

    close(go_pipe[1]);
    t_serve_open(&s, port_pipe);
    sge = (nd_sge){ s.buf, 64, s.token };
    CHECK_ST(nd_qp_receive(s.qp, NULL, &sge, 1), ND_SUCCESS);
    t_accept(&s, 0, NULL, 0);
    /* Echo the ping-pong; no receive stays posted after it (the held Send below). */
    for (int i = 0; i < ECHOES; i++) {
        nd_result r = t_poll_one(s.cq, 10000);

        CHECK(r.status == ND_SUCCESS && r.request_type == ND_REQUEST_TYPE_RECEIVE && r.bytes_transferred == 8);
        if (i + 1 < ECHOES)
            CHECK_ST(nd_qp_receive(s.qp, NULL, &sge, 1), ND_SUCCESS);
        nd_sge ss = { s.buf, 8, s.token };
        CHECK_ST(nd_qp_send(s.qp, NULL, &ss, 1, ND_OP_FLAG_INLINE | ND_OP_FLAG_SILENT_SUCCESS), ND_SUCCESS);
    }
    CHECK(read(go_pipe[0], &go, 1) == 1);
    sge = (nd_sge){ s.buf, 64, s.token };
    CHECK_ST(nd_qp_receive(s.qp, NULL, &sge, 1), ND_SUCCESS);
    nd_result r = t_poll_one(s.cq, 10000);
    CHECK(r.status == ND_SUCCESS && r.bytes_transferred == 64);
    CHECK(read(go_pipe[0], &go, 1) == 0);      /* the client is done with the connection */
    t_side_close(&s);
}

int main(void)
{
    struct t_side s;
    nd_result r;
    uint16_t port;
    int rd, counter;
    const char *t = getenv("ND_TRANSPORT");

    if (t && strcmp(t, "shm") != 0)
        return 77;                              /* iwarp polls its socket by design */
    counter = tool_syscall_counter();
    if (counter < 0 && mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL) == 0)
        counter = tool_syscall_counter();  /* a fresh machine has tracefs unmounted (root may) */
    if (counter < 0)
        return 77;
    /* Open from here (not timed) to the count: opening it takes milliseconds, which must not
     * eat into the held Send's 100 ms wait for a receive. */
    CHECK(pipe(go_pipe) == 0);
    pid_t server = t_fork_server(serve, &rd);
    close(go_pipe[0]);
    CHECK(read(rd, &port, sizeof(port)) == sizeof(port));
    t_side_open(&s, 4096, 4, 1);
    t_connect(&s, port, NULL, NULL);
    nd_sge sge = { s.buf, 64, s.token }, ping = { s.buf, 8, s.token };

    uint64_t t0 = t_now_ms();
    tool_counter_enable(counter);
    for (int i = 0; i < ECHOES; i++) {
        CHECK_ST(nd_qp_receive(s.qp, NULL, &sge, 1), ND_SUCCESS);
        CHECK_ST(nd_qp_send(s.qp, NULL, &ping, 1, ND_OP_FLAG_INLINE | ND_OP_FLAG_SILENT_SUCCESS), ND_SUCCESS);
        while (nd_cq_get_results(s.cq, &r, 1) == 0)
            ;
        CHECK(r.status == ND_SUCCESS && r.request_type == ND_REQUEST_TYPE_RECEIVE && r.bytes_transferred == 8);
    }
    long long echo_calls = tool_counter_pause(counter);
    /* The peer's socket is asked once per 50 ms interval: on a loaded machine the round
     * trips take long enough for some of those (one recv each). Nothing else. */
    long long ms = (long long)(t_now_ms() - t0), allowed = 1 + ms / 50;
    printf("%d round trips on a fresh connection: %lld system calls in %lld ms (liveness checks allowed: %lld)\n",
           ECHOES, echo_calls, ms, allowed);
    CHECK(echo_calls >= 0 && echo_calls <= allowed);

    CHECK_ST(nd_qp_send(s.qp, NULL, &sge, 1, 0), ND_SUCCESS);     /* no receive yet: held */

    uint64_t p0 = t_now_ms();
    tool_counter_enable(counter);
    for (int i = 0; i < POLLS; i++)
        CHECK(nd_cq_get_results(s.cq, &r, 1) == 0);
    long long calls = tool_counter_stop(counter);
    /* As above, per 50 ms the polls take (under TSan hundreds): a liveness check, and the
     * QP lock it takes, which the held-send sweeper may hold (a futex wait). */
    long long poll_ms = (long long)(t_now_ms() - p0), poll_allowed = 4 + 2 * (poll_ms / 50);
    printf("%d polls with a send held: %lld system calls in %lld ms (allowed: %lld)\n", POLLS, calls, poll_ms,
           poll_allowed);
    CHECK(calls >= 0 && calls <= poll_allowed);

    CHECK(write(go_pipe[1], "r", 1) == 1);
    r = t_poll_one(s.cq, 10000);
    CHECK(r.status == ND_SUCCESS && r.request_type == ND_REQUEST_TYPE_SEND);
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    CHECK_ST(nd_connector_disconnect(s.c, &ov), ND_SUCCESS);
    close(go_pipe[1]);
    t_expect_child_ok(server);
    t_side_close(&s);
    return 0;
}
