// SPDX-License-Identifier: MIT
/*
 * Soak: many Sends of mixed sizes over 64 queue pairs that share one CQ per side, every
 * payload checked byte for byte at the receiver; descriptors of both processes must be the
 * same at the end as half-way, and private resident memory within 1 MiB (buffers the
 * library touches lazily, such as an iwarp connection's receive buffer, fill in early; a
 * leak grows with the messages: the long form shows the difference). The receiver grants
 * credits back (an ack per half window), so no Send ever waits for a receive.
 *   ND_SOAK_MESSAGES (default 20000; the long form: 1000000), ND_SOAK_QPS (default 64)
 */
#include "t_conn.h"
#include "t_proc.h"

#define MAXMSG 16384u
#define WINDOW 8u                   /* receives per QP at the receiver */
#define ACKS 4u                     /* ack receives per QP at the sender */
#define MAXQP 256u

static uint32_t qps, messages;
static int closing[2];              /* sender -> receiver: every Send completed, close now */

struct side {
    nd_adapter *a;
    nd_port *port;
    nd_cq *cq;
    nd_listener *l;
    nd_qp *qp[MAXQP];
    nd_connector *c[MAXQP];
    nd_mr *mr;
    uint8_t *buf;
    uint32_t token;
};

static uint32_t env_u32(const char *name, uint32_t def, uint32_t max)
{
    const char *v = getenv(name);
    uint32_t n = v && atoi(v) > 0 ? (uint32_t)atoi(v) : def;

    return n > max ? max : n;
}

/* The size and content of message @seq on QP @q: both sides derive them alike. */
static uint32_t mix(uint32_t q, uint32_t seq)
{
    uint32_t x = q * 0x9e3779b9u ^ (seq + 1) * 0x85ebca6bu;

    x ^= x >> 15;
    x *= 0x2c1b3c6du;
    return x ^ (x >> 12);
}

static uint32_t size_of(uint32_t q, uint32_t seq)
{
    static const uint32_t edges[] = { 0, 1, 35, 36, 37, 255, 256, 257, 4095, 4096, 4097, MAXMSG };
    uint32_t x = mix(q, seq);

    switch (x % 4) {
    case 0: return edges[(x >> 8) % (sizeof(edges) / sizeof(edges[0]))];
    case 1: return (x >> 8) % 64;
    case 2: return (x >> 8) % 2048;
    default: return (x >> 8) % (MAXMSG + 1);
    }
}

static void fill(uint8_t *p, uint32_t q, uint32_t seq, uint32_t n)
{
    uint32_t x = mix(q, seq);

    for (uint32_t i = 0; i < n; i++)
        p[i] = (uint8_t)(x + i * 31 + (i >> 7));
}

/* Buffer layout per QP: WINDOW receive slots of MAXMSG, then ACKS ack words, then a send
 * staging area of WINDOW slots (the client's Sends stay in flight until completed). */
static size_t per_qp(void) { return (size_t)WINDOW * MAXMSG * 2 + ACKS * 64; }
static uint8_t *recv_slot(struct side *s, uint32_t q, uint32_t k) { return s->buf + q * per_qp() + (size_t)k * MAXMSG; }
static uint8_t *ack_slot(struct side *s, uint32_t q, uint32_t k) { return s->buf + q * per_qp() + (size_t)WINDOW * MAXMSG + k * 64; }
static uint8_t *send_slot(struct side *s, uint32_t q, uint32_t k)
{
    return s->buf + q * per_qp() + (size_t)WINDOW * MAXMSG + ACKS * 64 + (size_t)k * MAXMSG;
}

/* The receive context names the QP and slot; bit 31 marks an ack receive. */
static void *ctx_of(uint32_t q, uint32_t k, bool ack) { return (void *)(uintptr_t)((q << 8) | k | (ack ? 1u << 31 : 0)); }

static void side_open(struct side *s)
{
    nd_overlapped ov = { 0 };
    size_t len = per_qp() * qps;

    memset(s, 0, sizeof(*s));
    s->a = t_open_loopback();
    CHECK_ST(nd_port_create(&s->port), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_completion_queue(s->a, s->port, qps * (WINDOW + ACKS) * 2 + 64, 0, 0, &s->cq),
             ND_SUCCESS);
    for (uint32_t q = 0; q < qps; q++) {
        CHECK_ST(nd_adapter_create_queue_pair(s->a, s->cq, s->cq, (void *)(uintptr_t)q, WINDOW + ACKS, WINDOW + ACKS,
                                              1, 1, 64, &s->qp[q]), ND_SUCCESS);
        CHECK_ST(nd_adapter_create_connector(s->a, s->port, &s->c[q]), ND_SUCCESS);
    }
    s->buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(s->buf != MAP_FAILED);
    memset(s->buf, 0, len);         /* resident from the start: growth would be the library's */
    CHECK_ST(nd_adapter_create_memory_region(s->a, s->port, &s->mr), ND_SUCCESS);
    CHECK_ST(t_wait(nd_mr_register(s->mr, s->buf, len, ND_MR_FLAG_ALLOW_LOCAL_WRITE, &ov), &ov), ND_SUCCESS);
    s->token = nd_mr_get_local_token(s->mr);
}

static void side_close(struct side *s)
{
    nd_overlapped ov = { 0 };

    for (uint32_t q = 0; q < qps; q++) {
        nd_connector_disconnect(s->c[q], &ov);
        CHECK_ST(nd_connector_close(s->c[q]), ND_SUCCESS);
        CHECK_ST(nd_qp_close(s->qp[q]), ND_SUCCESS);
    }
    t_close_base(s->l, s->mr, s->cq, s->port, s->a);
    munmap(s->buf, per_qp() * qps);
}

static nd_result next(struct side *s)
{
    return t_poll_one(s->cq, 20000);
}

/* Resources at the end equal those after the first tenth: nothing grows with traffic. */
struct usage {
    uint32_t fds;
    long rss;
};

static void usage_now(struct usage *u)
{
    u->fds = open_fds();
    u->rss = rss_private_kib();
}

static void usage_check(const char *who, const struct usage *a, const struct usage *b)
{
    printf("%s: fds %u -> %u, private RSS %ld -> %ld KiB\n", who, a->fds, b->fds, a->rss, b->rss);
    CHECK(b->fds == a->fds);
    if (!SANITIZED)
        CHECK(b->rss - a->rss <= 1024);
}

static void server(int port_pipe)
{
    setvbuf(stdout, NULL, _IONBF, 0);      /* the forked side ends with _exit */
    static uint32_t seq[MAXQP], since_ack[MAXQP];
    static uint8_t want[MAXMSG];
    struct usage u0 = { 0 }, u1;
    struct side s;
    uint16_t port;

    side_open(&s);
    for (uint32_t q = 0; q < qps; q++)
        for (uint32_t k = 0; k < WINDOW; k++)
            CHECK_ST(nd_qp_receive(s.qp[q], ctx_of(q, k, false), &(nd_sge){ recv_slot(&s, q, k), MAXMSG, s.token }, 1),
                     ND_SUCCESS);
    struct t_side ts = { .a = s.a, .port = s.port };
    port = t_listen(&ts);
    s.l = ts.l;
    CHECK(write(port_pipe, &port, sizeof(port)) == sizeof(port));
    for (uint32_t q = 0; q < qps; q++) {
        nd_overlapped ov = { 0 };

        CHECK_ST(t_wait(nd_listener_get_connection_request(s.l, s.c[q], &ov), &ov), ND_SUCCESS);
        CHECK_ST(t_wait(nd_connector_accept(s.c[q], s.qp[q], 0, 0, NULL, 0, &ov), &ov), ND_SUCCESS);
    }
    for (uint32_t got = 0; got < messages;) {
        nd_result r = next(&s);

        CHECK_ST(r.status, ND_SUCCESS);
        if (r.request_type == ND_REQUEST_TYPE_SEND)
            continue;                                   /* an ack went out */
        uint32_t q = (uint32_t)(uintptr_t)r.qp_context, k = (uint32_t)(uintptr_t)r.request_context & 0xff;
        uint32_t n = size_of(q, seq[q]);
        CHECK(r.request_type == ND_REQUEST_TYPE_RECEIVE && q < qps && r.bytes_transferred == n);
        fill(want, q, seq[q], n);
        CHECK(memcmp(recv_slot(&s, q, k), want, n) == 0);
        seq[q]++;
        got++;
        CHECK_ST(nd_qp_receive(s.qp[q], ctx_of(q, k, false), &(nd_sge){ recv_slot(&s, q, k), MAXMSG, s.token }, 1),
                 ND_SUCCESS);
        if (++since_ack[q] == WINDOW / 2) {
            memcpy(ack_slot(&s, q, 0), &since_ack[q], 4);
            CHECK_ST(nd_qp_send(s.qp[q], NULL, &(nd_sge){ ack_slot(&s, q, 0), 4, s.token }, 1, ND_OP_FLAG_INLINE),
                     ND_SUCCESS);
            since_ack[q] = 0;
        }
        if (got == messages / 2)
            usage_now(&u0);
    }
    usage_now(&u1);
    usage_check("receiver", &u0, &u1);
    CHECK(write(port_pipe, "d", 1) == 1);              /* verified everything */
    char c;
    /* Close only once the sender has its completions: they need our answers. */
    CHECK(read(closing[0], &c, 1) == 1);
    side_close(&s);
}

int main(void)
{
    static uint32_t seq[MAXQP], credits[MAXQP], slot[MAXQP], inflight[MAXQP];
    struct usage u0 = { 0 }, u1;
    struct side s;
    uint16_t port;
    int rd;
    char done;

    qps = env_u32("ND_SOAK_QPS", 64, MAXQP);
    messages = env_u32("ND_SOAK_MESSAGES", 20000, 100000000);
    CHECK(pipe(closing) == 0);
    pid_t pid = t_fork_server(server, &rd);
    CHECK(read(rd, &port, sizeof(port)) == sizeof(port));
    side_open(&s);
    for (uint32_t q = 0; q < qps; q++) {
        struct t_side ts = { .a = s.a, .c = s.c[q], .qp = s.qp[q] };

        for (uint32_t k = 0; k < ACKS; k++)
            CHECK_ST(nd_qp_receive(s.qp[q], ctx_of(q, k, true), &(nd_sge){ ack_slot(&s, q, k), 64, s.token }, 1),
                     ND_SUCCESS);
        t_connect(&ts, port, NULL, NULL);
        credits[q] = WINDOW;
    }
    uint64_t t0 = t_now_ms();
    uint32_t sent = 0, completed = 0;
    while (completed < messages) {
        for (uint32_t q = 0; q < qps && sent < messages; q++) {
            /* A receive waits for it, and its staging slot is free (its last Send completed). */
            if (!credits[q] || inflight[q] == WINDOW)
                continue;
            uint32_t n = size_of(q, seq[q]);
            uint8_t *p = send_slot(&s, q, slot[q]);

            fill(p, q, seq[q], n);
            CHECK_ST(nd_qp_send(s.qp[q], NULL, &(nd_sge){ p, n, s.token }, n ? 1 : 0, 0), ND_SUCCESS);
            slot[q] = (slot[q] + 1) % WINDOW;
            seq[q]++;
            credits[q]--;
            inflight[q]++;
            sent++;
        }
        nd_result r = next(&s);
        CHECK_ST(r.status, ND_SUCCESS);
        uint32_t q = (uint32_t)(uintptr_t)r.qp_context;
        CHECK(q < qps);
        if (r.request_type == ND_REQUEST_TYPE_SEND) {
            inflight[q]--;
            if (++completed == messages / 2)
                usage_now(&u0);
            continue;
        }
        uint32_t k = (uint32_t)(uintptr_t)r.request_context & 0xff, more;
        CHECK(r.bytes_transferred == 4);
        memcpy(&more, ack_slot(&s, q, k), 4);
        CHECK(more == WINDOW / 2);
        credits[q] += more;
        CHECK_ST(nd_qp_receive(s.qp[q], ctx_of(q, k, true), &(nd_sge){ ack_slot(&s, q, k), 64, s.token }, 1),
                 ND_SUCCESS);
    }
    uint64_t ms = t_now_ms() - t0;
    usage_now(&u1);
    CHECK(read(rd, &done, 1) == 1 && done == 'd');
    CHECK(write(closing[1], "c", 1) == 1);
    usage_check("sender", &u0, &u1);
    printf("%u messages of mixed sizes over %u queue pairs, every byte checked, in %llu ms\n", messages, qps,
           (unsigned long long)ms);
    side_close(&s);
    t_expect_child_ok(pid);
    return 0;
}
