/* SPDX-License-Identifier: MIT */
/*
 * Two connected sides for transport tests: the server runs in a forked child, the client
 * in the test process; they synchronise on pipes (the server writes its port when it
 * listens), never on sleep.
 */
#ifndef T_CONN_H
#define T_CONN_H

#include "t_util.h"

#include <poll.h>
#include <stdbool.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

struct t_side {
    nd_adapter *a;
    nd_port *port;
    nd_cq *cq;
    nd_qp *qp;
    nd_connector *c;
    nd_listener *l;
    nd_mr *mr;
    uint8_t *buf;
    size_t len;
    uint32_t token;
};

static inline uint64_t t_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static inline void t_side_open(struct t_side *s, size_t len, uint32_t depth, uint32_t nsge)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };

    memset(s, 0, sizeof(*s));
    s->a = t_open_loopback();
    CHECK_ST(nd_port_create(&s->port), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_completion_queue(s->a, s->port, depth * 4, 0, 0, &s->cq), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_queue_pair(s->a, s->cq, s->cq, s, depth, depth, nsge, nsge, 128, &s->qp),
             ND_SUCCESS);
    CHECK_ST(nd_adapter_create_connector(s->a, s->port, &s->c), ND_SUCCESS);
    s->len = len;
    s->buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(s->buf != MAP_FAILED);
    CHECK_ST(nd_adapter_create_memory_region(s->a, s->port, &s->mr), ND_SUCCESS);
    CHECK_ST(nd_mr_register(s->mr, s->buf, len,
                            ND_MR_FLAG_ALLOW_REMOTE_WRITE | ND_MR_FLAG_ALLOW_REMOTE_READ | ND_MR_FLAG_RDMA_READ_SINK, &ov),
             ND_SUCCESS);
    s->token = nd_mr_get_local_token(s->mr);
}

/* Close what every test side has, once its connectors and queue pairs are gone: the
 * listener (if any), the region, the CQ, the port, the adapter; each must succeed. */
static inline void t_close_base(nd_listener *l, nd_mr *mr, nd_cq *cq, nd_port *port, nd_adapter *a)
{
    if (l)
        CHECK_ST(nd_listener_close(l), ND_SUCCESS);
    CHECK_ST(nd_mr_close(mr), ND_SUCCESS);
    CHECK_ST(nd_cq_close(cq), ND_SUCCESS);
    CHECK_ST(nd_port_close(port), ND_SUCCESS);
    CHECK_ST(nd_adapter_close(a), ND_SUCCESS);
}

static inline void t_side_close(struct t_side *s)
{
    if (s->c)
        CHECK_ST(nd_connector_close(s->c), ND_SUCCESS);
    CHECK_ST(nd_qp_close(s->qp), ND_SUCCESS);
    t_close_base(s->l, s->mr, s->cq, s->port, s->a);
    munmap(s->buf, s->len);
}

/* Wait for @ov by the route ND's blocking tools use: GetOverlappedResult(wait). */
/* Waited for here, so NO_PORT: completions queued on a port nobody dequeues pile up. */
static inline nd_status t_wait(nd_status st, nd_overlapped *ov)
{
    return st == ND_PENDING ? nd_get_overlapped_result(ov, 1) : st;
}

static inline uint16_t t_listen(struct t_side *s)
{
    struct sockaddr_in sin = t_ipv4(t_my_ip(), 0);
    uint32_t len = sizeof(sin);

    CHECK_ST(nd_adapter_create_listener(s->a, s->port, &s->l), ND_SUCCESS);
    CHECK_ST(nd_listener_bind(s->l, (struct sockaddr *)&sin, sizeof(sin)), ND_SUCCESS);
    CHECK_ST(nd_listener_listen(s->l, 0), ND_SUCCESS);
    CHECK_ST(nd_listener_get_local_address(s->l, (struct sockaddr *)&sin, &len), ND_SUCCESS);
    return ntohs(sin.sin_port);
}

/* A server side: opened (4 KiB, 4 deep, 1 SGE), listening, its port written to @port_pipe. */
static inline void t_serve_open(struct t_side *s, int port_pipe)
{
    uint16_t port;

    t_side_open(s, 4096, 4, 1);
    port = t_listen(s);
    CHECK(write(port_pipe, &port, sizeof(port)) == sizeof(port));
}

static inline void t_accept(struct t_side *s, uint32_t ird, const void *pdata, uint32_t plen)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };

    CHECK_ST(t_wait(nd_listener_get_connection_request(s->l, s->c, &ov), &ov), ND_SUCCESS);
    CHECK_ST(t_wait(nd_connector_accept(s->c, s->qp, ird, ird, pdata, plen, &ov), &ov), ND_SUCCESS);
}

static inline void t_connect(struct t_side *s, uint16_t port, void *pdata, uint32_t *plen)
{
    struct sockaddr_in local = t_ipv4(t_my_ip(), 0), dest = t_ipv4(t_peer_ip(), port);
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };

    CHECK_ST(nd_connector_bind(s->c, (struct sockaddr *)&local, sizeof(local)), ND_SUCCESS);
    CHECK_ST(t_wait(nd_connector_connect(s->c, s->qp, (struct sockaddr *)&dest, sizeof(dest), 8, 8, NULL, 0, &ov),
                    &ov), ND_SUCCESS);
    if (pdata)
        CHECK_ST(nd_connector_get_private_data(s->c, pdata, plen), ND_SUCCESS);
    CHECK_ST(t_wait(nd_connector_complete_connect(s->c, &ov), &ov), ND_SUCCESS);
}

/* Bind @s's connector to this side's address (port 0) and Connect it to @dest: the final
 * status, and in *ms how long the Connect took. */
static inline nd_status t_connect_timed(struct t_side *s, const struct sockaddr_in *dest, uint64_t *ms)
{
    struct sockaddr_in local = t_ipv4(t_my_ip(), 0);
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    uint64_t t0;
    nd_status st;

    CHECK_ST(nd_connector_bind(s->c, (struct sockaddr *)&local, sizeof(local)), ND_SUCCESS);
    t0 = t_now_ms();
    st = t_wait(nd_connector_connect(s->c, s->qp, (const struct sockaddr *)dest, sizeof(*dest), 0, 0, NULL, 0, &ov),
                &ov);
    *ms = t_now_ms() - t0;
    return st;
}

/* Poll the CQ for exactly one result, failing the test after @timeout_ms. */
static inline nd_result t_poll_one(nd_cq *cq, int timeout_ms)
{
    uint64_t end = t_now_ms() + (uint64_t)timeout_ms;
    nd_result r;

    while (nd_cq_get_results(cq, &r, 1) == 0)
        if (t_now_ms() > end) {
            fprintf(stderr, "no completion within %d ms\n", timeout_ms);
            exit(1);
        }
    return r;
}

static inline void t_fill(uint8_t *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

/* Fork the server role; the child's exit status is the server's verdict. */
static inline pid_t t_fork_server(void (*server)(int port_pipe), int *port_pipe_rd)
{
    int p[2];
    pid_t pid;

    CHECK(pipe(p) == 0);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);   /* never outlive a failed test */
        t_become_child_side();
        close(p[0]);
        server(p[1]);
        _exit(0);
    }
    close(p[1]);
    *port_pipe_rd = p[0];
    return pid;
}

static inline void t_expect_child_ok(pid_t pid)
{
    int status;

    CHECK(waitpid(pid, &status, 0) == pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "server process failed (status 0x%x)\n", status);
        exit(1);
    }
}

#endif
