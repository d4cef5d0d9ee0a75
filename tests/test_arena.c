// SPDX-License-Identifier: MIT
/*
 * Queue pair regions come from the adapter's arena and are reused. An area nobody else saw
 * is reused at once; one a peer had waits until the peer says it let go (the released
 * word) or the peer process is gone, and never before; a reused area reads as new. Peers'
 * chunks are mapped once and only for ranges inside them. Then two processes connect 300
 * times in a row (more than a chunk holds) and each side still has one chunk.
 */
#include "t_conn.h"
#include <netdirect/netdirect.h>
#include "core/core.h"
#include "core/qp_int.h"

#include <sys/mman.h>

#define BIG (3u << 20)              /* two areas a chunk: the chunk fills after two */
#define CONNS 300

static void area_reuse(nd_adapter *a)
{
    struct nd_area x, y, z;
    struct nd_qp_ctl *ctl;

    CHECK_ST(nd_area_get(a, BIG, 4096, &x), ND_SUCCESS);
    CHECK_ST(nd_area_get(a, BIG, 4096, &y), ND_SUCCESS);
    CHECK(x.chunk == y.chunk && x.map != y.map && x.ref.fd == y.ref.fd && x.ref.ino == y.ref.ino && y.off == x.off + BIG);
    ctl = (struct nd_qp_ctl *)x.map;
    ctl->magic = 0xdead;
    uint8_t *xmap = x.map;

    /* Never shared: reused at once, and zeroed. */
    nd_area_put(a, &x, false, 0);
    CHECK_ST(nd_area_get(a, BIG, 4096, &x), ND_SUCCESS);
    CHECK(x.map == xmap && ctl->magic == 0);

    /* Shared with a live peer that has not let go: not reused (a second chunk instead),
     * and that chunk stays while the first has no room. */
    nd_area_put(a, &x, true, getpid());
    CHECK_ST(nd_area_get(a, BIG, 4096, &z), ND_SUCCESS);
    CHECK(z.chunk != y.chunk && nd_arena_chunk_count(a) == 2);
    nd_area_put(a, &z, false, 0);
    CHECK(nd_arena_chunk_count(a) == 2);
    CHECK_ST(nd_area_get(a, BIG, 4096, &z), ND_SUCCESS);
    CHECK(z.chunk != y.chunk);

    /* The peer lets go: the spare chunk goes when unused, the area is reused and its
     * word reads 0 again. */
    atomic_store(&ctl->released, 1);
    nd_area_put(a, &z, false, 0);
    CHECK(nd_arena_chunk_count(a) == 1);
    CHECK_ST(nd_area_get(a, BIG, 4096, &x), ND_SUCCESS);
    CHECK(x.map == xmap && atomic_load(&ctl->released) == 0);

    /* A peer that exited without a word: reused once it is gone. */
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0)
        _exit(0);
    CHECK(waitpid(child, NULL, 0) == child);
    nd_area_put(a, &x, true, child);
    CHECK_ST(nd_area_get(a, BIG, 4096, &x), ND_SUCCESS);
    CHECK(x.map == xmap);

    /* Shared, peer unknown, no word: held for good. */
    nd_area_put(a, &x, true, 0);
    CHECK_ST(nd_area_get(a, BIG, 4096, &z), ND_SUCCESS);
    CHECK(z.map != xmap && z.map != y.map);
    nd_area_put(a, &z, false, 0);
    nd_area_put(a, &y, false, 0);
}

/* A memfd of ours, as a peer would name it. */
static struct nd_fd_ref ref_of(int fd)
{
    struct nd_fd_ref r;

    CHECK(nd_fd_ref_of(fd, &r));
    return r;
}

static void peer_map(nd_adapter *a)
{
    struct nd_area x;
    uint8_t *p, *q;
    pid_t me = getpid();

    CHECK_ST(nd_area_get(a, BIG, 4096, &x), ND_SUCCESS);
    size_t chunk = 2 * (size_t)BIG;

    p = nd_peer_area_map(a, me, &x.ref, x.off, BIG);
    CHECK(p != NULL && p != x.map);
    p[100] = 42;                            /* the same memory, another mapping */
    CHECK(x.map[100] == 42);
    q = nd_peer_area_map(a, me, &x.ref, x.off, BIG);
    CHECK(q == p);                          /* the chunk is mapped once */
    CHECK(nd_peer_area_map(a, me, &x.ref, 100, 4096) == NULL);              /* not page aligned */
    CHECK(nd_peer_area_map(a, me, &x.ref, chunk, 4096) == NULL);            /* past the end */
    CHECK(nd_peer_area_map(a, me, &x.ref, BIG, BIG + 4096) == NULL);        /* runs past the end */
    CHECK(nd_peer_area_map(a, me, &x.ref, UINT64_MAX - 4095, 8192) == NULL);
    struct nd_fd_ref none = { .fd = -1 };
    CHECK(nd_peer_area_map(a, me, &none, 0, 4096) == NULL);
    int loose = memfd_create("loose", MFD_CLOEXEC);                 /* may shrink under us */
    CHECK(loose >= 0 && ftruncate(loose, 8192) == 0);
    struct nd_fd_ref loose_ref = ref_of(loose);
    CHECK(nd_peer_area_map(a, me, &loose_ref, 0, 4096) == NULL);
    int huge = nd_memfd_sealed("huge", (1ull << 30) + 4096);        /* no chunk is that big */
    CHECK(huge >= 0);
    struct nd_fd_ref huge_ref = ref_of(huge);
    CHECK(nd_peer_area_map(a, me, &huge_ref, 0, 4096) == NULL);
    close(huge);

    /* A name must match the file fetched: a number whose file is not the inode named is
     * refused. (A chunk mapped already is found by its inode: the number only fetches.) */
    int other = nd_memfd_sealed("other", 2 * (size_t)BIG);
    CHECK(other >= 0);
    struct nd_fd_ref wrong = ref_of(other);
    wrong.ino ^= 1;
    CHECK(nd_peer_area_map(a, me, &wrong, 0, 4096) == NULL);
    wrong = x.ref;
    wrong.ino ^= 1;
    CHECK(nd_peer_area_map(a, me, &wrong, 0, 4096) == NULL);
    close(other);

    /* A chunk mapped already is found only for the process it came from: a peer that does
     * not hold it (this child closed its inherited copy) cannot borrow it by its name. */
    int go[2];
    CHECK(pipe(go) == 0);
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        char c;

        close(x.ref.fd);
        close(go[1]);
        (void)!read(go[0], &c, 1);
        _exit(0);
    }
    close(go[0]);
    uint64_t end = t_now_ms() + 5000;
    int fd;
    while ((fd = nd_fd_fetch(child, &x.ref)) >= 0 && t_now_ms() < end) {
        close(fd);                          /* the child has not closed it yet */
        sched_yield();
    }
    CHECK(fd < 0);
    CHECK(nd_peer_area_map(a, child, &x.ref, x.off, BIG) == NULL);
    close(go[1]);
    CHECK(waitpid(child, NULL, 0) == child);
    close(loose);

    nd_peer_area_unmap(a, p);
    nd_peer_area_unmap(a, q);
    nd_area_put(a, &x, false, 0);
}

/* The start of connection @i's life on either side: a queue pair and a connector (the
 * first come with the side), a receive posted. Past a chunk's worth of areas, each is
 * reused once its peer let go: one chunk throughout. */
static nd_sge life_begin(struct t_side *s, int i)
{
    nd_sge sge = { s->buf, 8, s->token };

    if (i) {
        CHECK_ST(nd_adapter_create_queue_pair(s->a, s->cq, s->cq, s, 4, 4, 1, 1, 128, &s->qp), ND_SUCCESS);
        CHECK_ST(nd_adapter_create_connector(s->a, s->port, &s->c), ND_SUCCESS);
    }
    CHECK_ST(nd_qp_receive(s->qp, NULL, &sge, 1), ND_SUCCESS);
    CHECK(nd_arena_chunk_count(s->a) == 1);
    return sge;
}

/* After the last life: t_side_close wants a queue pair and no connector. */
static void sides_close(struct t_side *s)
{
    s->c = NULL;
    CHECK_ST(nd_adapter_create_queue_pair(s->a, s->cq, s->cq, s, 4, 4, 1, 1, 128, &s->qp), ND_SUCCESS);
    t_side_close(s);
}

/* Each connection: a Send each way, then the client disconnects and both close. */
static void server(int port_pipe)
{
    struct t_side s;
    uint16_t port;

    t_side_open(&s, 4096, 4, 1);
    port = t_listen(&s);
    CHECK(write(port_pipe, &port, sizeof(port)) == sizeof(port));
    for (int i = 0; i < CONNS; i++) {
        nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
        nd_sge sge = life_begin(&s, i);

        t_accept(&s, 0, NULL, 0);
        nd_result r = t_poll_one(s.cq, 5000);
        CHECK(r.status == ND_SUCCESS && r.request_type == ND_REQUEST_TYPE_RECEIVE && r.bytes_transferred == 8);
        CHECK_ST(nd_qp_send(s.qp, NULL, &sge, 1, 0), ND_SUCCESS);
        CHECK_ST(t_wait(nd_connector_notify_disconnect(s.c, &ov), &ov), ND_SUCCESS);
        CHECK_ST(nd_connector_close(s.c), ND_SUCCESS);
        CHECK_ST(nd_qp_close(s.qp), ND_SUCCESS);
        while (nd_cq_get_results(s.cq, &r, 1))
            ;
    }
    sides_close(&s);
}

static void connections(void)
{
    struct t_side s;
    uint16_t port;
    int pp;
    pid_t pid = t_fork_server(server, &pp);

    t_side_open(&s, 4096, 4, 1);
    CHECK(read(pp, &port, sizeof(port)) == sizeof(port));
    for (int i = 0; i < CONNS; i++) {
        nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
        nd_sge sge = life_begin(&s, i);

        t_connect(&s, port, NULL, NULL);
        *(uint64_t *)s.buf = (uint64_t)i;
        CHECK_ST(nd_qp_send(s.qp, NULL, &sge, 1, 0), ND_SUCCESS);
        for (int got = 0; got < 2;) {
            nd_result r = t_poll_one(s.cq, 5000);

            CHECK(r.status == ND_SUCCESS);
            got++;
            if (r.request_type == ND_REQUEST_TYPE_RECEIVE)
                CHECK(r.bytes_transferred == 8 && *(uint64_t *)s.buf == (uint64_t)i);
        }
        CHECK_ST(t_wait(nd_connector_disconnect(s.c, &ov), &ov), ND_SUCCESS);
        CHECK_ST(nd_connector_close(s.c), ND_SUCCESS);
        CHECK_ST(nd_qp_close(s.qp), ND_SUCCESS);
    }
    sides_close(&s);
    t_expect_child_ok(pid);
}

int main(void)
{
    nd_adapter *a = t_open_loopback();

    area_reuse(a);
    peer_map(a);
    CHECK_ST(nd_adapter_close(a), ND_SUCCESS);
    connections();
    return 0;
}
