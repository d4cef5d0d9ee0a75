// SPDX-License-Identifier: MIT
/*
 * Deregister flags the receives a queue pair has posted in the region (ND_WIRE_CHECK_RECV
 * in its control block: a same-host sender then checks each receive before it places a
 * Send), but never at the cost of the lock's bias: a lock biased to the thread that posts
 * is waited out, not taken, when another thread deregisters (taking it would close the
 * fast path for good). So:
 * - a Deregister from another thread leaves the lock biased to the poster, and flags nothing;
 * - a Deregister from the poster of a region under a posted receive flags it;
 * - one of a region under no posted receive flags nothing.
 * Skips where locks are never biased (no membarrier, or ND_LOCK_BIAS=0).
 */
#include "t_conn.h"
#include <netdirect/netdirect.h>
#include "core/lock.h"
#include "core/qp_int.h"

#include <pthread.h>
#include <stdatomic.h>

struct poster {
    struct t_side *s;
    uint8_t *other;
    nd_mr *other_mr;
    int go[2], done[2];             /* main → poster, poster → main */
};

static void step(int fd)
{
    char b = 's';

    CHECK(write(fd, &b, 1) == 1);
}

static void await(int fd)
{
    char b;

    CHECK(read(fd, &b, 1) == 1);
}

static nd_mr *region(struct t_side *s, void *buf, size_t len)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    nd_mr *mr;

    CHECK_ST(nd_adapter_create_memory_region(s->a, s->port, &mr), ND_SUCCESS);
    CHECK_ST(t_wait(nd_mr_register(mr, buf, len, 0, &ov), &ov), ND_SUCCESS);
    return mr;
}

static void deregister(nd_mr *mr)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };

    CHECK_ST(t_wait(nd_mr_deregister(mr, &ov), &ov), ND_SUCCESS);
}

static uint32_t flags(struct t_side *s)
{
    return atomic_load(&s->qp->ctl->state) & ND_WIRE_CHECK_RECV;
}

/* The thread the queue pair's lock is biased to: it posts one receive in the side's
 * buffer, then deregisters a region of its own when told to. */
static void *poster_main(void *arg)
{
    struct poster *p = arg;
    nd_sge rs = { p->s->buf, 64, p->s->token };

    for (uint32_t i = 0; i <= 2 * ND_LOCK_BIAS_STREAK; i++)
        (void)nd_qp_get_state(p->s->qp);
    CHECK_ST(nd_qp_receive(p->s->qp, NULL, &rs, 1), ND_SUCCESS);
    step(p->done[1]);
    await(p->go[0]);
    deregister(p->other_mr);            /* under no posted receive */
    CHECK_ST(nd_mr_close(p->other_mr), ND_SUCCESS);
    step(p->done[1]);
    await(p->go[0]);
    deregister(p->s->mr);               /* under the posted receive (closed with the side) */
    step(p->done[1]);
    return NULL;
}

int main(void)
{
    static uint8_t mine[4096], others[4096];
    struct t_side s;
    struct poster p = { .s = &s, .other = others };
    pthread_t t;

    if (!nd_lock_bias_available()) {
        puts("locks are never biased here: skipped");
        return T_SKIP;
    }
    t_side_open(&s, 4096, 16, 1);
    p.other_mr = region(&s, others, sizeof(others));
    nd_mr *main_mr = region(&s, mine, sizeof(mine));
    CHECK(pipe(p.go) == 0 && pipe(p.done) == 0);
    CHECK(pthread_create(&t, NULL, poster_main, &p) == 0);
    await(p.done[0]);
    const void *owner = atomic_load(&s.qp->lock.owner);
    CHECK(owner != NULL && owner != nd_lock_self());

    /* Another thread's Deregister: the lock keeps its bias; nothing is looked at. */
    deregister(main_mr);
    CHECK_ST(nd_mr_close(main_mr), ND_SUCCESS);
    CHECK(atomic_load(&s.qp->lock.owner) == owner && !atomic_load(&s.qp->lock.revoked));
    CHECK(flags(&s) == 0);

    /* The poster's own, of a region no receive uses: nothing flagged. */
    step(p.go[1]);
    await(p.done[0]);
    CHECK(flags(&s) == 0);

    /* The poster's own, under its receive: flagged. */
    step(p.go[1]);
    await(p.done[0]);
    CHECK(flags(&s) == ND_WIRE_CHECK_RECV);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK(atomic_load(&s.qp->lock.owner) == owner);
    t_side_close(&s);
    puts("Deregister keeps the locks' bias and flags the receives it covers: ok");
    return 0;
}
