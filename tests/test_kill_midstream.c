// SPDX-License-Identifier: MIT
/*
 * A peer SIGKILLed while large Sends and Writes stream into its memory: every request
 * still outstanding completes as a lost connection (ND_CONNECTION_ABORTED, or flushed
 * ND_CANCELED, or ND_IO_TIMEOUT), never ND_ACCESS_VIOLATION: no access error happened.
 * Runs on both transports (over shm the bytes move by cross-memory calls into the dying
 * process).
 */
#include "t_conn.h"

#define BIG (4u << 20)
#define RECVS 4u

struct target {
    uint16_t port;
    uint64_t addr;
    uint32_t token;
};

static void victim(int port_pipe)
{
    struct t_side s;
    struct target t;

    t_side_open(&s, (size_t)BIG * (RECVS + 1), 8, 1);
    t.port = t_listen(&s);
    t.addr = (uint64_t)(uintptr_t)s.buf;
    t.token = nd_mr_get_remote_token(s.mr);
    for (uint32_t i = 0; i < RECVS; i++) {
        nd_sge rs = { s.buf + (size_t)(i + 1) * BIG, BIG, s.token };
        CHECK_ST(nd_qp_receive(s.qp, NULL, &rs, 1), ND_SUCCESS);
    }
    CHECK(write(port_pipe, &t, sizeof(t)) == sizeof(t));
    t_accept(&s, 8, NULL, 0);
    for (;;) {
        nd_result r;

        /* Take receives as they come and post them again: the stream never stalls. */
        if (nd_cq_get_results(s.cq, &r, 1) && r.request_type == ND_REQUEST_TYPE_RECEIVE &&
            r.status == ND_SUCCESS) {
            nd_sge rs = { s.buf + BIG, BIG, s.token };
            CHECK_ST(nd_qp_receive(s.qp, NULL, &rs, 1), ND_SUCCESS);
        }
    }
}

int main(void)
{
    struct t_side c;
    struct target t;
    int pipe_rd;
    pid_t pid = t_fork_server(victim, &pipe_rd);
    uint32_t outstanding = 0, done = 0, failed = 0;
    bool killed = false;
    uint64_t end;

    CHECK(read(pipe_rd, &t, sizeof(t)) == sizeof(t));
    t_side_open(&c, BIG, 4, 1);
    {
        struct sockaddr_in local = t_ipv4(t_my_ip(), 0), dest = t_ipv4(t_peer_ip(), t.port);
        nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };

        CHECK_ST(nd_connector_bind(c.c, (struct sockaddr *)&local, sizeof(local)), ND_SUCCESS);
        CHECK_ST(t_wait(nd_connector_connect(c.c, c.qp, (struct sockaddr *)&dest, sizeof(dest), 8, 8, NULL, 0, &ov),
                        &ov), ND_SUCCESS);
        CHECK_ST(t_wait(nd_connector_complete_connect(c.c, &ov), &ov), ND_SUCCESS);
    }
    nd_sge sge = { c.buf, BIG, c.token };
    end = t_now_ms() + 20000;
    for (uint32_t posted = 0; !killed || outstanding;) {
        nd_result r;

        while (!failed && outstanding < 4) {
            nd_status st = posted & 1 ? nd_qp_write(c.qp, NULL, &sge, 1, t.addr, t.token, 0)
                                      : nd_qp_send(c.qp, NULL, &sge, 1, 0);

            if (st != ND_SUCCESS)
                break;
            posted++;
            outstanding++;
        }
        if (nd_cq_get_results(c.cq, &r, 1)) {
            outstanding--;
            done++;
            if (r.status == ND_ACCESS_VIOLATION) {
                fprintf(stderr, "request %u completed ND_ACCESS_VIOLATION after the peer was killed\n", done);
                return 1;
            }
            CHECK(r.status == ND_SUCCESS || r.status == ND_CONNECTION_ABORTED || r.status == ND_CANCELED ||
                  r.status == ND_IO_TIMEOUT);
            failed += r.status != ND_SUCCESS;
        }
        if (!killed && done >= 6) {
            CHECK(kill(pid, SIGKILL) == 0);
            killed = true;
        }
        CHECK(t_now_ms() < end);
    }
    CHECK(waitpid(pid, NULL, 0) == pid);
    CHECK(failed > 0);
    close(pipe_rd);
    t_side_close(&c);
    printf("%u requests completed, %u of them as a lost connection\n", done, failed);
    return 0;
}
