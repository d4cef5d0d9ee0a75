// SPDX-License-Identifier: MIT
/*
 * Deregister while a transfer is using the region. ND lets Deregister wait for, or fail,
 * the transfers under way; once it has completed, nothing touches the memory again. Here
 * the owner (this process) deregisters a region while a large transfer moves bytes into
 * or out of it, then writes a pattern over it (or unmaps it): no byte of the transfer may
 * land on the pattern afterwards, and a peer reading the region must never see the pattern.
 * The transfer itself may succeed or fail; the memory is what is checked.
 *
 *   read-sink       our Read from the peer lands in the region
 *   read-sink-unmap the same, the region unmapped at once after Deregister
 *   write-target    the peer's Write lands in the region (cross-memory call over shm)
 *   write-mapped    the same into nd_alloc_memory memory (the peer copies through a mapping)
 *   send-target     the peer's large Send lands in a receive in the region
 *   read-source     the peer's Read takes its bytes from the region
 *   recv-scatter    a receive posted into the region, Deregister, then the peer's Send
 *   recv-inline     the same with a Send small enough to ride in its completion
 *
 * argv[1] names one; without it every one runs, each between a new pair of processes.
 */
#include "t_conn.h"

#include <pthread.h>

/* The reads of memory a transfer is writing are the test's point, not races to report. */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RACY_READ __attribute__((no_sanitize("thread")))
#endif
#endif
#ifndef RACY_READ
#define RACY_READ
#endif

#define BIG (32u << 20)
#define PAGE 4096u
#define PEER_BYTE 0xaa
#define PATTERN 0x55

enum scenario { READ_SINK, READ_SINK_UNMAP, WRITE_TARGET, WRITE_MAPPED, SEND_TARGET, READ_SOURCE, RECV_SCATTER,
                RECV_INLINE, N_SCENARIOS };
static const char *const names[N_SCENARIOS] = { "read-sink", "read-sink-unmap", "write-target", "write-mapped",
                                                "send-target", "read-source", "recv-scatter", "recv-inline" };

struct region_ref {
    uint64_t addr;
    uint32_t token;
    uint32_t scenario;
};

static int to_peer[2], to_owner[2];     /* pipes: owner -> peer, peer -> owner */

static void put(int fd, const void *p, size_t n)
{
    CHECK(write(fd, p, n) == (ssize_t)n);
}

static void get(int fd, void *p, size_t n)
{
    CHECK(read(fd, p, n) == (ssize_t)n);
}

/* Spin until the first byte of @p is no longer @was (the transfer has begun landing). */
RACY_READ static void wait_landing(const volatile uint8_t *p, uint8_t was)
{
    uint64_t end = t_now_ms() + 30000;

    while (p[0] == was)
        CHECK(t_now_ms() < end);
}

static nd_status dereg(nd_mr *mr)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };

    return t_wait(nd_mr_deregister(mr, &ov), &ov);
}

/* ---- the peer (forked) ---- */

static volatile uint8_t *peer_sink;

static void *peer_watch(void *arg)
{
    (void)arg;
    wait_landing(peer_sink, 0);
    put(to_owner[1], "L", 1);
    return NULL;
}

/* Poll until one initiator result comes; any status will do (the region may be gone). */
static nd_status peer_wait_result(struct t_side *s)
{
    nd_result r = t_poll_one(s->cq, 30000);

    return r.status;
}

RACY_READ static void peer(int port_pipe)
{
    struct t_side s;
    struct region_ref mine, theirs;
    nd_sge sge;
    char b;

    t_side_open(&s, BIG, 4, 1);
    memset(s.buf, PEER_BYTE, BIG);      /* before the connection's threads exist */
    uint16_t port = t_listen(&s);
    CHECK(write(port_pipe, &port, sizeof(port)) == sizeof(port));
    t_accept(&s, 8, NULL, 0);
    mine = (struct region_ref){ (uint64_t)(uintptr_t)s.buf, nd_mr_get_remote_token(s.mr), 0 };
    put(to_owner[1], &mine, sizeof(mine));
    get(to_peer[0], &theirs, sizeof(theirs));
    sge = (nd_sge){ s.buf, BIG, s.token };
    switch (theirs.scenario) {
    case READ_SINK:
    case READ_SINK_UNMAP:
        get(to_peer[0], &b, 1);         /* the owner's Read is over */
        break;
    case WRITE_TARGET:
    case WRITE_MAPPED:
    case SEND_TARGET:
        CHECK_ST(theirs.scenario == SEND_TARGET ? nd_qp_send(s.qp, NULL, &sge, 1, 0)
                                                : nd_qp_write(s.qp, NULL, &sge, 1, theirs.addr, theirs.token, 0),
                 ND_SUCCESS);
        fprintf(stderr, "peer: %s\n", nd_strerror(peer_wait_result(&s)));
        put(to_owner[1], "F", 1);
        get(to_peer[0], &b, 1);
        break;
    case READ_SOURCE: {
        pthread_t th;
        nd_status st;

        memset(s.buf, 0, BIG);
        peer_sink = s.buf;
        CHECK(pthread_create(&th, NULL, peer_watch, NULL) == 0);
        CHECK_ST(nd_qp_read(s.qp, NULL, &sge, 1, theirs.addr, theirs.token, 0), ND_SUCCESS);
        st = peer_wait_result(&s);
        CHECK(pthread_join(th, NULL) == 0);
        get(to_peer[0], &b, 1);         /* the owner has written its pattern */
        fprintf(stderr, "peer: Read %s\n", nd_strerror(st));
        for (size_t i = 0; i < BIG; i++)
            if (s.buf[i] == PATTERN) {
                fprintf(stderr, "the Read brought byte %zu of memory written after Deregister\n", i);
                _exit(1);
            }
        CHECK(st != ND_SUCCESS || s.buf[BIG - 1] == PEER_BYTE);
        put(to_owner[1], "F", 1);
        break;
    }
    case RECV_SCATTER:
    case RECV_INLINE:
        get(to_peer[0], &b, 1);         /* the owner deregistered its receive's region */
        sge.buffer_length = theirs.scenario == RECV_INLINE ? 16 : 1024;
        CHECK_ST(nd_qp_send(s.qp, NULL, &sge, 1, 0), ND_SUCCESS);
        fprintf(stderr, "peer: Send %s\n", nd_strerror(peer_wait_result(&s)));
        get(to_peer[0], &b, 1);
        break;
    }
    _exit(0);
}

/* ---- the owner ---- */

struct owner {
    struct t_side s;
    nd_mr *mr;
    uint8_t *r;
    bool mapped;
    enum scenario sc;
    nd_status dereg_st;
};

static void *owner_watch(void *arg)
{
    struct owner *o = arg;

    wait_landing(o->r, 0);
    o->dereg_st = dereg(o->mr);
    if (o->sc == READ_SINK_UNMAP)
        CHECK(munmap(o->r, BIG) == 0);
    else
        memset(o->r + BIG - PAGE, PATTERN, PAGE);
    return NULL;
}

static void open_region(struct owner *o)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };

    if (o->mapped) {
        void *p;

        CHECK_ST(nd_alloc_memory(BIG, &p), ND_SUCCESS);
        o->r = p;
    } else {
        o->r = mmap(NULL, BIG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        CHECK(o->r != MAP_FAILED);
    }
    /* Before the connection's threads exist; what a peer reads, or zero to see landings. */
    memset(o->r, o->sc == READ_SOURCE ? PEER_BYTE : 0, BIG);
    CHECK_ST(nd_adapter_create_memory_region(o->s.a, o->s.port, &o->mr), ND_SUCCESS);
    CHECK_ST(nd_mr_register(o->mr, o->r, BIG,
                            ND_MR_FLAG_ALLOW_LOCAL_WRITE | ND_MR_FLAG_ALLOW_REMOTE_WRITE | ND_MR_FLAG_ALLOW_REMOTE_READ |
                                ND_MR_FLAG_RDMA_READ_SINK, &ov),
             ND_SUCCESS);
}

RACY_READ static bool page_is_pattern(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != PATTERN) {
            fprintf(stderr, "byte %zu of the pattern was overwritten (0x%02x) after Deregister\n", i, p[i]);
            return false;
        }
    return true;
}

/* Wait for the peer's next word; meanwhile our side's bytes move without us (over iwarp
 * the adapter's progress thread serves a connection nobody polls). */
static void wait_peer(void)
{
    struct pollfd pfd = { .fd = to_owner[0], .events = POLLIN };
    char b;

    CHECK(poll(&pfd, 1, 60000) == 1);
    get(to_owner[0], &b, 1);
}

static void run_owner(struct owner *o, const struct region_ref *peer_ref)
{
    struct region_ref ref = { (uint64_t)(uintptr_t)o->r, nd_mr_get_remote_token(o->mr), o->sc };
    nd_sge sge = { o->r, BIG, nd_mr_get_local_token(o->mr) };
    pthread_t th;
    char b;

    put(to_peer[1], &ref, sizeof(ref));
    switch (o->sc) {
    case READ_SINK:
    case READ_SINK_UNMAP:
        CHECK(pthread_create(&th, NULL, owner_watch, o) == 0);
        CHECK_ST(nd_qp_read(o->s.qp, NULL, &sge, 1, peer_ref->addr, peer_ref->token, 0), ND_SUCCESS);
        fprintf(stderr, "owner: Read %s\n", nd_strerror(t_poll_one(o->s.cq, 30000).status));
        CHECK(pthread_join(th, NULL) == 0);
        put(to_peer[1], "D", 1);
        CHECK(o->sc == READ_SINK_UNMAP || page_is_pattern(o->r + BIG - PAGE, PAGE));
        break;
    case WRITE_TARGET:
    case WRITE_MAPPED:
    case SEND_TARGET:
        if (o->sc == SEND_TARGET)
            CHECK_ST(nd_qp_receive(o->s.qp, NULL, &sge, 1), ND_SUCCESS);
        CHECK(pthread_create(&th, NULL, owner_watch, o) == 0);
        wait_peer();
        CHECK(pthread_join(th, NULL) == 0);
        put(to_peer[1], "D", 1);
        CHECK(page_is_pattern(o->r + BIG - PAGE, PAGE));
        break;
    case READ_SOURCE:
        wait_peer();             /* "L": the Read's bytes have begun landing */
        o->dereg_st = dereg(o->mr);
        memset(o->r + BIG - PAGE, PATTERN, PAGE);   /* the last page first: read last */
        memset(o->r, PATTERN, BIG);
        put(to_peer[1], "D", 1);
        wait_peer();             /* "F": the peer checked what it read */
        break;
    case RECV_SCATTER:
    case RECV_INLINE: {
        nd_result r;

        sge.buffer_length = PAGE;
        CHECK_ST(nd_qp_receive(o->s.qp, NULL, &sge, 1), ND_SUCCESS);
        o->dereg_st = dereg(o->mr);
        memset(o->r, PATTERN, PAGE);
        put(to_peer[1], "G", 1);
        r = t_poll_one(o->s.cq, 30000);
        fprintf(stderr, "owner: receive %s\n", nd_strerror(r.status));
        put(to_peer[1], "D", 1);
        CHECK(page_is_pattern(o->r, PAGE));
        CHECK(r.status != ND_SUCCESS);
        break;
    }
    default:
        CHECK(0);
    }
    (void)b;
    CHECK_ST(o->dereg_st, ND_SUCCESS);
}

static void run(enum scenario sc)
{
    struct owner o = { .sc = sc, .mapped = sc == WRITE_MAPPED };
    struct region_ref peer_ref;
    int port_pipe;
    uint16_t port;
    pid_t pid;

    CHECK(pipe(to_peer) == 0 && pipe(to_owner) == 0);
    pid = t_fork_server(peer, &port_pipe);
    CHECK(read(port_pipe, &port, sizeof(port)) == sizeof(port));
    t_side_open(&o.s, PAGE, 4, 1);
    open_region(&o);
    t_connect(&o.s, port, NULL, NULL);
    get(to_owner[0], &peer_ref, sizeof(peer_ref));
    run_owner(&o, &peer_ref);
    t_expect_child_ok(pid);
    CHECK_ST(nd_connector_close(o.s.c), ND_SUCCESS);
    o.s.c = NULL;
    CHECK_ST(nd_mr_close(o.mr), ND_SUCCESS);
    if (o.mapped)
        CHECK_ST(nd_free_memory(o.r), ND_SUCCESS);
    else if (sc != READ_SINK_UNMAP)
        munmap(o.r, BIG);
    t_side_close(&o.s);
    close(port_pipe);
    close(to_peer[0]), close(to_peer[1]), close(to_owner[0]), close(to_owner[1]);
    printf("%s: ok\n", names[sc]);
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    for (int i = 0; i < N_SCENARIOS; i++)
        if (argc < 2 || strcmp(argv[1], names[i]) == 0)
            run((enum scenario)i);
    return 0;
}
