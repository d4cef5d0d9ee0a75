// SPDX-License-Identifier: MIT
/*
 * Same-host security: a peer of another uid never gets the shm path (no shared memory, no
 * cross-memory access to either side); the connection is served over iwarp instead. The
 * forked server drops to nobody (65534) before it opens anything; the test process stays
 * root. Both check that their queue pair runs over iwarp and that a message arrives intact.
 * Needs root (exit 77 otherwise).
 */
#include "t_conn.h"
#include <netdirect/netdirect.h>
#include "core/qp_int.h"
#include "core/transport.h"

#include <grp.h>
#include <sys/prctl.h>

#define NOBODY 65534

static void expect_iwarp(const struct t_side *s)
{
    const struct nd_qp *qp = (const struct nd_qp *)s->qp;

    CHECK(qp->tops && strcmp(qp->tops->name, "iwarp") == 0);
}

static void server(int port_pipe)
{
    struct t_side s;
    uint16_t port;

    CHECK(setgroups(0, NULL) == 0 && setgid(NOBODY) == 0 && setuid(NOBODY) == 0);
    CHECK(getuid() == NOBODY && geteuid() == NOBODY);
    prctl(PR_SET_DUMPABLE, 1);          /* as a process started by that user would be */
    prctl(PR_SET_PDEATHSIG, SIGKILL);   /* the uid change cleared it: never outlive the test */
    t_side_open(&s, 4096, 4, 1);
    port = t_listen(&s);
    CHECK_ST(nd_qp_receive(s.qp, (void *)1, &(nd_sge){ s.buf, 4096, s.token }, 1), ND_SUCCESS);
    CHECK(write(port_pipe, &port, sizeof(port)) == sizeof(port));
    t_accept(&s, 0, NULL, 0);
    nd_result r = t_poll_one(s.cq, 10000);
    CHECK_ST(r.status, ND_SUCCESS);
    CHECK(r.request_context == (void *)1 && r.bytes_transferred == 1000);
    uint8_t want[1000];
    t_fill(want, sizeof(want), 9);
    CHECK(memcmp(s.buf, want, sizeof(want)) == 0);
    expect_iwarp(&s);
    t_side_close(&s);
}

int main(void)
{
    struct t_side c;
    uint16_t port;
    int rd;

    if (geteuid() != 0) {
        puts("needs root to become another user");
        return T_SKIP;
    }
    unsetenv("ND_TRANSPORT");           /* the automatic choice is what is under test */
    pid_t pid = t_fork_server(server, &rd);
    CHECK(read(rd, &port, sizeof(port)) == sizeof(port));
    t_side_open(&c, 4096, 4, 1);
    t_connect(&c, port, NULL, NULL);
    expect_iwarp(&c);
    t_fill(c.buf, 1000, 9);
    CHECK_ST(nd_qp_send(c.qp, (void *)2, &(nd_sge){ c.buf, 1000, c.token }, 1, 0), ND_SUCCESS);
    nd_result r = t_poll_one(c.cq, 10000);
    CHECK_ST(r.status, ND_SUCCESS);
    CHECK(r.request_type == ND_REQUEST_TYPE_SEND);
    t_expect_child_ok(pid);
    t_side_close(&c);
    puts("another uid: refused shm, served over iwarp");
    return 0;
}
