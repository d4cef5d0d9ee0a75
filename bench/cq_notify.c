// SPDX-License-Identifier: MIT
/*
 * cq_notify: system calls and time per CQ operation, counted in-process with a perf
 * counter on the raw_syscalls:sys_enter tracepoint around each measured loop (the
 * counter's own enable/disable calls are measured by an empty loop and subtracted).
 *   arm on an empty CQ        nd_cq_notify(ANY) that pends
 *   arm + cancel              notify then cancel (a request that never reaches the port)
 *   poll of an empty CQ       nd_cq_get_results -> 0
 *   poll of a non-empty CQ    nd_cq_get_results -> 1
 *   producer, CQ not armed    nd_ring_produce while nobody sleeps
 *   producer, CQ armed        nd_ring_produce that must signal (expect 1: shows the counter works)
 * Needs root or perf_event_paranoid <= 1, and tracefs (bench/cq_notify.sh mounts it).
 */
#include <netdirect/netdirect.h>
#include "core/cq_int.h"
#include "nd_syscount.h"

#include <arpa/inet.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define N 1000000u
#define RING 65536u   /* = the largest CQ depth, so a full ring is no overrun */

static int counter_fd = -1;

static void counter_start(void)
{
    counter_fd = tool_counter_start();
}

/* Raw count, the disable call included: the empty-loop baseline takes it out. */
static uint64_t counter_stop(void)
{
    long long v = tool_counter_stop(counter_fd);

    counter_fd = -1;
    return v < 0 ? 0 : (uint64_t)v + 1;
}

static uint64_t baseline;
static int json;

static void report(const char *name, uint64_t calls, uint64_t t0, uint64_t t1, uint32_t n)
{
    double per = calls > baseline ? (double)(calls - baseline) / n : 0.0;

    if (json)
        printf("{\"op\":\"%s\",\"ops\":%u,\"syscalls\":%llu,\"syscalls_per_op\":%.4f,\"ns_per_op\":%.1f}\n",
               name, n, (unsigned long long)(calls - (calls > baseline ? baseline : calls)), per,
               (double)(t1 - t0) / n);
    else
        printf("%-28s %10u ops %10llu syscalls %8.4f /op %8.1f ns/op\n", name, n,
               (unsigned long long)(calls - (calls > baseline ? baseline : calls)), per,
               (double)(t1 - t0) / n);
}

/* The clock is read inside the counter's life: opening and closing it register and
 * unregister a tracepoint, milliseconds each. */
#define MEASURE(name, n, body)                                            \
    do {                                                                  \
        counter_start();                                                  \
        uint64_t t0_ = nd_now_ns();                                       \
        for (uint32_t i_ = 0; i_ < (n); i_++) { body; }                   \
        uint64_t t1_ = nd_now_ns();                                       \
        uint64_t c_ = counter_stop();                                     \
        report(name, c_, t0_, t1_, n);                                    \
    } while (0)

static enum nd_xlate bench_translate(void *ctx, const struct nd_cqe *e, nd_result *r)
{
    r->status = e->status;
    r->bytes_transferred = e->bytes;
    r->qp_context = ctx;
    r->request_context = NULL;
    r->request_type = (nd_request_type)e->type;
    return ND_XLATE_OK;
}

static const struct nd_cq_src_ops bench_ops = { .translate = bench_translate };

int main(int argc, char **argv)
{
    struct sockaddr_in lo = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct nd_ring_hdr *hdr = aligned_alloc(64, nd_ring_bytes(RING));
    struct nd_cqe *ents = (struct nd_cqe *)(hdr + 1), e = { .type = ND_REQUEST_TYPE_SEND };
    nd_overlapped *ovs = calloc(N, sizeof(*ovs)), one = { .flags = ND_OV_FLAG_NO_PORT };
    struct nd_ring_producer prod;
    struct nd_cq_src *src;
    nd_adapter *a;
    nd_port *port;
    nd_result res;
    nd_cq *cq;
    int probe;

    json = argc > 1 && !strcmp(argv[1], "--json");
    probe = tool_syscall_counter();     /* can we count at all? (each loop opens its own) */
    if (probe < 0) {
        fprintf(stderr, "cq_notify: cannot open the raw_syscalls:sys_enter counter (%m); "
                        "run as root with tracefs mounted (bench/cq_notify.sh)\n");
        return 77;
    }
    close(probe);
    memset(hdr, 0, sizeof(*hdr));
    if (nd_open_adapter_by_address((struct sockaddr *)&lo, sizeof(lo), &a) != ND_SUCCESS ||
        nd_port_create(&port) != ND_SUCCESS ||
        nd_adapter_create_completion_queue(a, port, RING, 0, 0, &cq) != ND_SUCCESS ||
        nd_cq_attach(cq, hdr, ents, RING, &bench_ops, NULL, &src) != ND_SUCCESS) {
        fprintf(stderr, "cq_notify: set-up failed\n");
        return 1;
    }
    nd_cq_local_producer(cq, hdr, ents, RING, &prod);

    MEASURE("empty loop (baseline)", N, __asm__ __volatile__("" ::: "memory"));
    counter_start();
    baseline = counter_stop();   /* the enable/disable ioctls of an empty region */
    for (uint32_t i = 0; i < N; i++)
        ovs[i].flags = ND_OV_FLAG_NO_PORT;
    MEASURE("arm on an empty CQ", N, if (nd_cq_notify(cq, ND_CQ_NOTIFY_ANY, &ovs[i_]) != ND_PENDING) return 1);
    nd_cq_cancel_overlapped_requests(cq);
    MEASURE("arm + cancel", N, nd_cq_notify(cq, ND_CQ_NOTIFY_ANY, &one); nd_cq_cancel_overlapped_requests(cq));
    MEASURE("poll of an empty CQ", N, if (nd_cq_get_results(cq, &res, 1) != 0) return 1);
    MEASURE("producer, CQ not armed", RING, nd_ring_produce(&prod, &e));
    MEASURE("poll of a non-empty CQ", RING, if (nd_cq_get_results(cq, &res, 1) != 1) return 1);
    /* Armed: every produce signals once (the consumer re-arms, which bumps the generation). */
    MEASURE("producer, CQ armed", 100000u,
            nd_cq_notify(cq, ND_CQ_NOTIFY_ANY, &one); nd_ring_produce(&prod, &e);
            nd_cq_get_results(cq, &res, 1));
    nd_cq_cancel_overlapped_requests(cq);
    nd_cq_detach(cq, src);
    nd_cq_close(cq);
    nd_port_close(port);
    nd_adapter_close(a);
    free(ovs);
    free(hdr);
    return 0;
}
