// SPDX-License-Identifier: MIT
/*
 * The bounce channel's initiator end against a target this test plays itself, in one
 * process: a channel made as a target makes it, named in a control block as a target
 * names it, and answered by a thread of the test.
 *   honest      Writes, Reads and a receive placement of 3.5 chunks from three SGEs, and a
 *               fetch-and-add, answered by the real serve: the bytes arrive, in order, and
 *               are in the target's memory when the call returns (a Write's completion
 *               promises its placement, as on an RC queue pair)
 *   refused     a token the target does not know: the Read and the Write fail -EFAULT
 *   overrun     the target answers requests never made: -EIO, not a wild read
 *   bad-status  the target answers with a code the initiator does not know: -EIO
 *   ended       the target never answers and the connection ends: -ECANCELED, at once
 *   bad-header  a channel of another geometry: no link
 */
#include "t_util.h"
#include <netdirect/netdirect.h>
#include "core/core.h"
#include "core/qp_int.h"
#include "transports/shm/shm_bounce.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define LEN (SHM_BOUNCE_CHUNK * 7 / 2)

enum target_kind { HONEST, OVERRUN, BAD_STATUS, SILENT };

static struct {
    nd_adapter *a;
    nd_port *port;
    uint8_t *mem;
    uint32_t token;
} t;

struct target {
    struct shm_served *s;
    enum target_kind kind;
    _Atomic bool stop;
    pthread_t thread;
};

/* Answer like a broken peer: done past prod, or a status no agent gives. */
static void answer_badly(struct target *tg)
{
    struct shm_bounce_hdr *h = (struct shm_bounce_hdr *)tg->s->map;
    uint32_t prod = atomic_load(&h->prod);

    if (prod == tg->s->served)
        return;
    if (tg->kind == OVERRUN) {
        atomic_store(&h->done, prod + 5);
    } else {
        struct shm_bounce_req *r = (struct shm_bounce_req *)(tg->s->map + SHM_BOUNCE_REQS_OFF);

        for (uint32_t i = tg->s->served; i != prod; i++)
            r[i % SHM_BOUNCE_ENTRIES].status = 12345;
        atomic_store(&h->done, prod);
    }
    tg->s->served = prod;
}

static void *target_main(void *arg)
{
    struct target *tg = arg;

    while (!atomic_load(&tg->stop)) {
        if (tg->kind == HONEST)
            shm_bounce_serve(tg->s);
        else if (tg->kind != SILENT)
            answer_badly(tg);
    }
    return NULL;
}

/* A target of @kind, its channel named in @ctl, and the link to it. */
static struct shm_bounce_link *open_pair(struct target *tg, enum target_kind kind, struct nd_qp_ctl *ctl,
                                         _Atomic uint32_t *state)
{
    struct shm_bounce_rights rights = { .mtab = ((struct nd_adapter *)t.a)->mtab };
    static _Atomic uint32_t no_atomics;
    struct nd_fd_ref ref;
    int bell = eventfd(0, EFD_CLOEXEC);

    rights.no_remote_atomic = &no_atomics;
    memset(ctl, 0, sizeof(*ctl));
    CHECK(bell >= 0 && (tg->s = shm_bounce_channel_new(&rights)) != NULL);
    CHECK(nd_fd_ref_of(tg->s->fd, &ref) && nd_fd_ref_of(bell, &(struct nd_fd_ref){ 0 }));
    ctl->bounce_chan = ref;
    ctl->bounce_bell = bell;
    atomic_store(&ctl->bounce_ready, 1);
    atomic_store(state, ND_WIRE_ACTIVE);
    tg->kind = kind;
    atomic_store(&tg->stop, false);
    CHECK(pthread_create(&tg->thread, NULL, target_main, tg) == 0);
    return shm_bounce_link(getpid(), ctl, state, state);
}

static void close_pair(struct target *tg, struct shm_bounce_link *l, struct nd_qp_ctl *ctl)
{
    atomic_store(&tg->stop, true);
    pthread_join(tg->thread, NULL);
    shm_bounce_unlink(l);
    nd_fd_unpublish(ctl->bounce_bell);
    close(ctl->bounce_bell);
    nd_fd_unpublish(tg->s->fd);
    shm_bounce_channel_free(tg->s);
}

static struct nd_wr wr_of(nd_sge *sge, uint32_t n, uint64_t total)
{
    return (struct nd_wr){ .sge = sge, .nsge = n, .total = total };
}

static void honest(void)
{
    struct target tg;
    struct nd_qp_ctl ctl;
    _Atomic uint32_t state;
    struct shm_bounce_link *l = open_pair(&tg, HONEST, &ctl, &state);
    uint8_t *src = malloc(LEN), *back = malloc(LEN);
    uint64_t base = (uint64_t)(uintptr_t)t.mem;

    CHECK(l && src && back);
    for (size_t i = 0; i < LEN; i++)
        src[i] = (uint8_t)(i * 7 + 3);
    /* Three SGEs of uneven lengths, into two pieces of the target's memory. */
    nd_sge out[3] = { { src, 1000, 0 }, { src + 1000, LEN / 2, 0 }, { src + 1000 + LEN / 2, LEN / 2 - 1000, 0 } };
    struct nd_wr w = wr_of(out, 3, LEN);
    struct shm_piece p[2] = { { t.token, base + 64, LEN / 3 }, { t.token, base + 64 + LEN / 3 + 4096, LEN - LEN / 3 } };
    CHECK(shm_bounce_move(l, SHM_BOUNCE_WRITE, p, 2, &w) == 0);
    CHECK(memcmp(t.mem + 64, src, LEN / 3) == 0 && memcmp(t.mem + 64 + LEN / 3 + 4096, src + LEN / 3, LEN - LEN / 3) == 0);
    /* Read it back in one piece into two SGEs, after one more Write. */
    memset(t.mem + 64 + LEN / 3, 0, 4096);
    CHECK(shm_bounce_move(l, SHM_BOUNCE_WRITE, &(struct shm_piece){ t.token, base + 64 + LEN / 3, 4096 }, 1,
                          &(struct nd_wr){ .sge = &(nd_sge){ src, 4096, 0 }, .nsge = 1, .total = 4096 }) == 0);
    nd_sge in[2] = { { back, 5000, 0 }, { back + 5000, LEN - 5000, 0 } };
    struct nd_wr r = wr_of(in, 2, LEN);
    CHECK(shm_bounce_move(l, SHM_BOUNCE_READ, &(struct shm_piece){ t.token, base + 64, LEN }, 1, &r) == 0);
    CHECK(memcmp(back, t.mem + 64, LEN) == 0 && memcmp(back + LEN / 3, src, 4096) == 0);
    /* A receive placement waits for its answers. */
    CHECK(shm_bounce_move(l, SHM_BOUNCE_RECV, &(struct shm_piece){ t.token, base, 100 }, 1,
                          &(struct nd_wr){ .sge = &(nd_sge){ src + 9, 100, 0 }, .nsge = 1, .total = 100 }) == 0);
    CHECK(memcmp(t.mem, src + 9, 100) == 0);
    uint64_t old = 0, *word = (uint64_t *)(t.mem + 8192);
    *word = 40;
    struct nd_wr fa = { .atomic = ND_REQUEST_TYPE_FETCH_ADD, .remote_addr = base + 8192, .remote_token = t.token,
                        .add_or_cmp = 2 };
    CHECK(shm_bounce_atomic(l, &fa, &old) == 0 && old == 40 && *word == 42);
    close_pair(&tg, l, &ctl);
    free(src);
    free(back);
    puts("honest: ok");
}

static void refused(void)
{
    struct target tg;
    struct nd_qp_ctl ctl;
    _Atomic uint32_t state;
    struct shm_bounce_link *l = open_pair(&tg, HONEST, &ctl, &state);
    uint8_t buf[256] = { 1 };
    struct nd_wr w = wr_of(&(nd_sge){ buf, sizeof(buf), 0 }, 1, sizeof(buf));
    struct shm_piece bad = { t.token ^ 0x5500, (uint64_t)(uintptr_t)t.mem, sizeof(buf) };

    CHECK(l);
    CHECK(shm_bounce_move(l, SHM_BOUNCE_READ, &bad, 1, &w) == -EFAULT);
    CHECK(shm_bounce_move(l, SHM_BOUNCE_WRITE, &bad, 1, &w) == -EFAULT);
    bad.token = t.token;
    CHECK(shm_bounce_move(l, SHM_BOUNCE_WRITE, &bad, 1, &w) == 0 && t.mem[0] == 1);
    close_pair(&tg, l, &ctl);
    puts("refused: ok");
}

static void broken(enum target_kind kind, const char *name, int want)
{
    struct target tg;
    struct nd_qp_ctl ctl;
    _Atomic uint32_t state;
    struct shm_bounce_link *l = open_pair(&tg, kind, &ctl, &state);
    uint8_t buf[256];
    struct nd_wr w = wr_of(&(nd_sge){ buf, sizeof(buf), 0 }, 1, sizeof(buf));
    struct shm_piece p = { t.token, (uint64_t)(uintptr_t)t.mem, sizeof(buf) };
    uint64_t start = nd_now_ns();

    CHECK(l);
    if (kind == SILENT)
        atomic_store(&state, ND_WIRE_TERMINATED);
    CHECK(shm_bounce_move(l, SHM_BOUNCE_READ, &p, 1, &w) == want);
    CHECK(nd_now_ns() - start < 1000000000ull);
    close_pair(&tg, l, &ctl);
    printf("%s: ok\n", name);
}

static void bad_header(void)
{
    struct target tg;
    struct nd_qp_ctl ctl;
    _Atomic uint32_t state;
    struct shm_bounce_link *l = open_pair(&tg, SILENT, &ctl, &state);

    CHECK(l);
    close_pair(&tg, l, &ctl);
    l = open_pair(&tg, SILENT, &ctl, &state);
    shm_bounce_unlink(l);
    ((struct shm_bounce_hdr *)tg.s->map)->chunk = SHM_BOUNCE_CHUNK * 2;
    CHECK(shm_bounce_link(getpid(), &ctl, &state, &state) == NULL);
    close_pair(&tg, NULL, &ctl);
    puts("bad-header: ok");
}

int main(void)
{
    struct sockaddr_in lo = t_ipv4("127.0.0.1", 0);
    nd_mr *mr;

    CHECK_ST(nd_open_adapter_by_address((struct sockaddr *)&lo, sizeof(lo), &t.a), ND_SUCCESS);
    CHECK_ST(nd_port_create(&t.port), ND_SUCCESS);
    t.mem = aligned_alloc(4096, 2 * LEN);
    CHECK(t.mem != NULL);
    CHECK_ST(nd_adapter_create_memory_region(t.a, t.port, &mr), ND_SUCCESS);
    CHECK(nd_mr_register_atomic(mr, t.mem, 2 * LEN, ND_MR_FLAG_ALLOW_LOCAL_WRITE | ND_MR_FLAG_ALLOW_REMOTE_READ |
                                ND_MR_FLAG_ALLOW_REMOTE_WRITE, true) == 0);
    t.token = nd_mr_get_remote_token(mr);
    honest();
    refused();
    broken(OVERRUN, "overrun", -EIO);
    broken(BAD_STATUS, "bad-status", -EIO);
    broken(SILENT, "ended", -ECANCELED);
    bad_header();
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    CHECK_ST(nd_mr_deregister(mr, &ov), ND_SUCCESS);
    CHECK_ST(nd_mr_close(mr), ND_SUCCESS);
    CHECK_ST(nd_port_close(t.port), ND_SUCCESS);
    CHECK_ST(nd_adapter_close(t.a), ND_SUCCESS);
    free(t.mem);
    return 0;
}
