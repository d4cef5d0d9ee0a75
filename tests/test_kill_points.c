// SPDX-License-Identifier: MIT
/*
 * Faults: a peer killed with SIGKILL at chosen points of its work — after taking our
 * connection request but before accepting it, in the middle of its RDMA Writes into us,
 * while our RDMA Reads from it are in flight, in the middle of a burst of Sends. The peer
 * kills itself at that point (raise), so the point is exact and nothing waits on a timer.
 * Each time, what we had outstanding completes (a result or a flush) within a second, and a
 * connection to another, healthy peer through the same CQ keeps working.
 */
#include "t_conn.h"

#define REGION (16u << 20)
#define CHUNK (1u << 20)
#define DOOMED ((void *)0xd00d)   /* the context of the queue pair whose peer dies */

enum point { AT_CONNECT, MID_WRITES, MID_READS, MID_SENDS };

struct exposed {
    uint64_t addr;
    uint32_t token;
};

static enum point point;
static int go_pipe[2];          /* test -> peer: our Reads are posted */

/* The peer: listens, and dies where the point says. */
static void peer(int port_pipe)
{
    struct t_side s;
    nd_overlapped ov = { 0 };
    uint16_t port;

    t_side_open(&s, REGION, 16, 1);
    port = t_listen(&s);
    CHECK(write(port_pipe, &port, sizeof(port)) == sizeof(port));
    CHECK_ST(t_wait(nd_listener_get_connection_request(s.l, s.c, &ov), &ov), ND_SUCCESS);
    if (point == AT_CONNECT)
        raise(SIGKILL);
    struct exposed me = { (uintptr_t)s.buf, nd_mr_get_remote_token(s.mr) }, you;
    uint32_t len = sizeof(you);
    CHECK_ST(nd_connector_get_private_data(s.c, &you, &len), ND_SUCCESS);
    CHECK_ST(t_wait(nd_connector_accept(s.c, s.qp, 8, 8, &me, sizeof(me), &ov), &ov), ND_SUCCESS);
    if (point == MID_READS) {
        char c;

        CHECK(read(go_pipe[0], &c, 1) == 1);
        raise(SIGKILL);
    }
    for (uint32_t i = 0, done = 0;; i++) {
        nd_sge sge = { s.buf, point == MID_SENDS ? 512 : CHUNK, s.token };

        if (point == MID_WRITES)
            CHECK_ST(nd_qp_write(s.qp, NULL, &sge, 1, you.addr + (uint64_t)(i % 8) * CHUNK, you.token, 0),
                     ND_SUCCESS);
        else
            CHECK_ST(nd_qp_send(s.qp, NULL, &sge, 1, 0), ND_SUCCESS);
        if (i >= 7) {
            CHECK_ST(t_poll_one(s.cq, 10000).status, ND_SUCCESS);
            done++;
        }
        if (done == 5)
            raise(SIGKILL);         /* in the middle: more of them are in flight */
    }
}

/* A healthy echo peer on the same CQ, before and after. */
static void echo_peer(int port_pipe)
{
    struct t_side s;
    uint16_t port;

    t_side_open(&s, 4096, 4, 1);
    port = t_listen(&s);
    CHECK_ST(nd_qp_receive(s.qp, NULL, &(nd_sge){ s.buf, 64, s.token }, 1), ND_SUCCESS);
    CHECK(write(port_pipe, &port, sizeof(port)) == sizeof(port));
    t_accept(&s, 0, NULL, 0);
    for (;;) {
        nd_result r = t_poll_one(s.cq, 30000);

        if (r.request_type == ND_REQUEST_TYPE_SEND)
            continue;
        if (r.status == ND_CANCELED)
            break;
        CHECK_ST(r.status, ND_SUCCESS);
        CHECK_ST(nd_qp_receive(s.qp, NULL, &(nd_sge){ s.buf, 64, s.token }, 1), ND_SUCCESS);
        CHECK_ST(nd_qp_send(s.qp, NULL, &(nd_sge){ s.buf, r.bytes_transferred, s.token }, 1, 0), ND_SUCCESS);
    }
    t_side_close(&s);
}

static void echo_round(struct t_side *s, uint32_t n)
{
    CHECK_ST(nd_qp_receive(s->qp, (void *)7, &(nd_sge){ s->buf + 64, 64, s->token }, 1), ND_SUCCESS);
    memcpy(s->buf, &n, sizeof(n));
    CHECK_ST(nd_qp_send(s->qp, (void *)8, &(nd_sge){ s->buf, sizeof(n), s->token }, 1, 0), ND_SUCCESS);
    for (int got = 0; got < 2;) {
        nd_result r = t_poll_one(s->cq, 5000);

        if (r.qp_context == DOOMED)
            continue;               /* left over from the dead peer's queue pair */
        CHECK_ST(r.status, ND_SUCCESS);
        CHECK(r.qp_context == s);
        got++;
    }
    CHECK(memcmp(s->buf + 64, &n, sizeof(n)) == 0);
}

/* Connect to the doomed peer, do our part, and see everything outstanding end in time. */
static uint64_t run_point(struct t_side *s)
{
    uint64_t took = 0;
    nd_overlapped ov = { 0 };
    int rd;
    uint16_t port;
    nd_connector *c;
    nd_qp *qp;

    pid_t pid = t_fork_server(peer, &rd);
    CHECK(read(rd, &port, sizeof(port)) == sizeof(port));
    close(rd);
    CHECK_ST(nd_adapter_create_connector(s->a, s->port, &c), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_queue_pair(s->a, s->cq, s->cq, DOOMED, 64, 32, 1, 1, 0, &qp), ND_SUCCESS);
    for (uint32_t i = 0; i < 16; i++)
        CHECK_ST(nd_qp_receive(qp, (void *)(uintptr_t)(100 + i), &(nd_sge){ s->buf + 4096, 4096, s->token }, 1),
                 ND_SUCCESS);
    struct sockaddr_in local = t_ipv4(t_my_ip(), 0), dest = t_ipv4(t_peer_ip(), port);
    struct exposed me = { (uintptr_t)s->buf + CHUNK, nd_mr_get_remote_token(s->mr) }, peer_mem;
    uint32_t outstanding = 16, len = sizeof(peer_mem);
    CHECK_ST(nd_connector_bind(c, (struct sockaddr *)&local, sizeof(local)), ND_SUCCESS);
    nd_status st = t_wait(nd_connector_connect(c, qp, (struct sockaddr *)&dest, sizeof(dest), 8, 8, &me, sizeof(me),
                                               &ov), &ov);
    uint64_t t0 = t_now_ms();
    if (point == AT_CONNECT) {
        CHECK(ND_FAILED(st));       /* refused or aborted: the peer died holding our request */
        took = t_now_ms() - t0;
        CHECK(took < 2000);
    } else {
        CHECK_ST(st, ND_SUCCESS);
        CHECK_ST(nd_connector_get_private_data(c, &peer_mem, &len), ND_SUCCESS);
        CHECK_ST(t_wait(nd_connector_complete_connect(c, &ov), &ov), ND_SUCCESS);
        if (point == MID_READS) {
            for (uint32_t i = 0; i < 8; i++) {
                nd_sge sge = { s->buf + 2 * CHUNK + (size_t)i * CHUNK, CHUNK, s->token };

                CHECK_ST(nd_qp_read(qp, (void *)(uintptr_t)(200 + i), &sge, 1, peer_mem.addr + (uint64_t)i * CHUNK,
                                    peer_mem.token, 0), ND_SUCCESS);
            }
            outstanding += 8;
            CHECK(write(go_pipe[1], "g", 1) == 1);
        }
        /* Everything we had posted ends, and within a second of the peer's death (whose
         * moment we learn from waitpid: it raises SIGKILL itself). */
        int status;
        CHECK(waitpid(pid, &status, 0) == pid && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        t0 = t_now_ms();
        bool failed = false;
        while (outstanding) {
            nd_result r = t_poll_one(s->cq, 1500);

            CHECK(r.qp_context == DOOMED && r.request_type != ND_REQUEST_TYPE_SEND);
            /* A receive the peer filled, or a Read answered before the kill, may succeed;
             * the rest end with an error or a flush. */
            failed |= r.status != ND_SUCCESS;
            outstanding--;
        }
        CHECK(failed);
        took = t_now_ms() - t0;
        CHECK(took < 1000);
        pid = 0;
    }
    if (pid)
        CHECK(waitpid(pid, NULL, 0) == pid);
    CHECK_ST(nd_connector_close(c), ND_SUCCESS);
    CHECK_ST(nd_qp_close(qp), ND_SUCCESS);
    return took;
}

int main(void)
{
    static const char *const names[] = { "at connect", "mid Writes", "mid Reads", "mid Sends" };
    struct t_side s;
    uint16_t eport;
    int erd;

    setvbuf(stdout, NULL, _IONBF, 0);       /* forked peers must not repeat buffered lines */
    CHECK(pipe(go_pipe) == 0);
    pid_t echo = t_fork_server(echo_peer, &erd);
    CHECK(read(erd, &eport, sizeof(eport)) == sizeof(eport));
    t_side_open(&s, REGION, 16, 1);         /* a CQ of 64: room for the doomed QP's 24 requests too */
    t_connect(&s, eport, NULL, NULL);
    for (point = AT_CONNECT; point <= MID_SENDS; point++) {
        echo_round(&s, point);
        uint64_t ms = run_point(&s);
        echo_round(&s, 100 + point);            /* the healthy peer, through the same CQ */
        printf("%-11s: the survivor's requests ended %llu ms after the death; the other connection works\n",
               names[point], (unsigned long long)ms);
    }
    nd_overlapped ov = { 0 };
    CHECK_ST(t_wait(nd_connector_disconnect(s.c, &ov), &ov), ND_SUCCESS);
    t_expect_child_ok(echo);
    t_side_close(&s);
    return 0;
}
