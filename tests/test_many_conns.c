// SPDX-License-Identifier: MIT
/*
 * Load: thousands of connections held at once on one adapter per side (10,000, or as many
 * as the hard RLIMIT_NOFILE allows at FDS_PER_CONN each; ND_TEST_HELD sets it), every one
 * carrying a message after all are up, so none was lost or mixed up on the way; then all
 * close, and the descriptors come back to where they were.
 */
#include "t_conn.h"
#include "t_proc.h"

#include <sys/prctl.h>
#include <sys/resource.h>

#define FDS_PER_CONN 8u         /* upper bound per side: socket, region, doorbells, peer signals */

static uint32_t held;
static int go_pipe[2];          /* parent -> child: every connection is accepted */

struct many {
    nd_adapter *a;
    nd_port *port;
    nd_cq *cq;
    nd_listener *l;
    nd_qp **qp;
    nd_connector **c;
    nd_mr *mr;
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

static void many_open(struct many *m)
{
    nd_overlapped ov = { 0 };

    memset(m, 0, sizeof(*m));
    m->a = t_open_loopback();
    CHECK_ST(nd_port_create(&m->port), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_completion_queue(m->a, m->port, held * 2 + 16, 0, 0, &m->cq), ND_SUCCESS);
    m->qp = calloc(held, sizeof(*m->qp));
    m->c = calloc(held, sizeof(*m->c));
    m->words = calloc(held, sizeof(*m->words));
    CHECK(m->qp && m->c && m->words);
    CHECK_ST(nd_adapter_create_memory_region(m->a, m->port, &m->mr), ND_SUCCESS);
    CHECK_ST(t_wait(nd_mr_register(m->mr, m->words, held * sizeof(*m->words), ND_MR_FLAG_ALLOW_LOCAL_WRITE, &ov),
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
    for (uint32_t i = 0; i < held; i++) {
        CHECK_ST(nd_connector_close(m->c[i]), ND_SUCCESS);
        CHECK_ST(nd_qp_close(m->qp[i]), ND_SUCCESS);
    }
    if (m->l)
        CHECK_ST(nd_listener_close(m->l), ND_SUCCESS);
    CHECK_ST(nd_mr_close(m->mr), ND_SUCCESS);
    CHECK_ST(nd_cq_close(m->cq), ND_SUCCESS);
    CHECK_ST(nd_port_close(m->port), ND_SUCCESS);
    CHECK_ST(nd_adapter_close(m->a), ND_SUCCESS);
    free(m->qp);
    free(m->c);
    free(m->words);
}

/* The client: connect them all, one after another; once told all are accepted, send each
 * connection its own number. */
static void client(int port_pipe)
{
    struct many m;
    uint16_t port;
    char go;

    CHECK(raise_fd_limit(held * FDS_PER_CONN + 256));
    CHECK(read(port_pipe, &port, sizeof(port)) == sizeof(port));
    many_open(&m);
    for (uint32_t i = 0; i < held; i++) {
        struct t_side s = { .a = m.a, .c = NULL };

        many_qp(&m, i);
        s.c = m.c[i];
        s.qp = m.qp[i];
        t_connect(&s, port, NULL, NULL);
    }
    CHECK(read(go_pipe[0], &go, 1) == 1);
    for (uint32_t i = 0; i < held; i++) {
        m.words[i] = i ^ 0xa5a5a5a5u;
        CHECK_ST(nd_qp_send(m.qp[i], NULL, &(nd_sge){ &m.words[i], 4, m.token }, 1, 0), ND_SUCCESS);
    }
    for (uint32_t done = 0; done < held; done++)
        CHECK_ST(t_poll_one(m.cq, 60000).status, ND_SUCCESS);
    CHECK(read(go_pipe[0], &go, 1) == 1);     /* the server has them all */
    many_close(&m);
}

int main(void)
{
    const char *v = getenv("ND_TEST_HELD");
    struct many m;
    int pp[2];

    struct rlimit rl;
    CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
    uint64_t fit = rl.rlim_max > 256 * 2 ? (rl.rlim_max - 256) / FDS_PER_CONN : 0;
    held = v && atoi(v) > 0 ? (uint32_t)atoi(v) : (uint32_t)(fit < 10000 ? fit : 10000);
    if (held < 100) {
        printf("RLIMIT_NOFILE (hard %llu) leaves room for too few connections\n", (unsigned long long)rl.rlim_max);
        return T_SKIP;
    }
    if (!raise_fd_limit(held * FDS_PER_CONN + 256)) {
        printf("RLIMIT_NOFILE cannot reach %u here\n", held * FDS_PER_CONN + 256);
        return T_SKIP;
    }
    CHECK(pipe(go_pipe) == 0 && pipe(pp) == 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(pp[1]);
        client(pp[0]);
        _exit(0);
    }
    close(pp[0]);
    uint32_t fds0 = open_fds();
    uint64_t t0 = t_now_ms();
    many_open(&m);
    struct t_side ls = { .a = m.a, .port = m.port };
    uint16_t port = t_listen(&ls);
    m.l = ls.l;
    for (uint32_t i = 0; i < held; i++)
        many_qp(&m, i);
    for (uint32_t i = 0; i < held; i++)
        CHECK_ST(nd_qp_receive(m.qp[i], NULL, &(nd_sge){ &m.words[i], 4, m.token }, 1), ND_SUCCESS);
    CHECK(write(pp[1], &port, sizeof(port)) == sizeof(port));
    for (uint32_t i = 0; i < held; i++) {
        struct t_side s = { .a = m.a, .l = m.l, .c = m.c[i], .qp = m.qp[i] };

        t_accept(&s, 0, NULL, 0);
    }
    uint64_t t1 = t_now_ms();
    uint32_t fds_held = open_fds();
    CHECK(write(go_pipe[1], "g", 1) == 1);
    for (uint32_t n = 0; n < held; n++) {
        nd_result r = t_poll_one(m.cq, 60000);
        uint32_t i = (uint32_t)(uintptr_t)r.qp_context;

        CHECK_ST(r.status, ND_SUCCESS);
        CHECK(i < held && r.bytes_transferred == 4 && m.words[i] == (i ^ 0xa5a5a5a5u));
    }
    CHECK(write(go_pipe[1], "d", 1) == 1);
    t_expect_child_ok(pid);
    many_close(&m);
    uint32_t fds1 = settled_fds();
    printf("%u connections held at once (%llu ms to set up, %u descriptors while held), each carried its "
           "message; descriptors %u -> %u after closing\n", held, (unsigned long long)(t1 - t0), fds_held, fds0, fds1);
    CHECK(fds1 == fds0);
    return 0;
}
