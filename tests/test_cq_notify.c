// SPDX-License-Identifier: MIT
/*
 * ND2's CQ notification rules with an in-process ring producer: arm-then-peek,
 * each completion triggers at most once, one event releases every notify, ANY overrides
 * SOLICITED, errors satisfy SOLICITED, ERRORS notifies and the sticky overrun, resize,
 * waiting in nd_get_overlapped_result, ND_OV_FLAG_NO_PORT, broken rings.
 */
#include "t_ring.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/syscall.h>

static nd_port *port;

static nd_overlapped *port_next(int timeout_ms)
{
    nd_overlapped *ov = NULL;

    CHECK_ST(nd_port_wait(port, timeout_ms, &ov), ND_SUCCESS);
    return ov;
}

static void port_empty(void)
{
    nd_overlapped *ov;

    CHECK_ST(nd_port_wait(port, 0, &ov), ND_TIMEOUT);
}

static uint32_t drain(nd_cq *cq)
{
    nd_result r[16];
    uint32_t n, total = 0;

    while ((n = nd_cq_get_results(cq, r, 16)) > 0)
        total += n;
    return total;
}

static void basic_notify(nd_cq *cq, struct t_ring *r)
{
    nd_overlapped ov = { 0 };
    nd_result res[4];

    CHECK(nd_cq_get_results(cq, res, 4) == 0);
    CHECK_ST(nd_cq_notify(cq, ND_CQ_NOTIFY_ANY, &ov), ND_PENDING);
    t_ring_put(r, 7, ND_SUCCESS, 123, ND_REQUEST_TYPE_RECEIVE, 0);
    CHECK(port_next(5000) == &ov);
    CHECK_ST(ov.status, ND_SUCCESS);
    CHECK(nd_cq_get_results(cq, res, 4) == 1);
    CHECK(res[0].status == ND_SUCCESS && res[0].bytes_transferred == 123 && res[0].qp_context == r &&
          res[0].request_context == (void *)8 && res[0].request_type == ND_REQUEST_TYPE_RECEIVE);
    CHECK(nd_cq_get_results(cq, res, 4) == 0);
}

/* An entry written before Notify but not yet returned completes the Notify at once. */
static void no_lost_wakeup(nd_cq *cq, struct t_ring *r)
{
    nd_overlapped ov = { 0 }, ov2 = { 0 };

    t_ring_put(r, 1, ND_CANCELED, 0, ND_REQUEST_TYPE_RECEIVE, 0);
    t_ring_put(r, 2, ND_CANCELED, 0, ND_REQUEST_TYPE_RECEIVE, 0);
    CHECK_ST(nd_cq_notify(cq, ND_CQ_NOTIFY_ANY, &ov), ND_SUCCESS);
    port_empty();   /* ND_SUCCESS: nothing is queued */
    /* Those entries already triggered a notify: the next one waits for a new entry. */
    CHECK_ST(nd_cq_notify(cq, ND_CQ_NOTIFY_ANY, &ov2), ND_PENDING);
    port_empty();
    CHECK(drain(cq) == 2);
    t_ring_put(r, 3, ND_SUCCESS, 0, ND_REQUEST_TYPE_SEND, 0);
    CHECK(port_next(5000) == &ov2);
    CHECK(drain(cq) == 1);
}

static void solicited(nd_cq *cq, struct t_ring *r)
{
    nd_overlapped sol = { 0 }, sol2 = { 0 }, any = { 0 };

    CHECK_ST(nd_cq_notify(cq, ND_CQ_NOTIFY_SOLICITED, &sol), ND_PENDING);
    t_ring_put(r, 1, ND_SUCCESS, 8, ND_REQUEST_TYPE_RECEIVE, 0);        /* not solicited */
    port_empty();
    CHECK_ST(nd_get_overlapped_result(&sol, 0), ND_PENDING);
    t_ring_put(r, 2, ND_SUCCESS, 8, ND_REQUEST_TYPE_RECEIVE, ND_CQE_SOLICITED);
    CHECK(port_next(5000) == &sol);
    CHECK(drain(cq) == 2);

    /* An error completion satisfies a SOLICITED notify. */
    CHECK_ST(nd_cq_notify(cq, ND_CQ_NOTIFY_SOLICITED, &sol), ND_PENDING);
    t_ring_put(r, 3, ND_ACCESS_VIOLATION, 0, ND_REQUEST_TYPE_WRITE, 0);
    CHECK(port_next(5000) == &sol);
    CHECK(drain(cq) == 1);

    /* ANY upgrades a pending SOLICITED arm; one event releases both, in request order. */
    CHECK_ST(nd_cq_notify(cq, ND_CQ_NOTIFY_SOLICITED, &sol), ND_PENDING);
    CHECK_ST(nd_cq_notify(cq, ND_CQ_NOTIFY_ANY, &any), ND_PENDING);
    CHECK_ST(nd_cq_notify(cq, ND_CQ_NOTIFY_SOLICITED, &sol2), ND_PENDING);
    t_ring_put(r, 4, ND_SUCCESS, 0, ND_REQUEST_TYPE_SEND, 0);
    CHECK(port_next(5000) == &sol);
    CHECK(port_next(0) == &any);
    CHECK(port_next(0) == &sol2);
    CHECK(sol.status == ND_SUCCESS && any.status == ND_SUCCESS && sol2.status == ND_SUCCESS);
    port_empty();
    CHECK(drain(cq) == 1);
}

struct waiter {
    nd_cq *cq;
    nd_overlapped ov;
    nd_status result;
    int ready[2];
    _Atomic pid_t tid;
};

static void *wait_thread(void *arg)
{
    struct waiter *w = arg;

    w->ov.flags = ND_OV_FLAG_NO_PORT;
    atomic_store(&w->tid, (pid_t)syscall(SYS_gettid));
    CHECK_ST(nd_cq_notify(w->cq, ND_CQ_NOTIFY_ANY, &w->ov), ND_PENDING);
    CHECK(write(w->ready[1], "r", 1) == 1);
    w->result = nd_cq_get_overlapped_result(w->cq, &w->ov, 1);
    return NULL;
}

/* Until thread @tid sleeps in the kernel (state S in /proc), within 10 s: it has spun
 * its moment and armed the CQ. Polls the thread's state; no timing is assumed. */
static void wait_until_asleep(pid_t tid)
{
    char path[64], buf[256];

    snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
    for (int i = 0; i < 1000000; i++) {
        FILE *f = fopen(path, "r");
        char *close_paren;

        CHECK(f != NULL);
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = 0;
        close_paren = strrchr(buf, ')');
        if (close_paren && close_paren[1] == ' ' && close_paren[2] == 'S')
            return;
        sched_yield();
    }
    fprintf(stderr, "the waiter never went to sleep\n");
    exit(1);
}

/* A thread blocked in GetOverlappedResult(wait) is released by a completion, or a cancel. */
static void blocking_wait(nd_cq *cq, struct t_ring *r)
{
    struct waiter w = { .cq = cq };
    pthread_t t;
    char c;

    CHECK(pipe(w.ready) == 0);
    CHECK(pthread_create(&t, NULL, wait_thread, &w) == 0);
    CHECK(read(w.ready[0], &c, 1) == 1);
    t_ring_put(r, 5, ND_SUCCESS, 0, ND_REQUEST_TYPE_SEND, 0);
    pthread_join(t, NULL);
    CHECK_ST(w.result, ND_SUCCESS);
    port_empty();                 /* NO_PORT: nothing went to the port */
    CHECK(drain(cq) == 1);

    /* The waiter spins first with the CQ disarmed (producers need not signal a spinner),
     * then arms and sleeps: an entry published once it sleeps must still wake it. */
    CHECK(pthread_create(&t, NULL, wait_thread, &w) == 0);
    CHECK(read(w.ready[0], &c, 1) == 1);
    wait_until_asleep(atomic_load(&w.tid));
    t_ring_put(r, 6, ND_SUCCESS, 0, ND_REQUEST_TYPE_SEND, 0);
    pthread_join(t, NULL);
    CHECK_ST(w.result, ND_SUCCESS);
    CHECK(drain(cq) == 1);

    CHECK(pthread_create(&t, NULL, wait_thread, &w) == 0);
    CHECK(read(w.ready[0], &c, 1) == 1);
    CHECK_ST(nd_cq_cancel_overlapped_requests(cq), ND_SUCCESS);
    pthread_join(t, NULL);
    CHECK_ST(w.result, ND_CANCELED);
    close(w.ready[0]);
    close(w.ready[1]);
}

static void broken_ring(nd_cq *cq, struct t_ring *good)
{
    struct t_ring *bad = t_ring_attach(cq), *liar = t_ring_attach(cq);
    nd_result res[8];

    /* An entry the owner cannot translate breaks that ring only. */
    t_ring_put(bad, 5000, ND_SUCCESS, 0, ND_REQUEST_TYPE_SEND, 0);
    /* An entry marked for another lap of the ring is not valid: never delivered. */
    liar->ents[0] = (struct nd_cqe){ .wr_index = 1, .type = ND_REQUEST_TYPE_SEND };
    __atomic_store_n(&liar->ents[0].seq, 1 + T_RING_ENTRIES, __ATOMIC_RELEASE);
    atomic_store(&liar->hdr.prod, T_RING_ENTRIES + 5);   /* nor does a wild producer hint matter */
    t_ring_put(good, 9, ND_SUCCESS, 1, ND_REQUEST_TYPE_SEND, 0);
    uint32_t n = nd_cq_get_results(cq, res, 8);
    n += nd_cq_get_results(cq, res + n, 8 - n);
    CHECK(n == 1 && res[0].request_context == (void *)10);
    CHECK(bad->broken == 1 && liar->broken == 0);
    t_ring_put(good, 10, ND_SUCCESS, 1, ND_REQUEST_TYPE_SEND, 0);
    CHECK(drain(cq) == 1);
    nd_cq_detach(cq, bad->src);
    nd_cq_detach(cq, liar->src);
    free(bad);
    free(liar);
}

static void overrun_and_resize(nd_adapter *a)
{
    nd_overlapped err = { 0 }, any = { 0 };
    struct t_ring *r;
    nd_cq *cq;

    CHECK_ST(nd_adapter_create_completion_queue(a, port, 4, 0, 0, &cq), ND_SUCCESS);
    r = t_ring_attach(cq);
    CHECK_ST(nd_cq_notify(cq, ND_CQ_NOTIFY_ERRORS, &err), ND_PENDING);
    for (uint32_t i = 0; i < 3; i++)
        t_ring_put(r, i, ND_SUCCESS, 0, ND_REQUEST_TYPE_SEND, 0);
    CHECK_ST(nd_cq_resize(cq, 2), ND_BUFFER_OVERFLOW);      /* 3 queued: unchanged */
    CHECK_ST(nd_cq_resize(cq, 3), ND_SUCCESS);
    CHECK_ST(nd_cq_resize(cq, 0), ND_INVALID_PARAMETER_1);
    nd_adapter_info info = { .info_version = ND_VERSION_2 };
    uint32_t size = sizeof(info);
    CHECK_ST(nd_adapter_query(a, &info, &size), ND_SUCCESS);
    CHECK_ST(nd_cq_resize(cq, info.max_completion_queue_depth + 1), ND_INVALID_PARAMETER_1);
    CHECK_ST(nd_get_overlapped_result(&err, 0), ND_PENDING); /* entries do not satisfy ERRORS */
    t_ring_put(r, 3, ND_SUCCESS, 0, ND_REQUEST_TYPE_SEND, 0); /* 4 entries in a CQ of 3 */
    nd_result res[8];
    CHECK(nd_cq_get_results(cq, res, 8) == 4);              /* nothing lost ... */
    CHECK(port_next(0) == &err);                            /* ... but the CQ is broken */
    CHECK_ST(err.status, ND_BUFFER_OVERFLOW);
    CHECK_ST(nd_cq_notify(cq, ND_CQ_NOTIFY_ANY, &any), ND_BUFFER_OVERFLOW);   /* sticky */
    CHECK_ST(nd_cq_resize(cq, 8), ND_BUFFER_OVERFLOW);
    port_empty();
    nd_cq_detach(cq, r->src);
    free(r);
    CHECK_ST(nd_cq_close(cq), ND_SUCCESS);

    /* A catastrophic error (reported by a transport) completes every notify type. */
    CHECK_ST(nd_adapter_create_completion_queue(a, port, 4, 0, 0, &cq), ND_SUCCESS);
    CHECK_ST(nd_cq_notify(cq, ND_CQ_NOTIFY_ERRORS, &err), ND_PENDING);
    CHECK_ST(nd_cq_notify(cq, ND_CQ_NOTIFY_ANY, &any), ND_PENDING);
    nd_cq_fail(cq, ND_INTERNAL_ERROR);
    CHECK(port_next(0) == &err && port_next(0) == &any);
    CHECK(err.status == ND_INTERNAL_ERROR && any.status == ND_INTERNAL_ERROR);
    CHECK_ST(nd_cq_notify(cq, ND_CQ_NOTIFY_ERRORS, &err), ND_INTERNAL_ERROR);
    CHECK_ST(nd_cq_close(cq), ND_SUCCESS);
}

int main(void)
{
    nd_adapter *a = t_open_loopback();
    struct t_ring *r;
    nd_overlapped ov = { 0 };
    nd_cq *cq;

    CHECK_ST(nd_port_create(&port), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_completion_queue(a, port, 256, 0, 0, &cq), ND_SUCCESS);
    CHECK_ST(nd_cq_notify(cq, 3, &ov), ND_INVALID_PARAMETER_1);
    CHECK_ST(nd_cq_notify(cq, ND_CQ_NOTIFY_ANY, NULL), ND_INVALID_PARAMETER_2);
    CHECK_ST(nd_cq_notify(NULL, ND_CQ_NOTIFY_ANY, &ov), ND_INVALID_HANDLE);
    CHECK(nd_cq_get_results(NULL, NULL, 1) == 0);
    r = t_ring_attach(cq);
    for (int i = 0; i < 200; i++) {   /* ring indices wrap several times */
        basic_notify(cq, r);
        no_lost_wakeup(cq, r);
        solicited(cq, r);
    }
    blocking_wait(cq, r);
    broken_ring(cq, r);
    overrun_and_resize(a);
    nd_cq_detach(cq, r->src);
    free(r);
    CHECK_ST(nd_cq_close(cq), ND_SUCCESS);
    CHECK_ST(nd_port_close(port), ND_SUCCESS);
    CHECK_ST(nd_adapter_close(a), ND_SUCCESS);
    puts("cq notify ok");
    return 0;
}
