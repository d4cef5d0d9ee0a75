// SPDX-License-Identifier: MIT
/*
 * Load: thousands of connections held at once on one server adapter (10,000, or as many as
 * the hard RLIMIT_NOFILE allows; ND_TEST_HELD sets it), from as many client processes as
 * their descriptors need, every one carrying a message after all are up, so none was lost
 * or mixed up on the way; then all close, and the descriptors come back to where they were.
 */
#include "t_conn.h"
#include "t_proc.h"

#include <sys/prctl.h>
#include <sys/resource.h>

/* Descriptors each connection costs, measured: the server holds one per connection (its
 * socket; over shm the peer's CQ signals are one per peer CQ), a client one more (the
 * socket reserving its port). More is a regression: the test runs out of descriptors. */
#define SERVER_FDS_PER_CONN 1u
#define CLIENT_FDS_PER_CONN 2u
#define MAX_CLIENTS 8u

static uint32_t held, nclients;
static int go_pipe[MAX_CLIENTS][2];     /* parent -> client: every connection is accepted */

struct many {
    nd_adapter *a;
    nd_port *port;
    nd_cq *cq;
    nd_listener *l;
    nd_qp **qp;
    nd_connector **c;
    nd_mr *mr;
    uint32_t n;                 /* connections */
    uint32_t *words;            /* one per connection */
    uint32_t token;
};

static bool raise_fd_limit(uint32_t need)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return false;
    if (rl.rlim_cur >= need)
        return true;
    rl.rlim_cur = need;
    if (rl.rlim_max < need)
        rl.rlim_max = need;         /* root may raise the hard limit too (up to fs.nr_open) */
    return setrlimit(RLIMIT_NOFILE, &rl) == 0;
}

static void many_open(struct many *m, uint32_t n)
{
    nd_overlapped ov = { 0 };

    memset(m, 0, sizeof(*m));
    m->a = t_open_loopback();
    CHECK_ST(nd_port_create(&m->port), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_completion_queue(m->a, m->port, n * 2 + 16, 0, 0, &m->cq), ND_SUCCESS);
    m->n = n;
    m->qp = calloc(n, sizeof(*m->qp));
    m->c = calloc(n, sizeof(*m->c));
    m->words = calloc(n, sizeof(*m->words));
    CHECK(m->qp && m->c && m->words);
    CHECK_ST(nd_adapter_create_memory_region(m->a, m->port, &m->mr), ND_SUCCESS);
    CHECK_ST(t_wait(nd_mr_register(m->mr, m->words, n * sizeof(*m->words), ND_MR_FLAG_ALLOW_LOCAL_WRITE, &ov),
                    &ov), ND_SUCCESS);
    m->token = nd_mr_get_local_token(m->mr);
}

static void many_qp(struct many *m, uint32_t i)
{
    CHECK_ST(nd_adapter_create_queue_pair(m->a, m->cq, m->cq, (void *)(uintptr_t)i, 1, 1, 1, 1, 0, &m->qp[i]),
             ND_SUCCESS);
    CHECK_ST(nd_adapter_create_connector(m->a, m->port, &m->c[i]), ND_SUCCESS);
}

static void many_close(struct many *m)
{
    for (uint32_t i = 0; i < m->n && m->c[i]; i++) {
        CHECK_ST(nd_connector_close(m->c[i]), ND_SUCCESS);
        CHECK_ST(nd_qp_close(m->qp[i]), ND_SUCCESS);
    }
    t_close_base(m->l, m->mr, m->cq, m->port, m->a);
    free(m->qp);
    free(m->c);
    free(m->words);
}

/* One connection made and closed before the count: the adapter's engine and this thread's
 * wake descriptor (one per thread that ever waited on a connector) are then in place. */
static void warm_up(struct many *m, uint16_t port)
{
    struct t_side s = { .a = m->a, .port = m->port };

    CHECK_ST(nd_adapter_create_queue_pair(m->a, m->cq, m->cq, NULL, 1, 1, 1, 1, 0, &s.qp), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_connector(m->a, m->port, &s.c), ND_SUCCESS);
    if (port) {
        t_connect(&s, port, NULL, NULL);
    } else {
        s.l = m->l;
        t_accept(&s, 0, NULL, 0);
    }
    CHECK_ST(nd_connector_close(s.c), ND_SUCCESS);
    CHECK_ST(nd_qp_close(s.qp), ND_SUCCESS);
}

/* Client @k of nclients: connect its share, one after another; once told all are
 * accepted, send on each connection its own number. */
static void client(uint32_t k, int port_pipe)
{
    uint32_t lo = held * k / nclients, n = held * (k + 1) / nclients - lo;
    struct many m;
    uint16_t port;
    char go;

    CHECK(raise_fd_limit(n * CLIENT_FDS_PER_CONN + 256));
    CHECK(read(port_pipe, &port, sizeof(port)) == sizeof(port));
    many_open(&m, n);
    warm_up(&m, port);
    CHECK(read(go_pipe[k][0], &go, 1) == 1);     /* the server counted its descriptors */
    for (uint32_t i = 0; i < n; i++) {
        struct t_side s = { .a = m.a, .c = NULL };

        many_qp(&m, i);
        s.c = m.c[i];
        s.qp = m.qp[i];
        t_connect(&s, port, NULL, NULL);
    }
    CHECK(read(go_pipe[k][0], &go, 1) == 1);
    printf("client %u: %u descriptors while holding %u connections\n", k, open_fds(), n);
    fflush(stdout);
    for (uint32_t i = 0; i < n; i++) {
        m.words[i] = (lo + i) ^ 0xa5a5a5a5u;
        CHECK_ST(nd_qp_send(m.qp[i], NULL, &(nd_sge){ &m.words[i], 4, m.token }, 1, 0), ND_SUCCESS);
    }
    for (uint32_t done = 0; done < n; done++)
        CHECK_ST(t_poll_one(m.cq, 60000).status, ND_SUCCESS);
    CHECK(read(go_pipe[k][0], &go, 1) == 1);     /* the server has them all */
    many_close(&m);
}

/* How many to hold, and in how many client processes, within the hard RLIMIT_NOFILE. */
static bool plan(void)
{
    const char *v = getenv("ND_TEST_HELD");
    struct rlimit rl;

    CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
    uint64_t room = rl.rlim_max > 512 ? rl.rlim_max - 256 : 0, fit = room / SERVER_FDS_PER_CONN;
    held = v && atoi(v) > 0 ? (uint32_t)atoi(v) : (uint32_t)(fit < 10000 ? fit : 10000);
    nclients = room ? (uint32_t)((uint64_t)held * CLIENT_FDS_PER_CONN / room + 1) : 1;
    if (held < 100 || nclients > MAX_CLIENTS) {
        printf("RLIMIT_NOFILE (hard %llu) leaves room for too few connections\n", (unsigned long long)rl.rlim_max);
        return false;
    }
    if (!raise_fd_limit(held * SERVER_FDS_PER_CONN + 256)) {
        printf("RLIMIT_NOFILE cannot reach %u here\n", held * SERVER_FDS_PER_CONN + 256);
        return false;
    }
    return true;
}

/* Every connection's message came, each number once. */
static void receive_all(struct many *m)
{
    uint8_t *seen = calloc(held, 1);

    CHECK(seen);
    for (uint32_t n = 0; n < held; n++) {
        nd_result r = t_poll_one(m->cq, 60000);
        uint32_t i = (uint32_t)(uintptr_t)r.qp_context, v;

        CHECK_ST(r.status, ND_SUCCESS);
        CHECK(i < held && r.bytes_transferred == 4);
        v = m->words[i] ^ 0xa5a5a5a5u;
        CHECK(v < held && !seen[v]);
        seen[v] = 1;
    }
    free(seen);
}

/* A client that fails leaves connections the server would wait for forever: fail now. */
static void on_child_exit(int sig)
{
    siginfo_t si = { 0 };

    (void)sig;
    if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid &&
        (si.si_code != CLD_EXITED || si.si_status != 0)) {
        static const char msg[] = "a client process failed\n";

        (void)!write(2, msg, sizeof(msg) - 1);
        _exit(1);
    }
}

int main(void)
{
    struct many m;
    pid_t pid[MAX_CLIENTS];
    int pp[MAX_CLIENTS][2];

    if (!plan())
        return T_SKIP;
    signal(SIGCHLD, on_child_exit);
    for (uint32_t k = 0; k < nclients; k++) {
        CHECK(pipe(go_pipe[k]) == 0 && pipe(pp[k]) == 0);
        pid[k] = fork();
        CHECK(pid[k] >= 0);
        if (pid[k] == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            client(k, pp[k][0]);
            _exit(0);
        }
        close(pp[k][0]);
    }
    many_open(&m, held);
    struct t_side ls = { .a = m.a, .port = m.port };
    uint16_t port = t_listen(&ls);
    m.l = ls.l;
    for (uint32_t k = 0; k < nclients; k++)
        CHECK(write(pp[k][1], &port, sizeof(port)) == sizeof(port));
    for (uint32_t k = 0; k < nclients; k++)
        warm_up(&m, 0);
    uint32_t fds0 = settled_fds();
    uint64_t t0 = t_now_ms();
    for (uint32_t k = 0; k < nclients; k++)
        CHECK(write(go_pipe[k][1], "s", 1) == 1);
    for (uint32_t i = 0; i < held; i++)
        many_qp(&m, i);
    for (uint32_t i = 0; i < held; i++)
        CHECK_ST(nd_qp_receive(m.qp[i], NULL, &(nd_sge){ &m.words[i], 4, m.token }, 1), ND_SUCCESS);
    for (uint32_t i = 0; i < held; i++) {
        struct t_side s = { .a = m.a, .l = m.l, .c = m.c[i], .qp = m.qp[i] };

        t_accept(&s, 0, NULL, 0);
    }
    uint64_t t1 = t_now_ms();
    uint32_t fds_held = open_fds();
    for (uint32_t k = 0; k < nclients; k++)
        CHECK(write(go_pipe[k][1], "g", 1) == 1);
    receive_all(&m);
    signal(SIGCHLD, SIG_DFL);       /* they exit now; their verdicts come by waitpid */
    for (uint32_t k = 0; k < nclients; k++)
        CHECK(write(go_pipe[k][1], "d", 1) == 1);
    for (uint32_t k = 0; k < nclients; k++)
        t_expect_child_ok(pid[k]);
    for (uint32_t i = 0; i < held; i++) {
        CHECK_ST(nd_connector_close(m.c[i]), ND_SUCCESS);
        CHECK_ST(nd_qp_close(m.qp[i]), ND_SUCCESS);
        m.c[i] = NULL;
    }
    uint32_t fds1 = settled_fds();
    many_close(&m);
    printf("%u connections held at once on one adapter (from %u client processes; %llu ms to set up, "
           "%u descriptors while held, %.2f per connection), each carried its message; descriptors %u -> %u "
           "after closing\n", held, nclients, (unsigned long long)(t1 - t0), fds_held,
           (double)(fds_held - fds0) / held, fds0, fds1);
    CHECK(fds1 == fds0);
    return 0;
}
