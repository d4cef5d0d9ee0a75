// SPDX-License-Identifier: MIT
/*
 * A queue pair and CQ used by one thread, then by two at once, then by one again: the
 * data-path locks are biased to the first thread after its ping-pong (checked over shm,
 * where nothing else takes them), a second thread posting Sends and polling the same CQ
 * revokes that, and every message still arrives once, in order at the server, echoed
 * back and counted once at the client. Runs on both transports.
 */
#include "t_conn.h"
#include <netdirect/netdirect.h>
#include "core/qp_int.h"

#include <pthread.h>
#include <stdatomic.h>

#define PHASE 1000u                 /* messages per phase */
#define TOTAL (3 * PHASE)
#define RECVS 16u                   /* receives kept posted at each side */
#define WINDOW 8u                   /* client messages not yet echoed */
#define MSG 8u

static void server(int port_pipe)
{
    struct t_side s;
    uint16_t port;
    uint32_t next = 0;

    t_side_open(&s, RECVS * MSG * 2, RECVS, 1);
    port = t_listen(&s);
    for (uint32_t i = 0; i < RECVS; i++) {
        nd_sge rs = { s.buf + i * MSG, MSG, s.token };
        CHECK_ST(nd_qp_receive(s.qp, (void *)(uintptr_t)i, &rs, 1), ND_SUCCESS);
    }
    CHECK(write(port_pipe, &port, sizeof(port)) == sizeof(port));
    t_accept(&s, 0, NULL, 0);
    for (;;) {
        nd_result r = t_poll_one(s.cq, 10000);
        uint32_t seq, slot = (uint32_t)(uintptr_t)r.request_context;

        CHECK(r.status == ND_SUCCESS);
        if (r.request_type == ND_REQUEST_TYPE_SEND)
            continue;
        CHECK(r.request_type == ND_REQUEST_TYPE_RECEIVE && r.bytes_transferred == sizeof(seq) && slot < RECVS);
        memcpy(&seq, s.buf + slot * MSG, sizeof(seq));
        CHECK(seq == next);             /* one sender at a time: in order, none lost */
        if (seq == TOTAL)
            break;                      /* the client's goodbye: it has every completion */
        next++;
        nd_sge ss = { &seq, sizeof(seq), 0 };
        CHECK_ST(nd_qp_send(s.qp, NULL, &ss, 1, ND_OP_FLAG_INLINE | ND_OP_FLAG_SILENT_SUCCESS), ND_SUCCESS);
        nd_sge rs = { s.buf + slot * MSG, MSG, s.token };
        CHECK_ST(nd_qp_receive(s.qp, (void *)(uintptr_t)slot, &rs, 1), ND_SUCCESS);
    }
    t_side_close(&s);
}

struct client {
    struct t_side s;
    atomic_uint echoed, sent, sent_done;
    atomic_uchar seen[TOTAL];
};

/* Take one result if there is one: count echoes (each seq once) and Send completions,
 * repost the receive's buffer. Called by both threads in the middle phase. */
static bool poll_once(struct client *c)
{
    nd_result r;
    uint32_t seq, slot;

    if (nd_cq_get_results(c->s.cq, &r, 1) == 0)
        return false;
    CHECK(r.status == ND_SUCCESS);
    if (r.request_type == ND_REQUEST_TYPE_SEND) {
        atomic_fetch_add(&c->sent_done, 1);
        return true;
    }
    slot = (uint32_t)(uintptr_t)r.request_context;
    CHECK(r.request_type == ND_REQUEST_TYPE_RECEIVE && r.bytes_transferred == sizeof(seq) && slot < RECVS);
    memcpy(&seq, c->s.buf + slot * MSG, sizeof(seq));
    CHECK(seq < TOTAL && atomic_exchange(&c->seen[seq], 1) == 0);
    nd_sge rs = { c->s.buf + slot * MSG, MSG, c->s.token };
    CHECK_ST(nd_qp_receive(c->s.qp, (void *)(uintptr_t)slot, &rs, 1), ND_SUCCESS);
    atomic_fetch_add(&c->echoed, 1);
    return true;
}

/* Over iwarp a Send completes once TCP acknowledged it, possibly after its echo came
 * back: keep the send queue from overflowing by its completions, not the echoes. */
static void send_seq(struct client *c, uint32_t seq)
{
    nd_sge ss = { &seq, sizeof(seq), 0 };
    uint64_t end = t_now_ms() + 10000;

    while (atomic_load(&c->sent) - atomic_load(&c->sent_done) >= RECVS)
        CHECK(poll_once(c) || t_now_ms() < end);
    atomic_fetch_add(&c->sent, 1);
    CHECK_ST(nd_qp_send(c->s.qp, NULL, &ss, 1, ND_OP_FLAG_INLINE), ND_SUCCESS);
}

/* One thread alone: Send, then poll until its echo is counted. */
static void ping_pong(struct client *c, uint32_t from)
{
    uint64_t end = t_now_ms() + 10000;

    for (uint32_t seq = from; seq < from + PHASE; seq++) {
        send_seq(c, seq);
        while (atomic_load(&c->echoed) <= seq)
            if (!poll_once(c))
                CHECK(t_now_ms() < end);
    }
}

/* The second thread: the middle phase's Sends, a window ahead of the echoes, polling too. */
static void *second_sender(void *arg)
{
    struct client *c = arg;

    poll_once(c);                   /* the CQ lock too, whether or not the window fills */
    for (uint32_t seq = PHASE; seq < 2 * PHASE; seq++) {
        while (seq - atomic_load(&c->echoed) >= WINDOW)
            poll_once(c);
        send_seq(c, seq);
    }
    return NULL;
}

static bool biased_here(struct nd_lock *l)
{
    return atomic_load(&l->owner) == nd_lock_self();
}

int main(void)
{
    static struct client c;
    int port_pipe;
    uint16_t port;
    pthread_t t;
    pid_t pid = t_fork_server(server, &port_pipe);
    const char *tr = getenv("ND_TRANSPORT");
    bool shm = !tr || strcmp(tr, "iwarp") != 0, bias = nd_lock_bias_available();

    CHECK(read(port_pipe, &port, sizeof(port)) == sizeof(port));
    t_side_open(&c.s, RECVS * MSG, RECVS, 1);
    for (uint32_t i = 0; i < RECVS; i++) {
        nd_sge rs = { c.s.buf + i * MSG, MSG, c.s.token };
        CHECK_ST(nd_qp_receive(c.s.qp, (void *)(uintptr_t)i, &rs, 1), ND_SUCCESS);
    }
    t_connect(&c.s, port, NULL, NULL);

    ping_pong(&c, 0);
    if (shm && bias)
        CHECK(biased_here(&c.s.qp->lock) && biased_here(&c.s.cq->lock));

    CHECK(pthread_create(&t, NULL, second_sender, &c) == 0);
    uint64_t end = t_now_ms() + 10000;
    while (atomic_load(&c.echoed) < 2 * PHASE) {
        poll_once(&c);
        CHECK(t_now_ms() < end);
    }
    pthread_join(t, NULL);
    if (shm && bias)                /* the second thread took both: neither is biased now */
        CHECK(atomic_load(&c.s.qp->lock.owner) == NULL && atomic_load(&c.s.cq->lock.owner) == NULL);

    ping_pong(&c, 2 * PHASE);
    while (atomic_load(&c.sent_done) < TOTAL)
        CHECK(poll_once(&c) || t_now_ms() < end + 10000);
    for (uint32_t i = 0; i < TOTAL; i++)
        CHECK(atomic_load(&c.seen[i]) == 1);
    CHECK(atomic_load(&c.echoed) == TOTAL);
    send_seq(&c, TOTAL);
    t_expect_child_ok(pid);
    t_side_close(&c.s);
    return 0;
}
