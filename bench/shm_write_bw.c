// SPDX-License-Identifier: MIT
/*
 * shm_write_bw: RDMA Write bandwidth between two processes on this host against a plain
 * memcpy of the same size in the same run. The server exposes a buffer and sleeps on a
 * pipe; the client keeps -q Writes in flight. -a: the server's buffer comes from
 * nd_alloc_memory (peers map it: the Writes are memcpy), else from aligned_alloc (each
 * Write is one cross-memory call). -H: both sides' buffers on transparent huge pages
 * (2 MiB aligned, madvise(MADV_HUGEPAGE)), as perftest's --use_hugepages: the kernel pins
 * the target's pages a huge page at a time, still ordinary private memory. -R bytes: the
 * server's buffer is that large (a multiple of size) and the Writes walk through it, as
 * the memcpy does through a buffer of the same size: with a region holding whole 2 MiB
 * blocks, registration makes them huge pages (ND_MR_HUGE_PAGES, on unless set to 0).
 * -r: RDMA Reads of the server's buffer instead (the memcpy copies out of its buffer).
 *   shm_write_bw [-S size] [-R region] [-n count] [-q depth] [-a | -H] [-r] [--json]
 */
#include <netdirect/netdirect.h>
#include "nd_smaps.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HUGE_BYTES (2u << 20)
#define READ_LIMIT 16
#define DIE(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define OK(x) do { nd_status s_ = (x); if (ND_FAILED(s_)) DIE("%s: %s", #x, nd_strerror(s_)); } while (0)

struct side {
    nd_adapter *a;
    nd_port *port;
    nd_cq *cq;
    nd_qp *qp;
    nd_connector *c;
    nd_listener *l;
    nd_mr *mr;
    uint8_t *buf;
};

struct hello {
    uint64_t addr;
    uint32_t token;
};

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static nd_status wait_ov(nd_status st, nd_overlapped *ov)
{
    return st == ND_PENDING ? nd_get_overlapped_result(ov, 1) : st;
}

static void open_side(struct side *s, size_t len, uint32_t depth, bool shared, bool huge)
{
    struct sockaddr_in lo = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    nd_overlapped ov = { 0 };

    OK(nd_open_adapter_by_address((struct sockaddr *)&lo, sizeof(lo), &s->a));
    OK(nd_port_create(&s->port));
    OK(nd_adapter_create_completion_queue(s->a, s->port, depth * 2, 0, 0, &s->cq));
    OK(nd_adapter_create_queue_pair(s->a, s->cq, s->cq, s, depth, depth, 1, 1, 0, &s->qp));
    OK(nd_adapter_create_connector(s->a, s->port, &s->c));
    if (shared)
        OK(nd_alloc_memory(len, (void **)&s->buf));
    else if (huge) {
        size_t span = (len + HUGE_BYTES - 1) / HUGE_BYTES * HUGE_BYTES;

        s->buf = aligned_alloc(HUGE_BYTES, span);
        if (s->buf && madvise(s->buf, span, MADV_HUGEPAGE))
            DIE("madvise(MADV_HUGEPAGE): %m");
    } else
        s->buf = aligned_alloc(4096, len);
    memset(s->buf, 1, len);
    OK(nd_adapter_create_memory_region(s->a, s->port, &s->mr));
    OK(nd_mr_register(s->mr, s->buf, len, ND_MR_FLAG_ALLOW_REMOTE_WRITE | ND_MR_FLAG_ALLOW_REMOTE_READ, &ov));
}

/* Ordinary memory's whole 2 MiB blocks become huge pages after Register returns, in a
 * thread of the library: measure the steady state, once they are (at most 5 s). */
static void wait_huge_pages(const uint8_t *buf, size_t len, bool special)
{
    long want = tool_whole_blocks_kib(buf, len);
    const char *knob = getenv("ND_MR_HUGE_PAGES");
    double t0 = now();

    if (special || !want || (knob && !strcmp(knob, "0")))
        return;
    long kib = tool_wait_huge_kib(buf, want, 5000);
    fprintf(stderr, "server: %ld of %ld KiB huge pages after %.1f ms\n", kib, want, (now() - t0) * 1e3);
}

int main(int argc, char **argv)
{
    uint32_t size = 1 << 20, count = 2000, depth = 8, region = 0;
    int json = 0, port_pipe[2], done_pipe[2];
    bool shared = false, huge = false, reads = false;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-S") && i + 1 < argc) size = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "-R") && i + 1 < argc) region = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "-n") && i + 1 < argc) count = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "-q") && i + 1 < argc) depth = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "-a")) shared = true;
        else if (!strcmp(argv[i], "-H")) huge = true;
        else if (!strcmp(argv[i], "-r")) reads = true;
        else if (!strcmp(argv[i], "--json")) json = 1;
    }
    if (!size || region % size)
        DIE("-R must be a multiple of -S");
    region = region ? region : size;
    if (pipe(port_pipe) || pipe(done_pipe))
        return 1;
    pid_t pid = fork();
    if (pid == 0) {
        struct side s = { 0 };
        struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        uint32_t len = sizeof(sin);
        nd_overlapped ov = { 0 };
        char c;

        open_side(&s, region, depth, shared, huge);
        wait_huge_pages(s.buf, region, shared || huge);
        struct hello h = { (uintptr_t)s.buf, nd_mr_get_remote_token(s.mr) };
        OK(nd_adapter_create_listener(s.a, s.port, &s.l));
        OK(nd_listener_bind(s.l, (struct sockaddr *)&sin, sizeof(sin)));
        OK(nd_listener_listen(s.l, 0));
        OK(nd_listener_get_local_address(s.l, (struct sockaddr *)&sin, &len));
        if (write(port_pipe[1], &sin.sin_port, 2) != 2)
            _exit(1);
        OK(wait_ov(nd_listener_get_connection_request(s.l, s.c, &ov), &ov));
        OK(wait_ov(nd_connector_accept(s.c, s.qp, READ_LIMIT, 0, &h, sizeof(h), &ov), &ov));
        if (read(done_pipe[0], &c, 1) != 1)   /* the target's CPU sleeps throughout */
            _exit(1);
        _exit(0);
    }
    struct side s = { 0 };
    struct sockaddr_in local = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) }, dest = local;
    struct hello h;
    uint32_t hl = sizeof(h);
    nd_overlapped ov = { 0 };
    nd_result r[16];

    open_side(&s, size, depth, false, huge);
    if (read(port_pipe[0], &dest.sin_port, 2) != 2)
        return 1;
    OK(nd_connector_bind(s.c, (struct sockaddr *)&local, sizeof(local)));
    OK(wait_ov(nd_connector_connect(s.c, s.qp, (struct sockaddr *)&dest, sizeof(dest), 0, READ_LIMIT, NULL, 0, &ov), &ov));
    OK(nd_connector_get_private_data(s.c, &h, &hl));
    OK(wait_ov(nd_connector_complete_connect(s.c, &ov), &ov));
    nd_sge sge = { s.buf, size, nd_mr_get_local_token(s.mr) };
    uint32_t posted = 0, done = 0;
    double t0 = now();
    while (done < count) {
        while (posted < count && posted - done < depth) {
            uint64_t at = h.addr + (uint64_t)posted * size % region;

            OK(reads ? nd_qp_read(s.qp, NULL, &sge, 1, at, h.token, 0)
                     : nd_qp_write(s.qp, NULL, &sge, 1, at, h.token, 0));
            posted++;
        }
        uint32_t n = nd_cq_get_results(s.cq, r, 16);
        for (uint32_t i = 0; i < n; i++)
            if (r[i].status != ND_SUCCESS)
                DIE("%s failed: %s", reads ? "read" : "write", nd_strerror(r[i].status));
        done += n;
    }
    double nd_s = now() - t0;
    /* memcpy of the same size, same number of times, between two buffers, same run; with a
     * region, into its successive slices as the Writes went. */
    uint8_t *a = aligned_alloc(4096, size), *b = aligned_alloc(4096, region);
    memset(a, 2, size);
    memset(b, 3, region);
    t0 = now();
    for (uint32_t i = 0; i < count; i++) {
        if (region == size)
            memcpy(i & 1 ? a : b, i & 1 ? b : a, size);
        else if (reads)
            memcpy(a, b + (uint64_t)i * size % region, size);
        else
            memcpy(b + (uint64_t)i * size % region, a, size);
        __asm__ __volatile__("" ::: "memory");
    }
    double mc_s = now() - t0;
    double nd_gbs = (double)size * count / nd_s / 1e9, mc_gbs = (double)size * count / mc_s / 1e9;
    const char *target = shared ? "nd_alloc_memory" : huge ? "huge-page" : "aligned_alloc";
    if (write(done_pipe[1], "d", 1) != 1)
        return 1;
    waitpid(pid, NULL, 0);
    if (json)
        printf("{\"size\":%u,\"region\":%u,\"count\":%u,\"depth\":%u,\"target\":\"%s\",\"%s_gbps\":%.3f,"
               "\"memcpy_gbps\":%.3f,\"ratio\":%.3f}\n", size, region, count, depth, target,
               reads ? "read" : "write", nd_gbs, mc_gbs, nd_gbs / mc_gbs);
    else
        printf("RDMA %s %u B x %u (depth %u) %s %u B of %s memory: %.2f GB/s; memcpy: %.2f GB/s; ratio %.2f\n",
               reads ? "Read" : "Write", size, count, depth, reads ? "from" : "into", region, target, nd_gbs,
               mc_gbs, nd_gbs / mc_gbs);
    free(a);
    free(b);
    return 0;
}
