// SPDX-License-Identifier: MIT
/*
 * Every data operation over shm, by SGE count (0, 1, 32) and size (0, 1, the inline
 * threshold - 1, +0, +1, 4 KiB, 1 MiB, 64 MiB), verified byte for byte at the other end:
 * Send/Receive, RDMA Write, RDMA Read. Also: ND_OP_FLAG_INLINE from unregistered memory,
 * SEND_AND_SOLICIT_EVENT completing a SOLICITED notify (an unsolicited send does not).
 */
#include "t_conn.h"

#define BIG (64u << 20)
#define HALF (BIG + 4096)
#define NSGE 32

static const uint32_t sizes[] = { 0, 1, 255, 256, 257, 4096, 1u << 20, BIG };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

struct hello {
    uint64_t addr;
    uint32_t token;
};

/* Split [buf, buf+n) into @nsge SGEs (the last takes the remainder). */
static uint32_t split(nd_sge *sge, uint8_t *buf, uint32_t n, uint32_t nsge, uint32_t token)
{
    uint32_t per = nsge ? n / nsge : 0;

    for (uint32_t i = 0; i < nsge; i++)
        sge[i] = (nd_sge){ buf + i * per, i == nsge - 1 ? n - i * per : per, token };
    return nsge;
}

static void server(int port_pipe)
{
    struct t_side s;
    struct hello h;
    uint16_t port;
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };

    t_side_open(&s, 2 * HALF, 8, NSGE);
    h = (struct hello){ (uintptr_t)s.buf, s.token };
    port = t_listen(&s);
    CHECK(write(port_pipe, &port, sizeof(port)) == sizeof(port));
    nd_sge rs[NSGE];
    CHECK_ST(nd_qp_receive(s.qp, NULL, rs, split(rs, s.buf + HALF, BIG, NSGE, s.token)), ND_SUCCESS);
    /* Accept with inbound read limit 8 (the client may Read) and outbound 0. */
    t_accept(&s, 8, &h, sizeof(h));
    for (;;) {
        nd_result r = t_poll_one(s.cq, 20000);

        if (r.request_type == ND_REQUEST_TYPE_SEND)
            continue;
        if (r.status == ND_CANCELED)
            break;
        CHECK(r.status == ND_SUCCESS);
        /* Echo what came in, from the receive buffer, back out in one SGE. */
        CHECK_ST(nd_qp_receive(s.qp, NULL, rs, split(rs, s.buf + HALF, BIG, NSGE, s.token)), ND_SUCCESS);
        nd_sge ss = { s.buf + HALF, r.bytes_transferred, s.token };
        CHECK_ST(nd_qp_send(s.qp, NULL, &ss, r.bytes_transferred ? 1 : 0,
                            r.bytes_transferred == 3 ? ND_OP_FLAG_SEND_AND_SOLICIT_EVENT : 0), ND_SUCCESS);
    }
    (void)ov;
    t_side_close(&s);
}

static nd_result next_of(struct t_side *s, nd_request_type type)
{
    nd_result r;

    while ((r = t_poll_one(s->cq, 20000)).request_type != type)
        CHECK(r.status == ND_SUCCESS);
    CHECK_ST(r.status, ND_SUCCESS);
    return r;
}

int main(void)
{
    struct t_side s;
    struct hello h;
    uint32_t hl = sizeof(h), cases = 0;
    uint16_t port;
    int pp;
    pid_t pid = t_fork_server(server, &pp);
    nd_sge sge[NSGE], in[NSGE];
    uint8_t *src, *dst;

    t_side_open(&s, 2 * HALF, 8, NSGE);
    src = s.buf;
    dst = s.buf + HALF;
    CHECK(read(pp, &port, sizeof(port)) == sizeof(port));
    t_connect(&s, port, &h, &hl);
    uint32_t ird, ord;
    CHECK_ST(nd_connector_get_read_limits(s.c, &ird, &ord), ND_INVALID_DEVICE_STATE);   /* only before CompleteConnect */

    for (uint32_t si = 0; si < NSIZES; si++)
        for (uint32_t ns = 0; ns <= NSGE; ns = ns ? ns + 31 : 1) {
            uint32_t n = sizes[si];

            if ((ns == 0) != (n == 0) || (ns > n && n))
                continue;
            t_fill(src, n, si * 7 + ns);
            /* Send, echoed back into @ns SGEs. */
            memset(dst, 0xcc, n + 1);
            CHECK_ST(nd_qp_receive(s.qp, NULL, in, split(in, dst, n, ns, s.token)), ND_SUCCESS);
            CHECK_ST(nd_qp_send(s.qp, NULL, sge, split(sge, src, n, ns, s.token), 0), ND_SUCCESS);
            nd_result r = next_of(&s, ND_REQUEST_TYPE_RECEIVE);
            CHECK(r.bytes_transferred == n && memcmp(src, dst, n) == 0 && dst[n] == 0xcc);
            /* Write into the server's buffer, Read it back. */
            CHECK_ST(nd_qp_write(s.qp, NULL, sge, split(sge, src, n, ns, s.token), h.addr, h.token, 0), ND_SUCCESS);
            next_of(&s, ND_REQUEST_TYPE_WRITE);
            memset(dst, 0xcc, n + 1);
            CHECK_ST(nd_qp_read(s.qp, NULL, in, split(in, dst, n, ns, s.token), h.addr, h.token, 0), ND_SUCCESS);
            next_of(&s, ND_REQUEST_TYPE_READ);
            CHECK(memcmp(src, dst, n) == 0 && dst[n] == 0xcc);
            cases++;
        }

    /* INLINE sends and writes need no registration: a stack buffer, no token. */
    uint8_t stack_msg[100];
    t_fill(stack_msg, sizeof(stack_msg), 99);
    nd_sge unreg = { stack_msg, sizeof(stack_msg), 0 };
    CHECK_ST(nd_qp_receive(s.qp, NULL, in, split(in, dst, 4096, 1, s.token)), ND_SUCCESS);
    CHECK_ST(nd_qp_send(s.qp, NULL, &unreg, 1, ND_OP_FLAG_INLINE), ND_SUCCESS);
    CHECK(next_of(&s, ND_REQUEST_TYPE_RECEIVE).bytes_transferred == sizeof(stack_msg));
    CHECK(memcmp(dst, stack_msg, sizeof(stack_msg)) == 0);
    CHECK_ST(nd_qp_write(s.qp, NULL, &unreg, 1, h.addr, h.token, ND_OP_FLAG_INLINE), ND_SUCCESS);
    next_of(&s, ND_REQUEST_TYPE_WRITE);

    /* SOLICITED: an ordinary echo does not complete the notify; a solicited one does. */
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    CHECK_ST(nd_qp_receive(s.qp, NULL, in, split(in, dst, 4096, 1, s.token)), ND_SUCCESS);
    CHECK_ST(nd_qp_receive(s.qp, NULL, in, split(in, dst, 4096, 1, s.token)), ND_SUCCESS);
    nd_result r;
    while (nd_cq_get_results(s.cq, &r, 1))
        ;
    CHECK_ST(nd_cq_notify(s.cq, ND_CQ_NOTIFY_SOLICITED, &ov), ND_PENDING);
    nd_sge two = { src, 2, s.token }, three = { src, 3, s.token };
    CHECK_ST(nd_qp_send(s.qp, NULL, &two, 1, 0), ND_SUCCESS);       /* echoed unsolicited */
    uint64_t t0 = t_now_ms();
    uint32_t got_recv = 0;
    while (got_recv == 0 && t_now_ms() - t0 < 5000) {   /* poll only: the notify must stay pending */
        if (nd_cq_get_results(s.cq, &r, 1) && r.request_type == ND_REQUEST_TYPE_RECEIVE)
            got_recv++;
    }
    CHECK(got_recv == 1);
    CHECK_ST(nd_get_overlapped_result(&ov, 0), ND_PENDING);
    CHECK_ST(nd_qp_send(s.qp, NULL, &three, 1, 0), ND_SUCCESS);     /* echoed solicited */
    CHECK_ST(nd_get_overlapped_result(&ov, 1), ND_SUCCESS);
    next_of(&s, ND_REQUEST_TYPE_RECEIVE);

    nd_overlapped dov = { .flags = ND_OV_FLAG_NO_PORT };
    CHECK_ST(nd_connector_disconnect(s.c, &dov), ND_SUCCESS);
    t_expect_child_ok(pid);
    t_side_close(&s);
    printf("shm matrix: %u size x SGE cases of Send, Write and Read verified; inline, solicited: ok\n", cases);
    return 0;
}
