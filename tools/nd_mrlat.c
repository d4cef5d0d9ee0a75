// SPDX-License-Identifier: MIT
/*
 * nd_mrlat: memory registration latency, as ND's ndmrlat: per size, the average time of
 * Register and of Deregister (each waited for through its overlapped result).
 *   nd_mrlat [-a <ip>] [-S size] [-M max] [-i iterations] [--json]
 * The adapter is the one that owns <ip> (default 127.0.0.1); nothing goes on the wire.
 */
#include "nd_tool.h"

#include <getopt.h>

#define MAX_SIZE (64u << 20)

static void usage(void)
{
    fprintf(stderr, "usage: nd_mrlat [-a <ip>] [-S size] [-M max size] [-i iterations] [--json]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    static const struct option longs[] = { { "json", no_argument, NULL, 'j' }, { 0 } };
    struct sockaddr_in addr;
    uint32_t size = 0, max = 4u << 20, iters = 0;
    bool json = false;
    nd_adapter *a;
    nd_port *port;
    nd_mr *mr;
    int c;

    tool_parse_addr("127.0.0.1", 0, &addr);
    while ((c = getopt_long(argc, argv, "a:S:M:i:", longs, NULL)) != -1) {
        switch (c) {
        case 'a': if (!tool_parse_addr(optarg, 0, &addr)) usage(); break;
        case 'S': size = (uint32_t)atoi(optarg); break;
        case 'M': max = (uint32_t)atoi(optarg); break;
        case 'i': iters = (uint32_t)atoi(optarg); break;
        case 'j': json = true; break;
        default: usage();
        }
    }
    if (size > MAX_SIZE || max > MAX_SIZE || max < 1)
        usage();
    TOOL_CHECK(nd_open_adapter_by_address((struct sockaddr *)&addr, sizeof(addr), &a));
    TOOL_CHECK(nd_adapter_create_overlapped_file(a, &port));
    TOOL_CHECK(nd_adapter_create_memory_region(a, port, &mr));
    uint8_t *buf = aligned_alloc(4096, size ? ((size + 4095) & ~4095u) : max);
    if (!buf)
        TOOL_DIE("out of memory");
    memset(buf, 1, size ? size : max);     /* resident, as an application's buffer would be */
    if (!json)
        printf("%10s %10s %14s %14s\n", "Size", "Iter", "Register(us)", "Deregister(us)");
    for (uint32_t s = size ? size : 4096; s <= (size ? size : max); s *= 4) {
        uint32_t n = iters ? iters : s <= (1u << 20) ? 5000 : 500;
        double reg = 0, dereg = 0;

        for (uint32_t i = 0; i < n; i++) {
            nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
            double t0 = tool_now_us();

            TOOL_CHECK(tool_wait(nd_mr_register(mr, buf, s, ND_MR_FLAG_ALLOW_LOCAL_WRITE |
                                                ND_MR_FLAG_ALLOW_REMOTE_WRITE, &ov), &ov));
            double t1 = tool_now_us();
            TOOL_CHECK(tool_wait(nd_mr_deregister(mr, &ov), &ov));
            reg += t1 - t0;
            dereg += tool_now_us() - t1;
        }
        if (json)
            printf("{\"size\":%u,\"iterations\":%u,\"register_us\":%.3f,\"deregister_us\":%.3f}\n", s, n, reg / n,
                   dereg / n);
        else
            printf("%10u %10u %14.3f %14.3f\n", s, n, reg / n, dereg / n);
        fflush(stdout);
        if (size)
            break;
    }
    nd_mr_close(mr);
    nd_port_close(port);
    nd_adapter_close(a);
    free(buf);
    return 0;
}
