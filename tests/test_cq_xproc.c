// SPDX-License-Identifier: MIT
/*
 * A CQ fed by a producer in another process, as the shm transport will do: the child
 * maps the adapter's region read-only (arm words), writes a ring in memory shared only
 * with it, and signals the CQ's eventfd. The parent blocks on the port. Checks: 100,000
 * streamed completions with the parent re-arming and sleeping (a lost wake-up hangs and
 * fails by timeout), the child cannot write the arm word, a saturated eventfd or a
 * broken ring from the child does not wedge the CQ.
 */
#include "t_ring.h"

#include <errno.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define STREAM 100000u

struct shared_rings {
    struct nd_ring_hdr hdr;
    struct nd_cqe ents[T_RING_ENTRIES];
    struct nd_ring_hdr bad_hdr;
    struct nd_cqe bad_ents[T_RING_ENTRIES];
};

static int to_child[2], to_parent[2];
static volatile sig_atomic_t phase;
static volatile uint32_t progress_count;
static nd_cq *dbg_cq;
static struct nd_ring_hdr *dbg_hdr;
static struct nd_cqe *dbg_ents;
static nd_overlapped *dbg_ov;

/* A hang is a failure with a story: where the parent was and how far it got. */
static void on_alarm(int sig)
{
    char msg[96];
    int n = snprintf(msg, sizeof(msg), "test_cq_xproc: stuck in phase %d after %u completions\n", (int)phase,
                     (unsigned)progress_count);

    (void)sig;
    if (write(2, msg, (size_t)n) < 0)
        _exit(2);
    if (dbg_cq) {
        /* Not async-signal-safe, but the process is stuck and about to die anyway. */
        uint32_t cons = atomic_load(&dbg_hdr->cons);
        fprintf(stderr, "cq: n_any %u n_sol %u arm 0x%x arm_gen %u pending %p ov.status 0x%x state %u\n",
                dbg_cq->n_any, dbg_cq->n_sol, (unsigned)atomic_load(dbg_cq->arm), dbg_cq->arm_gen,
                (void *)dbg_cq->ov.head, (unsigned)dbg_ov->status, dbg_ov->internal_state);
        nd_cq_debug_dump(dbg_cq, stderr);
        uint64_t cnt = 0;
        ssize_t rr = read(dbg_cq->signal_fd, &cnt, sizeof(cnt));
        fprintf(stderr, "eventfd read: %zd count %llu\n", rr, (unsigned long long)cnt);
        fprintf(stderr, "ring: prod %u cons %u signalled_gen %u seq[cons] %u seq[cons-1] %u\n",
                (unsigned)atomic_load(&dbg_hdr->prod), cons, dbg_hdr->signalled_gen,
                dbg_ents[cons & (T_RING_ENTRIES - 1)].seq, dbg_ents[(cons - 1) & (T_RING_ENTRIES - 1)].seq);
    }
    _exit(1);
}

static void child(struct shared_rings *sr, int ro_fd, size_t region, uint32_t arm_slot, int signal_fd)
{
    uint8_t *map = mmap(NULL, region, PROT_READ, MAP_SHARED, ro_fd, 0);
    struct nd_ring_producer p = { .hdr = &sr->hdr, .ents = sr->ents, .mask = T_RING_ENTRIES - 1,
                                  .signal_fd = signal_fd };
    char cmd;

    CHECK(map != MAP_FAILED);
    /* Read-only in the peer: no write mapping, no upgrade. */
    CHECK(mprotect(map, 4096, PROT_READ | PROT_WRITE) < 0 && errno == EACCES);
    CHECK(mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, ro_fd, 0) == MAP_FAILED);
    p.arm = (const _Atomic uint32_t *)(map + (size_t)arm_slot * ND_CACHELINE);
    while (read(to_child[0], &cmd, 1) == 1) {
        if (cmd == 'S') {
            for (uint32_t i = 0; i < STREAM; i++) {
                struct nd_cqe e = { .wr_index = i % 1000, .bytes = i, .type = ND_REQUEST_TYPE_RECEIVE };

                while (nd_ring_produce(&p, &e) < 0)
                    sched_yield();      /* ring full: the parent drains it */
            }
        } else if (cmd == 'H') {
            /* Fill the counter to its maximum, whatever it holds now. */
            for (uint64_t v = 0xfffffffffffffffeull; v;)
                if (write(signal_fd, &v, sizeof(v)) != sizeof(v))
                    v >>= 1;
            uint64_t one = 1;
            CHECK(write(signal_fd, &one, sizeof(one)) < 0 && errno == EAGAIN);
        } else if (cmd == 'B') {
            /* A well-formed entry its owner cannot accept. */
            sr->bad_ents[0] = (struct nd_cqe){ .wr_index = 99999, .type = ND_REQUEST_TYPE_SEND };
            __atomic_store_n(&sr->bad_ents[0].seq, 1, __ATOMIC_RELEASE);
        } else if (cmd == 'O') {
            struct nd_cqe e = { .wr_index = 1, .type = ND_REQUEST_TYPE_SEND };

            CHECK(nd_ring_produce(&p, &e) == 0);
        } else {
            _exit(0);
        }
        CHECK(write(to_parent[1], "k", 1) == 1);
    }
    _exit(0);
}

static void command(char c)
{
    char ack;

    CHECK(write(to_child[1], &c, 1) == 1);
    if (c != 'S' && c != 'Q')
        CHECK(read(to_parent[0], &ack, 1) == 1);
}

int main(void)
{
    nd_adapter *a = t_open_loopback();
    struct shared_rings *sr = mmap(NULL, sizeof(*sr), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    struct nd_cq_src *src, *bad_src;
    struct t_ring owner = { 0 }, bad_owner = { 0 };
    nd_overlapped ov = { 0 }, *got;
    nd_result res[64];
    nd_port *port;
    nd_cq *cq;
    pid_t pid;
    uint32_t received = 0, sleeps = 0;
    char ack;

    CHECK(sr != MAP_FAILED);
    CHECK_ST(nd_port_create(&port), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_completion_queue(a, port, 1024, 0, 0, &cq), ND_SUCCESS);
    CHECK_ST(nd_cq_attach(cq, &sr->hdr, sr->ents, T_RING_ENTRIES, &t_ring_ops, &owner, &src), ND_SUCCESS);
    CHECK_ST(nd_cq_attach(cq, &sr->bad_hdr, sr->bad_ents, T_RING_ENTRIES, &t_ring_ops, &bad_owner, &bad_src),
             ND_SUCCESS);
    int ro_fd = nd_adapter_export_ro_fd(a);
    CHECK(ro_fd >= 0);
    CHECK(pipe(to_child) == 0 && pipe(to_parent) == 0);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);   /* never spin on after the parent is gone */
        close(to_child[1]);
        close(to_parent[0]);
        child(sr, ro_fd, a->shm_size, cq->arm_slot, cq->signal_fd);
    }
    close(to_child[0]);
    close(to_parent[1]);

    dbg_cq = cq;
    dbg_hdr = &sr->hdr;
    dbg_ents = sr->ents;
    dbg_ov = &ov;
    signal(SIGALRM, on_alarm);
    alarm(40);
    /* Stream: drain, re-arm, sleep on the port when the arm finds nothing. */
    phase = 1;
    command('S');
    while (received < STREAM) {
        uint32_t n;

        while ((n = nd_cq_get_results(cq, res, 64)) > 0) {
            progress_count = received + n;
            for (uint32_t i = 0; i < n; i++, received++)
                CHECK(res[i].bytes_transferred == received && res[i].qp_context == &owner &&
                      res[i].request_context == (void *)(uintptr_t)(received % 1000 + 1));
        }
        if (received == STREAM)
            break;
        nd_status st = nd_cq_notify(cq, ND_CQ_NOTIFY_ANY, &ov);
        CHECK(st == ND_SUCCESS || st == ND_PENDING);
        if (st == ND_PENDING) {
            CHECK_ST(nd_port_wait(port, ND_INFINITE, &got), ND_SUCCESS);
            CHECK(got == &ov && ov.status == ND_SUCCESS);
            sleeps++;
        }
    }
    CHECK(read(to_parent[0], &ack, 1) == 1);

    /* A peer saturating the eventfd causes one spurious wake-up, not a wedge. */
    phase = 2;
    command('H');
    CHECK_ST(nd_cq_notify(cq, ND_CQ_NOTIFY_ANY, &ov), ND_PENDING);
    CHECK_ST(nd_port_wait(port, 100, &got), ND_TIMEOUT);
    command('O');
    CHECK_ST(nd_port_wait(port, 5000, &got), ND_SUCCESS);
    CHECK(got == &ov && nd_cq_get_results(cq, res, 64) == 1);

    /* A peer writing an impossible entry breaks that ring only. */
    phase = 3;
    command('B');
    CHECK(nd_cq_get_results(cq, res, 64) == 0 && bad_owner.broken == 1 && owner.broken == 0);
    CHECK_ST(nd_cq_notify(cq, ND_CQ_NOTIFY_ANY, &ov), ND_PENDING);
    command('O');
    CHECK_ST(nd_port_wait(port, 5000, &got), ND_SUCCESS);
    CHECK(nd_cq_get_results(cq, res, 64) == 1);

    phase = 4;
    command('Q');
    int status;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    nd_cq_detach(cq, src);
    nd_cq_detach(cq, bad_src);
    close(ro_fd);
    CHECK_ST(nd_cq_close(cq), ND_SUCCESS);
    CHECK_ST(nd_port_close(port), ND_SUCCESS);
    CHECK_ST(nd_adapter_close(a), ND_SUCCESS);
    printf("cross-process: %u completions, %u sleeps on the port\n", STREAM, sleeps);
    return 0;
}
