// SPDX-License-Identifier: MIT
/*
 * nd_rpingpong: RDMA Write latency, as ND's ndrpingpong. Each side hands its buffer over
 * in the connection's private data. The client Writes @size bytes into the server's buffer,
 * the last byte carrying a sequence number; the server watches its own memory for that
 * byte and Writes back the same way. Half the round trip is the latency. Both sides poll
 * their CQ while they watch (to reap their Writes' completions, and so that a transport
 * that needs a poller to move bytes gets one).
 *   nd_rpingpong -s <ip>[:port]       server
 *   nd_rpingpong -c <ip>[:port]       client   [-S size] [-M max] [-i iterations] [--json]
 */
#include "nd_tool.h"

#include <getopt.h>

#define DEFAULT_PORT 54328
#define MAX_SIZE (1u << 20)

struct target {
    uint64_t addr;
    uint32_t token;
};

struct side {
    struct tool_ep e;
    struct target peer;
    uint32_t writes_out;
};

static void reap(struct side *s)
{
    nd_result r;

    while (nd_cq_get_results(s->e.cq, &r, 1) == 1) {
        if (r.status != ND_SUCCESS)
            TOOL_DIE("completion failed: %s (type %d)", nd_strerror(r.status), r.request_type);
        s->writes_out--;
    }
}

/* Wait until the last byte of our buffer's [0, size) reads @seq. */
static void watch(struct side *s, uint32_t size, uint8_t seq)
{
    volatile uint8_t *last = (volatile uint8_t *)s->e.buf + size - 1;

    while (*last != seq)
        reap(s);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
}

static void write_to_peer(struct side *s, uint32_t size, uint8_t seq)
{
    uint8_t *src = (uint8_t *)s->e.buf + MAX_SIZE;
    nd_sge sge = { src, size, s->e.token };

    src[size - 1] = seq;
    while (s->writes_out >= 32)
        reap(s);
    TOOL_CHECK(nd_qp_write(s->e.qp, NULL, &sge, 1, s->peer.addr, s->peer.token, size <= 64 ? ND_OP_FLAG_INLINE : 0));
    s->writes_out++;
}

/* @iters round trips of @size; the sequence byte starts where the last run left it. */
static void run(struct side *s, uint32_t size, uint32_t iters, bool client, uint8_t *seq)
{
    for (uint32_t i = 0; i < iters; i++) {
        (*seq)++;
        if (client) {
            write_to_peer(s, size, *seq);
            watch(s, size, *seq);
        } else {
            watch(s, size, *seq);
            write_to_peer(s, size, *seq);
        }
    }
}

static void usage(void)
{
    fprintf(stderr, "usage: nd_rpingpong -s|-c <ip>[:port] [-S size] [-M max size] [-i iterations] [--json]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    static const struct option longs[] = { { "json", no_argument, NULL, 'j' }, { 0 } };
    struct side s = { 0 };
    struct sockaddr_in addr;
    uint32_t size = 0, max = 64u << 10, iters = 0, tl = sizeof(struct target);
    bool server = false, have = false, json = false;
    uint8_t seq = 0;
    int c;

    while ((c = getopt_long(argc, argv, "s:c:S:M:i:", longs, NULL)) != -1) {
        switch (c) {
        case 's': case 'c':
            server = c == 's';
            have = tool_parse_addr(optarg, DEFAULT_PORT, &addr);
            break;
        case 'S': size = (uint32_t)atoi(optarg); break;
        case 'M': max = (uint32_t)atoi(optarg); break;
        case 'i': iters = (uint32_t)atoi(optarg); break;
        case 'j': json = true; break;
        default: usage();
        }
    }
    if (!have || size > MAX_SIZE || max > MAX_SIZE || max < 1)
        usage();
    tool_open(&s.e, &addr, 2 * MAX_SIZE, 40, 1);
    struct target mine = { (uint64_t)(uintptr_t)s.e.buf, nd_mr_get_remote_token(s.e.mr) };
    /* Both sides run the same list of sizes: the client's options travel in its private
     * data next to its buffer. */
    uint32_t plan[3] = { size, max, iters };
    if (server) {
        struct { struct target t; uint32_t plan[3]; } hello;
        nd_overlapped ov = { 0 };
        uint32_t hl = sizeof(hello);

        TOOL_CHECK(nd_adapter_create_listener(s.e.adapter, s.e.port, &s.e.listener));
        TOOL_CHECK(nd_listener_bind(s.e.listener, (struct sockaddr *)&addr, sizeof(addr)));
        TOOL_CHECK(nd_listener_listen(s.e.listener, 0));
        fprintf(stderr, "listening on %s:%u\n", inet_ntoa(addr.sin_addr), ntohs(addr.sin_port));
        TOOL_CHECK(tool_wait(nd_listener_get_connection_request(s.e.listener, s.e.conn, &ov), &ov));
        TOOL_CHECK(nd_connector_get_private_data(s.e.conn, &hello, &hl));
        if (hl != sizeof(hello))
            TOOL_DIE("bad private data");
        s.peer = hello.t;
        memcpy(plan, hello.plan, sizeof(plan));
        TOOL_CHECK(tool_wait(nd_connector_accept(s.e.conn, s.e.qp, 8, 8, &mine, sizeof(mine), &ov), &ov));
    } else {
        struct { struct target t; uint32_t plan[3]; } hello = { mine, { size, max, iters } };
        struct sockaddr_in local = addr;
        nd_overlapped ov = { 0 };
        nd_status st;

        local.sin_port = 0;
        TOOL_CHECK(nd_connector_bind(s.e.conn, (struct sockaddr *)&local, sizeof(local)));
        for (int tries = 0;; tries++) {
            st = tool_wait(nd_connector_connect(s.e.conn, s.e.qp, (struct sockaddr *)&addr, sizeof(addr), 8, 8,
                                                &hello, sizeof(hello), &ov), &ov);
            if (st != ND_CONNECTION_REFUSED || tries == 5000)
                break;
            struct timespec ts = { 0, 1000000 };
            nanosleep(&ts, NULL);
        }
        TOOL_CHECK(st);
        TOOL_CHECK(nd_connector_get_private_data(s.e.conn, &s.peer, &tl));
        TOOL_CHECK(tool_wait(nd_connector_complete_connect(s.e.conn, &ov), &ov));
        if (!json)
            printf("%10s %10s %14s %8s\n", "Size", "Iter", "Latency(us)", "CPU(%)");
    }
    for (uint32_t sz = plan[0] ? plan[0] : 1; sz <= (plan[0] ? plan[0] : plan[1]); sz *= 2) {
        uint32_t n = plan[2] ? plan[2] : sz <= 4096 ? 50000 : 5000;

        run(&s, sz, 500, !server, &seq);     /* warm-up */
        double t0 = tool_now_us(), c0 = tool_cpu_us();
        run(&s, sz, n, !server, &seq);
        double us = tool_now_us() - t0, cpu = tool_cpu_us() - c0;
        if (!server && json)
            printf("{\"op\":\"write\",\"size\":%u,\"iterations\":%u,\"latency_us\":%.3f,\"cpu_percent\":%.1f}\n", sz, n,
                   us / n / 2, 100.0 * cpu / us);
        else if (!server)
            printf("%10u %10u %14.3f %8.1f\n", sz, n, us / n / 2, 100.0 * cpu / us);
        fflush(stdout);
        if (plan[0])
            break;
    }
    while (s.writes_out)
        reap(&s);
    tool_close(&s.e);
    return 0;
}
