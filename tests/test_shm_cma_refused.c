// SPDX-License-Identifier: MIT
/*
 * Same-host peers whose memory cross-memory attach may not reach (Yama ptrace_scope, a
 * non-dumpable process) still connect over shm, and everything still works: Send, RDMA
 * Write, RDMA Read. Both peers run as nobody (root could reach anyone); one of them is
 * non-dumpable, so the other may neither fetch its descriptors (it hands them over
 * itself) nor reach its memory (it finishes the other's Reads and Writes through its
 * bounce channel). With both dumpable the same pair uses shm directly. Three more cases: a peer that may not fetch descriptors
 * (pidfd_getfd, which connection messages rely on; here a seccomp filter says ENOSYS, as
 * a kernel before 5.6 would), listener or dialer, and both peers refused it with EPERM (as
 * Docker's default seccomp profile does): the descriptors are handed over a unix socket
 * instead and the pair still uses shm. Needs root to become nobody (exit 77 otherwise).
 */
#include "t_conn.h"
#include "t_nofetch.h"
#include <netdirect/netdirect.h>
#include "core/qp_int.h"
#include "core/transport.h"

#include <errno.h>
#include <grp.h>
#include <sys/syscall.h>

#define NOBODY 65534
#define LEN 65536

enum refuser { NOBODY_REFUSES, SERVER_REFUSES, CLIENT_REFUSES, SERVER_NO_FETCH, CLIENT_NO_FETCH, BOTH_NO_FETCH };

struct target {
    uint64_t addr;
    uint32_t token;
};

static void become_nobody(bool dumpable)
{
    CHECK(setgroups(0, NULL) == 0 && setgid(NOBODY) == 0 && setuid(NOBODY) == 0);
    CHECK(prctl(PR_SET_DUMPABLE, dumpable ? 1 : 0) == 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);   /* the uid change cleared it: never outlive the test */
}

static const char *transport_of(const struct t_side *s)
{
    const struct nd_qp *qp = (const struct nd_qp *)s->qp;

    return qp->tops ? qp->tops->name : "none";
}

static bool yama_restricts(void)
{
    FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
    int v = 0;

    if (f) {
        if (fscanf(f, "%d", &v) != 1)
            v = 0;
        fclose(f);
    }
    return v > 0;
}

static void check_transport(const struct t_side *s, enum refuser who)
{
    const char *t = transport_of(s);

    if (strcmp(t, "shm") != 0) {
        fprintf(stderr, "case %d: connected over %s\n", (int)who, t);
        exit(1);
    }
}

/* Take the connection, hand out the buffer for Writes and Reads, check what came. */
static void server(enum refuser who, int port_pipe, int done_rd)
{
    struct t_side s;
    struct target tg;
    char c;

    become_nobody(who != SERVER_REFUSES);
    if (who == SERVER_NO_FETCH || who == BOTH_NO_FETCH)
        t_forbid_fetch(false, who == BOTH_NO_FETCH ? EPERM : ENOSYS);
    t_side_open(&s, LEN * 2, 4, 1);
    uint16_t port = t_listen(&s);
    CHECK_ST(nd_qp_receive(s.qp, (void *)1, &(nd_sge){ s.buf + LEN, 4096, s.token }, 1), ND_SUCCESS);
    t_fill(s.buf, LEN, 5);          /* what the client Reads, and then overwrites */
    tg = (struct target){ (uint64_t)(uintptr_t)s.buf, nd_mr_get_remote_token(s.mr) };
    CHECK(write(port_pipe, &port, sizeof(port)) == sizeof(port));
    t_accept(&s, 8, &tg, sizeof(tg));
    check_transport(&s, who);
    nd_result r = t_poll_one(s.cq, 10000);
    CHECK(r.status == ND_SUCCESS && r.bytes_transferred == 3000);
    uint8_t want[LEN];
    t_fill(want, 3000, 6);
    CHECK(memcmp(s.buf + LEN, want, 3000) == 0);
    CHECK(read(done_rd, &c, 1) == 1);       /* the client's Write has completed */
    t_fill(want, LEN, 7);
    CHECK(memcmp(s.buf, want, LEN) == 0);
    t_side_close(&s);
}

static void client(enum refuser who, uint16_t port, int done_wr)
{
    struct t_side s;
    struct target tg;
    uint32_t len = sizeof(tg);
    uint8_t want[LEN];

    become_nobody(who != CLIENT_REFUSES);
    if (who == CLIENT_NO_FETCH || who == BOTH_NO_FETCH)
        t_forbid_fetch(false, who == BOTH_NO_FETCH ? EPERM : ENOSYS);
    t_side_open(&s, LEN * 2, 4, 1);
    t_connect(&s, port, &tg, &len);
    check_transport(&s, who);
    CHECK_ST(nd_qp_read(s.qp, (void *)2, &(nd_sge){ s.buf, LEN, s.token }, 1, tg.addr, tg.token, 0), ND_SUCCESS);
    CHECK_ST(t_poll_one(s.cq, 10000).status, ND_SUCCESS);
    t_fill(want, LEN, 5);
    CHECK(memcmp(s.buf, want, LEN) == 0);
    t_fill(s.buf + LEN, 3000, 6);
    CHECK_ST(nd_qp_send(s.qp, (void *)3, &(nd_sge){ s.buf + LEN, 3000, s.token }, 1, 0), ND_SUCCESS);
    CHECK_ST(t_poll_one(s.cq, 10000).status, ND_SUCCESS);
    t_fill(s.buf, LEN, 7);
    CHECK_ST(nd_qp_write(s.qp, (void *)4, &(nd_sge){ s.buf, LEN, s.token }, 1, tg.addr, tg.token, 0), ND_SUCCESS);
    CHECK_ST(t_poll_one(s.cq, 10000).status, ND_SUCCESS);
    CHECK(write(done_wr, "w", 1) == 1);
    t_side_close(&s);
}

static void run_case(enum refuser who)
{
    int port_pipe[2], done[2];
    uint16_t port;
    pid_t srv, cli;

    CHECK(pipe(port_pipe) == 0 && pipe(done) == 0);
    srv = fork();
    CHECK(srv >= 0);
    if (srv == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        server(who, port_pipe[1], done[0]);
        _exit(0);
    }
    CHECK(read(port_pipe[0], &port, sizeof(port)) == sizeof(port));
    cli = fork();
    CHECK(cli >= 0);
    if (cli == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        client(who, port, done[1]);
        _exit(0);
    }
    t_expect_child_ok(cli);
    t_expect_child_ok(srv);
    close(port_pipe[0]), close(port_pipe[1]), close(done[0]), close(done[1]);
}

int main(void)
{
    static const char *const names[] = { "both reachable", "listener not reachable", "dialer not reachable",
                                         "listener cannot fetch", "dialer cannot fetch", "neither can fetch" };

    if (geteuid() != 0) {
        puts("needs root to become another user");
        return T_SKIP;
    }
    unsetenv("ND_TRANSPORT");           /* the automatic choice is what is under test */
    for (int who = NOBODY_REFUSES; who <= BOTH_NO_FETCH; who++) {
        bool refused = who == SERVER_REFUSES || who == CLIENT_REFUSES || yama_restricts();

        run_case((enum refuser)who);
        printf("%-24s Read, Send and Write of 64 KiB checked (over shm%s)\n", names[who],
               refused ? ", the bounce path" : "");
        fflush(stdout);             /* before the next forks */
    }
    return 0;
}
