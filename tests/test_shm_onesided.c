// SPDX-License-Identifier: MIT
/*
 * One-sided operations need no target CPU: the server blocks in read() on a pipe while
 * the client completes 1,000 Writes and 1,000 Reads against its memory, verifying every
 * Read; the server then checks its buffer. Then memory windows: Bind (a token valid as
 * soon as Bind returns), Writes and Reads through the window, deregistration refused
 * while bound, Invalidate ordered with sends, and access after Invalidate refused.
 */
#include "t_conn.h"

#define BUF (1u << 20)
#define OPS 1000

struct hello {
    uint64_t addr;
    uint32_t token;
};

static int go[2], mw_pipe[2];

static uint8_t pattern(uint32_t op, uint32_t i)
{
    return (uint8_t)(op * 31 + i);
}

static void server(int port_pipe)
{
    struct t_side s;
    struct hello h;
    uint16_t port;
    char c;
    nd_overlapped ov = { 0 };
    nd_mw *mw;

    t_side_open(&s, BUF, 8, 2);
    h = (struct hello){ (uintptr_t)s.buf, s.token };
    port = t_listen(&s);
    CHECK(write(port_pipe, &port, sizeof(port)) == sizeof(port));
    nd_sge rs = { s.buf + BUF - 64, 64, s.token };
    CHECK_ST(nd_qp_receive(s.qp, (void *)1, &rs, 1), ND_SUCCESS);
    t_accept(&s, 8, &h, sizeof(h));
    CHECK(read(go[0], &c, 1) == 1);     /* asleep while the client works on our memory */
    for (uint32_t op = 0; op < OPS; op++)
        for (uint32_t i = 0; i < 256; i++)
            CHECK(s.buf[op * 256 + i] == pattern(op, i));

    /* A window over [4096, 12288): its token works before the Bind completion is reaped. */
    CHECK_ST(nd_adapter_create_memory_window(s.a, &mw), ND_SUCCESS);
    CHECK_ST(nd_qp_bind(s.qp, (void *)2, s.mr, mw, s.buf + 4096, 8192, ND_OP_FLAG_ALLOW_READ | ND_OP_FLAG_ALLOW_WRITE),
             ND_SUCCESS);
    h = (struct hello){ (uintptr_t)s.buf + 4096, nd_mw_get_remote_token(mw) };
    CHECK(write(mw_pipe[1], &h, sizeof(h)) == sizeof(h));
    nd_result r = t_poll_one(s.cq, 5000);
    CHECK(r.status == ND_SUCCESS && r.request_type == ND_REQUEST_TYPE_BIND && r.request_context == (void *)2);
    CHECK_ST(nd_mr_deregister(s.mr, &ov), ND_DEVICE_BUSY);
    r = t_poll_one(s.cq, 5000);        /* the client says it is done with the window */
    CHECK(r.status == ND_SUCCESS && r.request_type == ND_REQUEST_TYPE_RECEIVE);
    CHECK(s.buf[4096 + 100] == 0xab);
    CHECK_ST(nd_qp_invalidate(s.qp, (void *)3, mw, 0), ND_SUCCESS);
    r = t_poll_one(s.cq, 5000);
    CHECK(r.status == ND_SUCCESS && r.request_type == ND_REQUEST_TYPE_INVALIDATE && r.request_context == (void *)3);
    CHECK_ST(nd_mw_close(mw), ND_SUCCESS);
    uint8_t before[16];
    memcpy(before, s.buf + 4096 + 200, sizeof(before));
    CHECK(write(mw_pipe[1], "i", 1) == 1);
    /* The client's access after invalidation kills the connection: our receive flushes. */
    CHECK_ST(nd_qp_receive(s.qp, (void *)4, &rs, 1), ND_SUCCESS);
    r = t_poll_one(s.cq, 5000);
    CHECK(r.status == ND_CANCELED && r.request_context == (void *)4);
    CHECK(memcmp(before, s.buf + 4096 + 200, sizeof(before)) == 0);   /* nothing was written */
    t_side_close(&s);
}

int main(void)
{
    struct t_side s;
    struct hello h;
    uint32_t hl = sizeof(h);
    uint16_t port;
    int pp;
    pid_t pid;
    char c;

    CHECK(pipe(go) == 0 && pipe(mw_pipe) == 0);
    pid = t_fork_server(server, &pp);
    t_side_open(&s, BUF, 8, 2);
    CHECK(read(pp, &port, sizeof(port)) == sizeof(port));
    t_connect(&s, port, &h, &hl);

    uint8_t *src = s.buf, *dst = s.buf + BUF / 2;
    for (uint32_t op = 0; op < OPS; op++) {
        nd_sge w = { src, 256, s.token }, rd = { dst, 256, s.token };

        for (uint32_t i = 0; i < 256; i++)
            src[i] = pattern(op, i);
        CHECK_ST(nd_qp_write(s.qp, (void *)5, &w, 1, h.addr + op * 256, h.token, 0), ND_SUCCESS);
        nd_result r = t_poll_one(s.cq, 5000);
        CHECK(r.status == ND_SUCCESS && r.request_type == ND_REQUEST_TYPE_WRITE);
        memset(dst, 0, 256);
        CHECK_ST(nd_qp_read(s.qp, (void *)6, &rd, 1, h.addr + op * 256, h.token, 0), ND_SUCCESS);
        r = t_poll_one(s.cq, 5000);
        CHECK(r.status == ND_SUCCESS && r.request_type == ND_REQUEST_TYPE_READ);
        CHECK(memcmp(src, dst, 256) == 0);
    }
    CHECK(write(go[1], "g", 1) == 1);

    /* Through the window. */
    CHECK(read(mw_pipe[0], &h, sizeof(h)) == sizeof(h));
    nd_sge w = { src, 16, s.token }, rd = { dst, 16, s.token };
    memset(src, 0xab, 16);
    CHECK_ST(nd_qp_write(s.qp, NULL, &w, 1, h.addr + 100, h.token, ND_OP_FLAG_SILENT_SUCCESS), ND_SUCCESS);
    CHECK_ST(nd_qp_read(s.qp, (void *)7, &rd, 1, h.addr + 100, h.token, 0), ND_SUCCESS);
    nd_result r = t_poll_one(s.cq, 5000);   /* the silent Write leaves no result */
    CHECK(r.status == ND_SUCCESS && r.request_context == (void *)7 && dst[15] == 0xab);
    CHECK_ST(nd_qp_send(s.qp, (void *)8, NULL, 0, 0), ND_SUCCESS);
    r = t_poll_one(s.cq, 5000);
    CHECK(r.status == ND_SUCCESS && r.request_type == ND_REQUEST_TYPE_SEND);
    CHECK(read(mw_pipe[0], &c, 1) == 1);    /* invalidated */
    CHECK_ST(nd_qp_write(s.qp, (void *)9, &w, 1, h.addr + 200, h.token, 0), ND_SUCCESS);
    r = t_poll_one(s.cq, 5000);
    CHECK(r.status == ND_ACCESS_VIOLATION && r.request_context == (void *)9);
    t_expect_child_ok(pid);
    t_side_close(&s);
    puts("one-sided without the target CPU, windows: ok");
    return 0;
}
