// SPDX-License-Identifier: MIT
/*
 * ND's flush and notify semantics, for an application that never waits on a port:
 *  1. nd_qp_close with receives posted flushes every one of them into the CQ (ND_CANCELED,
 *     each with its own context) and wakes a CQ armed for them;
 *  2. a peer SIGKILLed mid-connection completes a NotifyDisconnect that the application
 *     only polls (GetOverlappedResult without wait, plus GetResults), within a bound;
 *  3. a CQ overrun (more completions than its depth) completes a pending Notify(ERRORS)
 *     with ND_BUFFER_OVERFLOW and makes its queue pairs unusable; nothing is lost;
 *  4. completions leave the CQ in the order they happened: a Send that completed before
 *     the queue pair failed comes out before the receives the failure flushed, whichever
 *     of the QP's rings the CQ happens to look at first (ndmemorytest's NdWriteViolation
 *     expects its Send's success first, then the flushed receive).
 * Runs on both transports.
 */
#include "t_conn.h"

#define BOUND_MS 3000

static void close_flushes_receives(void)
{
    nd_adapter *a = t_open_loopback();
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    static uint8_t buf[4096];
    nd_result r[8];
    nd_port *port;
    nd_cq *cq;
    nd_qp *qp;
    nd_mr *mr;
    uint32_t n = 0, seen = 0;

    CHECK_ST(nd_port_create(&port), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_completion_queue(a, port, 16, 0, 0, &cq), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_queue_pair(a, cq, cq, NULL, 4, 4, 1, 1, 0, &qp), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_memory_region(a, port, &mr), ND_SUCCESS);
    CHECK_ST(nd_mr_register(mr, buf, sizeof(buf), ND_MR_FLAG_ALLOW_LOCAL_WRITE, &ov), ND_SUCCESS);
    for (uintptr_t i = 1; i <= 3; i++) {
        nd_sge sge = { buf + i * 64, 64, nd_mr_get_local_token(mr) };
        CHECK_ST(nd_qp_receive(qp, (void *)i, &sge, 1), ND_SUCCESS);
    }
    memset(&ov, 0, sizeof(ov));
    ov.flags = ND_OV_FLAG_NO_PORT;
    CHECK_ST(nd_cq_notify(cq, ND_CQ_NOTIFY_ANY, &ov), ND_PENDING);
    CHECK_ST(nd_qp_close(qp), ND_SUCCESS);
    CHECK_ST(nd_get_overlapped_result(&ov, 0), ND_SUCCESS);     /* woken by the flushes */
    while ((n = nd_cq_get_results(cq, r, 8)) > 0)
        for (uint32_t i = 0; i < n; i++) {
            uintptr_t ctx = (uintptr_t)r[i].request_context;

            CHECK_ST(r[i].status, ND_CANCELED);
            CHECK(r[i].request_type == ND_REQUEST_TYPE_RECEIVE && ctx >= 1 && ctx <= 3);
            CHECK(!(seen & (1u << ctx)));
            seen |= 1u << ctx;
        }
    CHECK(seen == 0xe);
    CHECK_ST(nd_mr_deregister(mr, &ov), ND_SUCCESS);
    CHECK_ST(nd_mr_close(mr), ND_SUCCESS);
    CHECK_ST(nd_cq_close(cq), ND_SUCCESS);
    CHECK_ST(nd_port_close(port), ND_SUCCESS);
    CHECK_ST(nd_adapter_close(a), ND_SUCCESS);
}

/* The server accepts, writes a byte to say so, then waits to be killed. */
static void victim_server(int port_pipe)
{
    struct t_side s;

    t_serve_open(&s, port_pipe);
    t_accept(&s, 0, NULL, 0);
    CHECK(write(port_pipe, "c", 1) == 1);
    for (;;)
        pause();
}

static void killed_peer_polled_disconnect(void)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    struct t_side c;
    int pipe_rd;
    pid_t pid = t_fork_server(victim_server, &pipe_rd);
    uint16_t port;
    char byte;
    nd_result r;

    CHECK(read(pipe_rd, &port, sizeof(port)) == sizeof(port));
    t_side_open(&c, 4096, 4, 1);
    nd_sge rs = { c.buf, 64, c.token };
    CHECK_ST(nd_qp_receive(c.qp, NULL, &rs, 1), ND_SUCCESS);
    t_connect(&c, port, NULL, NULL);
    CHECK(read(pipe_rd, &byte, 1) == 1);
    CHECK_ST(nd_connector_notify_disconnect(c.c, &ov), ND_PENDING);
    CHECK(kill(pid, SIGKILL) == 0);
    CHECK(waitpid(pid, NULL, 0) == pid);
    uint64_t end = t_now_ms() + BOUND_MS;
    bool flushed = false;
    nd_status st;

    while ((st = nd_get_overlapped_result(&ov, 0)) == ND_PENDING || !flushed) {
        if (nd_cq_get_results(c.cq, &r, 1) == 1) {
            CHECK(r.status != ND_SUCCESS && r.request_type == ND_REQUEST_TYPE_RECEIVE);
            flushed = true;
        }
        if (t_now_ms() > end) {
            fprintf(stderr, "after %d ms: NotifyDisconnect %s, receive %s\n", BOUND_MS,
                    st == ND_PENDING ? "pending" : "done", flushed ? "flushed" : "pending");
            exit(1);
        }
    }
    CHECK(st == ND_SUCCESS || st == ND_CONNECTION_ABORTED || st == STATUS_CONNECTION_DISCONNECTED);
    close(pipe_rd);
    t_side_close(&c);
}

#define FLOOD 8u

/* Sends FLOOD messages (twice the client's CQ depth) once connected, then waits for the
 * client to go. */
static void flood_server(int port_pipe)
{
    struct t_side s;
    nd_result r;

    t_serve_open(&s, port_pipe);
    t_accept(&s, 0, NULL, 0);
    for (uint32_t i = 0; i < FLOOD; i++) {
        nd_sge ss = { &i, sizeof(i), 0 };

        nd_status st;

        while ((st = nd_qp_send(s.qp, NULL, &ss, 1, ND_OP_FLAG_INLINE)) == ND_NO_MORE_ENTRIES)
            nd_cq_get_results(s.cq, &r, 1);
        CHECK_ST(st, ND_SUCCESS);
    }
    /* Wait for the client's close: a flushed receive, or nothing for long. */
    nd_sge rs = { s.buf, 64, s.token };
    CHECK_ST(nd_qp_receive(s.qp, NULL, &rs, 1), ND_SUCCESS);
    for (uint64_t end = t_now_ms() + 10000; t_now_ms() < end;)
        if (nd_cq_get_results(s.cq, &r, 1) && r.request_type == ND_REQUEST_TYPE_RECEIVE)
            break;
    t_side_close(&s);
}

static void overrun_fails_errors_notify(void)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT }, err = { .flags = ND_OV_FLAG_NO_PORT };
    struct sockaddr_in local = t_ipv4(t_my_ip(), 0), dest;
    struct t_side c = { 0 };
    int pipe_rd;
    pid_t pid = t_fork_server(flood_server, &pipe_rd);
    uint16_t port;
    nd_result r;

    CHECK(read(pipe_rd, &port, sizeof(port)) == sizeof(port));
    dest = t_ipv4(t_peer_ip(), port);
    c.a = t_open_loopback();
    CHECK_ST(nd_port_create(&c.port), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_completion_queue(c.a, c.port, 4, 0, 0, &c.cq), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_queue_pair(c.a, c.cq, c.cq, NULL, FLOOD, 4, 1, 1, 64, &c.qp), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_connector(c.a, c.port, &c.c), ND_SUCCESS);
    c.len = 4096;
    c.buf = mmap(NULL, c.len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(c.buf != MAP_FAILED);
    CHECK_ST(nd_adapter_create_memory_region(c.a, c.port, &c.mr), ND_SUCCESS);
    CHECK_ST(nd_mr_register(c.mr, c.buf, c.len, ND_MR_FLAG_ALLOW_LOCAL_WRITE, &ov), ND_SUCCESS);
    for (uint32_t i = 0; i < FLOOD; i++) {
        nd_sge rs = { c.buf + i * 8, 8, nd_mr_get_local_token(c.mr) };
        CHECK_ST(nd_qp_receive(c.qp, NULL, &rs, 1), ND_SUCCESS);
    }
    CHECK_ST(nd_cq_notify(c.cq, ND_CQ_NOTIFY_ERRORS, &err), ND_PENDING);
    CHECK_ST(nd_connector_bind(c.c, (struct sockaddr *)&local, sizeof(local)), ND_SUCCESS);
    CHECK_ST(t_wait(nd_connector_connect(c.c, c.qp, (struct sockaddr *)&dest, sizeof(dest), 0, 0, NULL, 0, &ov), &ov),
             ND_SUCCESS);
    CHECK_ST(t_wait(nd_connector_complete_connect(c.c, &ov), &ov), ND_SUCCESS);
    /* Nobody polls the CQ's entries away; the application only looks at its notify. */
    for (uint64_t end = t_now_ms() + BOUND_MS; nd_get_overlapped_result(&err, 0) == ND_PENDING;)
        CHECK(t_now_ms() < end);
    CHECK_ST(err.status, ND_BUFFER_OVERFLOW);
    /* The queue pair is unusable: a Send now never succeeds. */
    nd_sge ss = { c.buf, 1, nd_mr_get_local_token(c.mr) };
    nd_status st = nd_qp_send(c.qp, (void *)1, &ss, 1, 0);
    if (st == ND_SUCCESS) {
        bool found = false;

        for (uint64_t end = t_now_ms() + BOUND_MS; !found && t_now_ms() < end;)
            while (nd_cq_get_results(c.cq, &r, 1))
                if (r.request_context == (void *)1) {
                    CHECK(r.status != ND_SUCCESS);
                    found = true;
                }
        CHECK(found);
    }
    t_side_close(&c);
    t_expect_child_ok(pid);
    close(pipe_rd);
}

/* Receives one Send, says so on the pipe, then waits for the client to go. */
static void one_send_server(int port_pipe)
{
    struct t_side s;
    nd_result r;

    t_serve_open(&s, port_pipe);
    nd_sge rs = { s.buf, 64, s.token };
    CHECK_ST(nd_qp_receive(s.qp, NULL, &rs, 1), ND_SUCCESS);
    CHECK_ST(nd_qp_receive(s.qp, NULL, &rs, 1), ND_SUCCESS);
    t_accept(&s, 0, NULL, 0);
    r = t_poll_one(s.cq, BOUND_MS);
    CHECK_ST(r.status, ND_SUCCESS);
    CHECK(write(port_pipe, "r", 1) == 1);
    r = t_poll_one(s.cq, 10000);     /* the second receive, flushed when the client goes */
    t_side_close(&s);
}

static void success_before_flush(uint32_t empty_polls)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    struct t_side c;
    int pipe_rd;
    pid_t pid = t_fork_server(one_send_server, &pipe_rd);
    uint16_t port;
    nd_result r;
    char byte;

    CHECK(read(pipe_rd, &port, sizeof(port)) == sizeof(port));
    t_side_open(&c, 4096, 4, 1);
    nd_sge rs = { c.buf, 64, c.token }, ss = { c.buf + 64, 8, c.token };
    CHECK_ST(nd_qp_receive(c.qp, (void *)1, &rs, 1), ND_SUCCESS);
    t_connect(&c, port, NULL, NULL);
    /* Each GetResults starts its scan one ring further on. */
    for (uint32_t i = 0; i < empty_polls; i++)
        CHECK(nd_cq_get_results(c.cq, &r, 1) == 0);
    CHECK_ST(nd_cq_notify(c.cq, ND_CQ_NOTIFY_ANY, &ov), ND_PENDING);
    CHECK_ST(nd_qp_send(c.qp, (void *)2, &ss, 1, 0), ND_SUCCESS);
    CHECK_ST(nd_get_overlapped_result(&ov, 1), ND_SUCCESS);    /* the Send's completion is queued */
    CHECK(read(pipe_rd, &byte, 1) == 1);
    CHECK_ST(nd_qp_flush(c.qp), ND_SUCCESS);
    r = t_poll_one(c.cq, BOUND_MS);
    if (r.request_context != (void *)2) {
        fprintf(stderr, "after %u empty polls: first out was request %p (%s), not the Send\n", empty_polls,
                r.request_context, nd_strerror(r.status));
        exit(1);
    }
    CHECK_ST(r.status, ND_SUCCESS);
    r = t_poll_one(c.cq, BOUND_MS);
    CHECK(r.request_context == (void *)1);
    CHECK_ST(r.status, ND_CANCELED);
    t_side_close(&c);
    t_expect_child_ok(pid);
    close(pipe_rd);
}

int main(int argc, char **argv)
{
    int only = argc > 1 ? atoi(argv[1]) : 0;

    if (!only || only == 1)
        close_flushes_receives();
    if (!only || only == 2)
        killed_peer_polled_disconnect();
    if (!only || only == 3)
        overrun_fails_errors_notify();
    if (!only || only == 4)
        for (uint32_t k = 0; k < 3; k++)
            success_before_flush(k);
    puts("flush and notify semantics ok");
    return 0;
}
