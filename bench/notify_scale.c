// SPDX-License-Identifier: MIT
/*
 * notify_scale: one thread waits on one completion port for N armed CQs; another thread
 * completes an entry on a random one of them. The delivery latency (entry published ->
 * nd_port_wait returns its notify) should not grow with N. Runs N = 1, 100, 10000 in one
 * process, samples interleaved, and prints the median and 90th percentile of each.
 *   notify_scale [--json]
 */
#include <netdirect/netdirect.h>
#include "core/cq_int.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define SAMPLES 2000
#define ENTRIES 2

struct ring {
    struct nd_ring_hdr hdr;
    struct nd_cqe ents[ENTRIES];
};

/* One configuration: N CQs, each with a ring, all armed, on one port. */
struct config {
    uint32_t n;
    nd_port *port;
    nd_cq **cqs;
    struct ring *rings;
    struct nd_ring_producer *prods;
    struct nd_cq_src **srcs;
    nd_overlapped *ovs;
    uint64_t lat[SAMPLES];
};

static struct nd_ring_producer *_Atomic target;
static _Atomic uint64_t published_ns;
static int go_pipe[2];

static enum nd_xlate xlate(void *ctx, const struct nd_cqe *e, nd_result *r)
{
    r->status = e->status;
    r->bytes_transferred = 0;
    r->qp_context = ctx;
    r->request_context = NULL;
    r->request_type = ND_REQUEST_TYPE_RECEIVE;
    return ND_XLATE_OK;
}

static const struct nd_cq_src_ops ops = { .translate = xlate };

static void *producer(void *arg)
{
    char c;

    (void)arg;
    while (read(go_pipe[0], &c, 1) == 1) {
        struct nd_cqe e = { .type = ND_REQUEST_TYPE_RECEIVE };

        atomic_store(&published_ns, nd_now_ns());
        nd_ring_produce(atomic_load(&target), &e);
    }
    return NULL;
}

static int cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

static void setup(nd_adapter *a, struct config *c)
{
    c->cqs = calloc(c->n, sizeof(*c->cqs));
    c->rings = aligned_alloc(64, c->n * sizeof(*c->rings));
    c->prods = calloc(c->n, sizeof(*c->prods));
    c->srcs = calloc(c->n, sizeof(*c->srcs));
    c->ovs = calloc(c->n, sizeof(*c->ovs));
    memset(c->rings, 0, c->n * sizeof(*c->rings));
    if (nd_port_create(&c->port) != ND_SUCCESS)
        exit(1);
    for (uint32_t i = 0; i < c->n; i++) {
        if (nd_adapter_create_completion_queue(a, c->port, 4, 0, 0, &c->cqs[i]) != ND_SUCCESS ||
            nd_cq_attach(c->cqs[i], &c->rings[i].hdr, c->rings[i].ents, ENTRIES, &ops, NULL, &c->srcs[i]) !=
                ND_SUCCESS) {
            fprintf(stderr, "notify_scale: cannot create %u CQs (raise RLIMIT_NOFILE)\n", c->n);
            exit(77);
        }
        nd_cq_local_producer(c->cqs[i], &c->rings[i].hdr, c->rings[i].ents, ENTRIES, &c->prods[i]);
        if (nd_cq_notify(c->cqs[i], ND_CQ_NOTIFY_ANY, &c->ovs[i]) != ND_PENDING)
            exit(1);
    }
}

/* One delivery on a random CQ of @c: the producer thread publishes, we wait on the port. */
static uint64_t sample(struct config *c)
{
    uint32_t which = (uint32_t)rand() % c->n;
    nd_overlapped *got;
    nd_result r;
    uint64_t lat;

    atomic_store(&target, &c->prods[which]);
    if (write(go_pipe[1], "g", 1) != 1 || nd_port_wait(c->port, ND_INFINITE, &got) != ND_SUCCESS ||
        got != &c->ovs[which])
        exit(1);
    lat = nd_now_ns() - atomic_load(&published_ns);
    while (nd_cq_get_results(c->cqs[which], &r, 1))
        ;
    if (nd_cq_notify(c->cqs[which], ND_CQ_NOTIFY_ANY, &c->ovs[which]) != ND_PENDING)
        exit(1);
    return lat;
}

static void teardown(struct config *c)
{
    for (uint32_t i = 0; i < c->n; i++) {
        nd_cq_cancel_overlapped_requests(c->cqs[i]);
        nd_cq_detach(c->cqs[i], c->srcs[i]);
        nd_cq_close(c->cqs[i]);
    }
    for (nd_overlapped *got; nd_port_wait(c->port, 0, &got) == ND_SUCCESS;)
        ;
    nd_port_close(c->port);
    free(c->ovs);
    free(c->srcs);
    free(c->cqs);
    free(c->rings);
    free(c->prods);
}

int main(int argc, char **argv)
{
    struct sockaddr_in lo = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct rlimit rl;
    int json = argc > 1 && !strcmp(argv[1], "--json");
    nd_adapter *a;

    /* Each CQ holds an eventfd: 10,000 of them need a larger descriptor limit. */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 20000) {
        rl.rlim_cur = rl.rlim_max < 20000 ? rl.rlim_max : 20000;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    if (nd_open_adapter_by_address((struct sockaddr *)&lo, sizeof(lo), &a) != ND_SUCCESS)
        return 1;
    static struct config cfg[3] = { { .n = 1 }, { .n = 100 }, { .n = 10000 } };
    pthread_t t;

    for (int i = 0; i < 3; i++)
        setup(a, &cfg[i]);
    if (pipe(go_pipe) < 0 || pthread_create(&t, NULL, producer, NULL))
        return 1;
    srand(42);
    /* Interleave the configurations so that the machine's moods hit all of them alike. */
    for (uint32_t s = 0; s < SAMPLES; s++)
        for (int i = 0; i < 3; i++)
            cfg[i].lat[s] = sample(&cfg[i]);
    close(go_pipe[1]);
    pthread_join(t, NULL);
    for (int i = 0; i < 3; i++) {
        struct config *c = &cfg[i];

        qsort(c->lat, SAMPLES, sizeof(c->lat[0]), cmp);
        if (json)
            printf("{\"cqs\":%u,\"samples\":%u,\"median_us\":%.2f,\"p90_us\":%.2f}\n", c->n, SAMPLES,
                   c->lat[SAMPLES / 2] / 1e3, c->lat[SAMPLES * 9 / 10] / 1e3);
        else
            printf("%6u CQs on one port: delivery median %.2f us, p90 %.2f us (%u samples)\n", c->n,
                   c->lat[SAMPLES / 2] / 1e3, c->lat[SAMPLES * 9 / 10] / 1e3, SAMPLES);
        teardown(c);
    }
    printf(json ? "{\"ratio_10000_to_1\":%.2f}\n" : "ratio of medians, 10000 CQs to 1: %.2f\n",
           (double)cfg[2].lat[SAMPLES / 2] / (double)cfg[0].lat[SAMPLES / 2]);
    nd_adapter_close(a);
    return 0;
}
