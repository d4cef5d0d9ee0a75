// SPDX-License-Identifier: MIT
/*
 * Error semantics over shm (ND2's completion statuses), one connection per case:
 *   invalid-write / invalid-read (bad token, bad address), over-write (past the region),
 *   write-violation (read-only region): initiator ND_ACCESS_VIOLATION, the target's posted
 *   receive ND_CANCELED, later requests ND_CANCELED;
 *   write-violation-4m: the same with a 4 MiB Write (ndmemorytest's NdWriteViolation), which
 *   the target refuses while most of it is still on the way;
 *   ndmval: 1024 B into a 1023 B receive: receiver ND_DATA_OVERRUN, sender ND_SUCCESS;
 *   send-no-receive: ND_IO_TIMEOUT after the bounded retry;
 *   receive-conn-closed: the peer disconnects at once: the posted receive ND_CANCELED;
 *   read-without-read-limit: the server accepted with no inbound Reads, so a Read fails.
 * Every completion is checked for type, QP context and request context.
 */
#include "t_conn.h"

enum scenario { INVALID_WRITE, INVALID_READ, OVER_WRITE, WRITE_VIOLATION, WRITE_VIOLATION_4M, MVAL, SEND_NO_RECEIVE, CONN_CLOSED,
                READ_NO_LIMIT, NCASES };
static const char *const names[] = { "invalid-write", "invalid-read", "over-write", "write-violation",
                                     "write-violation-4m", "ndmval",
                                     "send-no-receive", "receive-conn-closed", "read-without-read-limit" };

struct hello {
    uint64_t rw_addr, ro_addr;
    uint32_t rw_token, ro_token;
};

static enum scenario scen;
static int done_pipe[2];

static void server(int port_pipe)
{
    struct t_side s;
    nd_mr *ro;
    nd_overlapped ov = { 0 };
    static uint8_t ro_buf[4 << 20];
    uint16_t port;

    t_watchdog(45, names[scen]);
    t_side_open(&s, 1 << 16, 8, 2);
    CHECK_ST(nd_adapter_create_memory_region(s.a, s.port, &ro), ND_SUCCESS);
    CHECK_ST(nd_mr_register(ro, ro_buf, sizeof(ro_buf), ND_MR_FLAG_ALLOW_REMOTE_READ, &ov), ND_SUCCESS);
    struct hello h = { (uintptr_t)s.buf, (uintptr_t)ro_buf, s.token, nd_mr_get_remote_token(ro) };
    nd_sge rs = { s.buf, scen == MVAL ? 1023 : 4096, s.token };
    if (scen != SEND_NO_RECEIVE)
        CHECK_ST(nd_qp_receive(s.qp, (void *)0x51, &rs, 1), ND_SUCCESS);
    port = t_listen(&s);
    CHECK(write(port_pipe, &port, sizeof(port)) == sizeof(port));
    t_accept(&s, scen == READ_NO_LIMIT ? 0 : 8, &h, sizeof(h));
    if (scen == SEND_NO_RECEIVE) {
        char c;

        CHECK(read(done_pipe[0], &c, 1) == 1);   /* the client saw its timeout */
    } else {
        nd_result r = t_poll_one(s.cq, 5000);

        CHECK(r.request_type == ND_REQUEST_TYPE_RECEIVE && r.request_context == (void *)0x51 && r.qp_context == &s);
        CHECK_ST(r.status, scen == MVAL ? ND_DATA_OVERRUN : ND_CANCELED);
        if (scen == MVAL) {
            /* The connection ended: a receive posted now flushes at once. */
            CHECK_ST(nd_qp_receive(s.qp, (void *)0x52, &rs, 1), ND_SUCCESS);
            r = t_poll_one(s.cq, 5000);
            CHECK(r.status == ND_CANCELED && r.request_context == (void *)0x52);
        }
    }
    CHECK_ST(nd_mr_close(ro), ND_SUCCESS);
    t_side_close(&s);
}

static void client(uint16_t port)
{
    struct t_side s;
    struct hello h;
    uint32_t hl = sizeof(h);
    nd_result r;
    nd_overlapped ov = { 0 };
    nd_sge sge = { NULL, 16, 0 };

    t_watchdog(45, names[scen]);
    t_side_open(&s, scen == WRITE_VIOLATION_4M ? 4 << 20 : 1 << 16, 8, 2);
    sge = (nd_sge){ s.buf, 16, s.token };
    t_connect(&s, port, &h, &hl);
    switch (scen) {
    case INVALID_WRITE:
        CHECK_ST(nd_qp_write(s.qp, (void *)1, &sge, 1, h.rw_addr, h.rw_token ^ 0x100, 0), ND_SUCCESS);
        break;
    case INVALID_READ:
        CHECK_ST(nd_qp_read(s.qp, (void *)1, &sge, 1, h.rw_addr - 4096, h.rw_token, 0), ND_SUCCESS);
        break;
    case OVER_WRITE:
        CHECK_ST(nd_qp_write(s.qp, (void *)1, &sge, 1, h.rw_addr + (1 << 16) - 8, h.rw_token, 0), ND_SUCCESS);
        break;
    case WRITE_VIOLATION:
        CHECK_ST(nd_qp_write(s.qp, (void *)1, &sge, 1, h.ro_addr, h.ro_token, 0), ND_SUCCESS);
        break;
    case WRITE_VIOLATION_4M:
        sge.buffer_length = 4 << 20;
        CHECK_ST(nd_qp_write(s.qp, (void *)1, &sge, 1, h.ro_addr, h.ro_token, 0), ND_SUCCESS);
        sge.buffer_length = 16;
        break;
    case MVAL:
        sge.buffer_length = 1024;
        CHECK_ST(nd_qp_send(s.qp, (void *)1, &sge, 1, 0), ND_SUCCESS);
        break;
    case SEND_NO_RECEIVE:
        CHECK_ST(nd_qp_send(s.qp, (void *)1, &sge, 1, 0), ND_SUCCESS);
        break;
    case READ_NO_LIMIT:
        CHECK_ST(nd_qp_read(s.qp, (void *)1, &sge, 1, h.rw_addr, h.rw_token, 0), ND_SUCCESS);
        break;
    case CONN_CLOSED:
        CHECK_ST(nd_connector_disconnect(s.c, &ov), ND_SUCCESS);
        t_side_close(&s);
        return;
    default:
        exit(1);
    }
    uint64_t t0 = t_now_ms();
    r = t_poll_one(s.cq, 5000);
    CHECK(r.request_context == (void *)1 && r.qp_context == &s);
    CHECK_ST(r.status, scen == MVAL ? ND_SUCCESS : scen == SEND_NO_RECEIVE ? ND_IO_TIMEOUT
                       : scen == READ_NO_LIMIT ? ND_INVALID_DEVICE_REQUEST : ND_ACCESS_VIOLATION);
    if (scen == SEND_NO_RECEIVE) {
        CHECK(t_now_ms() - t0 < 2000);   /* the retry is bounded */
        CHECK(write(done_pipe[1], "x", 1) == 1);
    }
    if (scen != MVAL) {
        /* After the first error everything completes ND_CANCELED. */
        CHECK_ST(nd_qp_send(s.qp, (void *)2, &sge, 1, 0), ND_SUCCESS);
        r = t_poll_one(s.cq, 5000);
        CHECK(r.status == ND_CANCELED && r.request_context == (void *)2 && r.request_type == ND_REQUEST_TYPE_SEND);
    }
    t_side_close(&s);
}

int main(void)
{
    for (scen = 0; scen < NCASES; scen++) {
        uint16_t port;
        int pp;
        pid_t pid;

        CHECK(pipe(done_pipe) == 0);
        pid = t_fork_server(server, &pp);
        CHECK(read(pp, &port, sizeof(port)) == sizeof(port));
        client(port);
        t_expect_child_ok(pid);
        close(pp);
        close(done_pipe[0]);
        close(done_pipe[1]);
        printf("%-22s ok\n", names[scen]);
    }
    return 0;
}
