// SPDX-License-Identifier: MIT
/*
 * Same-host connection and the basic data operations: connect/accept with private data,
 * Send/Receive (slot and cross-memory sizes) echoed back and verified byte for byte,
 * RDMA Write and Read against the server's buffer, then Disconnect flushing both sides.
 */
#include "t_conn.h"

#define BUF (1u << 20)

struct hello {
    uint64_t addr;
    uint32_t token;
};

static const uint32_t sizes[] = { 0, 1, 255, 256, 257, 4096, 16385, 32768, 65536, 65537, BUF / 2 };

static void server(int port_pipe)
{
    struct t_side s;
    struct hello h;
    uint16_t port;
    nd_overlapped ov = { 0 };

    t_side_open(&s, BUF, 16, 4);
    port = t_listen(&s);
    h = (struct hello){ (uintptr_t)s.buf, s.token };
    /* A receive posted before the connection exists. */
    nd_sge rs = { s.buf, BUF / 2, s.token };
    CHECK_ST(nd_qp_receive(s.qp, (void *)1, &rs, 1), ND_SUCCESS);
    CHECK(write(port_pipe, &port, sizeof(port)) == sizeof(port));
    t_accept(&s, 8, &h, sizeof(h));
    /* Echo every message back; the receive for the next one is posted before echoing.
     * Completions of the send and receive queues sharing one CQ keep no order between
     * them (a transport may learn of a Send's placement after the next message arrived). */
    uint32_t sends_done = 0, nmsg = sizeof(sizes) / sizeof(sizes[0]);
    for (size_t i = 0; i < nmsg; i++) {
        nd_result r;

        while ((r = t_poll_one(s.cq, 5000)).request_type == ND_REQUEST_TYPE_SEND) {
            CHECK(r.status == ND_SUCCESS && r.request_context == (void *)2);
            sends_done++;
        }
        CHECK(r.status == ND_SUCCESS && r.request_type == ND_REQUEST_TYPE_RECEIVE && r.request_context == (void *)1);
        CHECK(r.bytes_transferred == sizes[i] && r.qp_context == &s);
        CHECK_ST(nd_qp_receive(s.qp, (void *)1, &rs, 1), ND_SUCCESS);
        nd_sge ss = { s.buf, r.bytes_transferred, s.token };
        CHECK_ST(nd_qp_send(s.qp, (void *)2, &ss, r.bytes_transferred ? 1 : 0, 0), ND_SUCCESS);
    }
    /* The client disconnects once it has every echo: the posted receive flushes and
     * NotifyDisconnect completes. The flush may overtake the last Sends' completions (the
     * peer's fence answer and its disconnect can arrive together), so take both in any order. */
    bool flushed = false;
    while (sends_done < nmsg || !flushed) {
        nd_result r = t_poll_one(s.cq, 5000);

        if (r.request_type == ND_REQUEST_TYPE_SEND) {
            CHECK(r.status == ND_SUCCESS && r.request_context == (void *)2 && sends_done < nmsg);
            sends_done++;
        } else {
            CHECK(r.status == ND_CANCELED && r.request_type == ND_REQUEST_TYPE_RECEIVE && !flushed);
            CHECK(r.request_context == (void *)1);
            flushed = true;
        }
    }
    CHECK_ST(t_wait(nd_connector_notify_disconnect(s.c, &ov), &ov), ND_SUCCESS);
    CHECK_ST(nd_connector_disconnect(s.c, &ov), ND_SUCCESS);
    t_side_close(&s);
}

int main(void)
{
    struct t_side s;
    struct hello h;
    uint32_t hlen = sizeof(h);
    uint16_t port;
    int pp;
    pid_t pid = t_fork_server(server, &pp);
    uint8_t *ref = malloc(BUF);
    nd_overlapped ov = { 0 };

    t_side_open(&s, BUF, 16, 4);
    CHECK(read(pp, &port, sizeof(port)) == sizeof(port));
    t_connect(&s, port, &h, &hlen);
    CHECK(hlen == sizeof(h) && h.addr != 0);

    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        uint32_t n = sizes[i], half = n / 2;
        /* Two SGEs out, the echo lands in two other SGEs. */
        nd_sge out[2] = { { s.buf, half, s.token }, { s.buf + half, n - half, s.token } };
        nd_sge in[2] = { { s.buf + BUF / 2, half, s.token }, { s.buf + BUF / 2 + half, BUF / 2 - half, s.token } };

        t_fill(s.buf, n, (uint32_t)i);
        memset(s.buf + BUF / 2, 0xee, BUF / 2);
        memcpy(ref, s.buf, n);
        CHECK_ST(nd_qp_receive(s.qp, (void *)3, in, 2), ND_SUCCESS);
        CHECK_ST(nd_qp_send(s.qp, (void *)4, out, n ? 2 : 0, n <= 128 ? ND_OP_FLAG_INLINE : 0), ND_SUCCESS);
        nd_result r1 = t_poll_one(s.cq, 5000), r2 = t_poll_one(s.cq, 5000);
        nd_result *snd = r1.request_type == ND_REQUEST_TYPE_SEND ? &r1 : &r2, *rcv = snd == &r1 ? &r2 : &r1;
        CHECK(snd->status == ND_SUCCESS && snd->request_context == (void *)4);
        CHECK(rcv->status == ND_SUCCESS && rcv->request_context == (void *)3 && rcv->bytes_transferred == n);
        CHECK(memcmp(s.buf + BUF / 2, ref, n) == 0);
    }

    /* RDMA Write into the server's buffer, then Read it back elsewhere. */
    for (uint32_t n = 1; n <= 65536; n *= 16) {
        nd_sge src = { s.buf, n, s.token }, dst = { s.buf + BUF / 2, n, s.token };

        t_fill(s.buf, n, n);
        CHECK_ST(nd_qp_write(s.qp, (void *)5, &src, 1, h.addr + 100, h.token, 0), ND_SUCCESS);
        nd_result r = t_poll_one(s.cq, 5000);
        CHECK(r.status == ND_SUCCESS && r.request_type == ND_REQUEST_TYPE_WRITE && r.request_context == (void *)5);
        memset(s.buf + BUF / 2, 0, n);
        CHECK_ST(nd_qp_read(s.qp, (void *)6, &dst, 1, h.addr + 100, h.token, 0), ND_SUCCESS);
        r = t_poll_one(s.cq, 5000);
        CHECK(r.status == ND_SUCCESS && r.request_type == ND_REQUEST_TYPE_READ && r.request_context == (void *)6);
        CHECK(memcmp(s.buf, s.buf + BUF / 2, n) == 0);
    }

    /* Disconnect: our outstanding receive flushes too. */
    nd_sge in = { s.buf, 16, s.token };
    CHECK_ST(nd_qp_receive(s.qp, (void *)7, &in, 1), ND_SUCCESS);
    CHECK_ST(nd_connector_disconnect(s.c, &ov), ND_SUCCESS);
    nd_result r = t_poll_one(s.cq, 5000);
    CHECK(r.status == ND_CANCELED && r.request_context == (void *)7);
    CHECK_ST(nd_qp_send(s.qp, (void *)8, NULL, 0, 0), ND_SUCCESS);
    r = t_poll_one(s.cq, 5000);
    CHECK(r.status == ND_CANCELED && r.request_context == (void *)8 && r.request_type == ND_REQUEST_TYPE_SEND);
    t_expect_child_ok(pid);
    t_side_close(&s);
    free(ref);
    puts("shm basic ok");
    return 0;
}
