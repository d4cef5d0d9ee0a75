// SPDX-License-Identifier: MIT
/*
 * ND lets any thread post and any thread poll. Here one thread (then two) posts Sends on a
 * queue pair with a shallow initiator queue while another thread only polls its CQ: every
 * Send must complete exactly once, with its own context, and the server must receive
 * every message. A CQ that frees a request slot before the ring entry behind it is
 * consumed lets a post complete into a ring that still looks full (the entry is lost). The
 * server checks every payload arrives once: an inline Send held for want of a receive must
 * carry what was posted, not what the poster's buffer holds later.
 * Runs on both transports.
 */
#include "t_conn.h"

#include <pthread.h>
#include <stdatomic.h>

#define MAX_POSTERS 2u
#define SERVER_RECVS 64u
#define MSG 8u

static uint32_t g_posters;
/* Sends per posting thread: fewer over iwarp, where each is a system call or two. */
static uint32_t per_poster = 10000;

static void server(int port_pipe)
{
    struct t_side s;
    uint16_t port;
    uint32_t got = 0, total = g_posters * per_poster;
    uint8_t *seen = calloc(total, 1);

    t_side_open(&s, SERVER_RECVS * MSG, SERVER_RECVS, 1);
    port = t_listen(&s);
    for (uint32_t i = 0; i < SERVER_RECVS; i++) {
        nd_sge rs = { s.buf + i * MSG, MSG, s.token };
        CHECK_ST(nd_qp_receive(s.qp, (void *)(uintptr_t)i, &rs, 1), ND_SUCCESS);
    }
    CHECK(write(port_pipe, &port, sizeof(port)) == sizeof(port));
    t_accept(&s, 0, NULL, 0);
    while (got < total) {
        nd_result r = t_poll_one(s.cq, 20000);
        uint32_t slot = (uint32_t)(uintptr_t)r.request_context;

        CHECK_ST(r.status, ND_SUCCESS);
        CHECK(r.request_type == ND_REQUEST_TYPE_RECEIVE && slot < SERVER_RECVS && r.bytes_transferred == 4);
        /* Each message's own payload, once: an inline Send carries what was posted. */
        uint32_t id;
        memcpy(&id, s.buf + slot * MSG, sizeof(id));
        CHECK(id < total && !seen[id]);
        seen[id] = 1;
        got++;
        nd_sge rs = { s.buf + slot * MSG, MSG, s.token };
        CHECK_ST(nd_qp_receive(s.qp, (void *)(uintptr_t)slot, &rs, 1), ND_SUCCESS);
    }
    /* Tell the client everything arrived: one Send back. */
    nd_sge ss = { &got, sizeof(got), 0 };
    CHECK_ST(nd_qp_send(s.qp, NULL, &ss, 1, ND_OP_FLAG_INLINE), ND_SUCCESS);
    nd_result r = t_poll_one(s.cq, 20000);
    CHECK_ST(r.status, ND_SUCCESS);
    t_side_close(&s);
    free(seen);
}

struct client {
    struct t_side s;
    atomic_uint completed;
    atomic_bool done_receiving;
    atomic_uchar *seen;             /* per request context: completions seen */
};

struct poster {
    struct client *c;
    uint32_t base;
};

static void *post_loop(void *arg)
{
    struct poster *p = arg;
    uint64_t end = t_now_ms() + 30000;

    for (uint32_t i = 0; i < per_poster; i++) {
        uint32_t id = p->base + i;
        nd_sge ss = { &id, sizeof(id), 0 };
        nd_status st;

        while ((st = nd_qp_send(p->c->s.qp, (void *)(uintptr_t)(id + 1), &ss, 1, ND_OP_FLAG_INLINE)) ==
               ND_NO_MORE_ENTRIES) {
            if (t_now_ms() > end) {
                fprintf(stderr, "poster %u: queue stayed full at %u (%u completed)\n", p->base, i,
                        atomic_load(&p->c->completed));
                exit(1);
            }
            sched_yield();
        }
        CHECK_ST(st, ND_SUCCESS);
    }
    return NULL;
}

static void run(uint32_t posters)
{
    static struct client c;
    struct poster p[MAX_POSTERS];
    pthread_t t[MAX_POSTERS];
    uint32_t total = posters * per_poster, port_pipe;
    int pipe_rd;
    uint16_t port;
    uint32_t answer = 0;
    pid_t pid;

    g_posters = posters;
    pid = t_fork_server(server, &pipe_rd);
    port_pipe = (uint32_t)pipe_rd;
    memset(&c, 0, sizeof(c));
    c.seen = calloc(total, 1);
    CHECK(c.seen != NULL);
    CHECK(read((int)port_pipe, &port, sizeof(port)) == sizeof(port));
    t_side_open(&c.s, 4096, 4, 1);
    nd_sge rs = { c.s.buf, sizeof(answer), c.s.token };
    CHECK_ST(nd_qp_receive(c.s.qp, NULL, &rs, 1), ND_SUCCESS);
    t_connect(&c.s, port, NULL, NULL);

    for (uint32_t i = 0; i < posters; i++) {
        p[i] = (struct poster){ &c, i * per_poster };
        CHECK(pthread_create(&t[i], NULL, post_loop, &p[i]) == 0);
    }
    /* This thread only polls. */
    uint64_t end = t_now_ms() + 30000;
    bool answered = false;

    while (atomic_load(&c.completed) < total || !answered) {
        nd_result r[8];
        uint32_t n = nd_cq_get_results(c.s.cq, r, 8);

        for (uint32_t i = 0; i < n; i++) {
            CHECK_ST(r[i].status, ND_SUCCESS);
            if (r[i].request_type == ND_REQUEST_TYPE_RECEIVE) {
                memcpy(&answer, c.s.buf, sizeof(answer));
                CHECK(answer == total);
                answered = true;
                continue;
            }
            uintptr_t id = (uintptr_t)r[i].request_context;

            CHECK(r[i].request_type == ND_REQUEST_TYPE_SEND && id >= 1 && id <= total);
            CHECK(atomic_exchange(&c.seen[id - 1], 1) == 0);   /* once, and its own context */
            atomic_fetch_add(&c.completed, 1);
        }
        if (!n && t_now_ms() > end) {
            fprintf(stderr, "%u posters: %u of %u Sends completed, answer %s\n", posters,
                    atomic_load(&c.completed), total, answered ? "in" : "missing");
            exit(1);
        }
    }
    for (uint32_t i = 0; i < posters; i++)
        pthread_join(t[i], NULL);
    for (uint32_t i = 0; i < total; i++)
        CHECK(c.seen[i] == 1);
    t_expect_child_ok(pid);
    t_side_close(&c.s);
    free(c.seen);
    close((int)port_pipe);
}

int main(void)
{
    const char *tr = getenv("ND_TRANSPORT");

    if (tr && !strcmp(tr, "iwarp"))
        per_poster = 4000;
    run(1);
    run(2);
    return 0;
}
