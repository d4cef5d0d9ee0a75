// SPDX-License-Identifier: MIT
/*
 * The floor for same-host ping-pong: two processes spinning on a shared cache line, each
 * copying an 8-byte (or -S size) message into a shared buffer and bumping a sequence
 * word. No library, no queues: what netdirect's shm path is measured against. By default
 * the message sits in the line after the sequence word's, so each message moves two lines;
 * -1 puts it in the sequence word's own line (up to 56 bytes: one line a message, as a
 * netdirect message of up to 36 bytes rides in its completion's line), the tighter floor.
 *   raw_shm_pingpong [-S size] [-i iterations] [-1] [--json]
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct lane {
    _Atomic uint32_t seq;
    uint8_t pad[60];
    uint8_t data[1 << 16];
};

static int one_line;

/* Where a lane's message starts: the next line, or (-1) 8 bytes into the sequence's line,
 * running on into the next ones for larger sizes. */
static uint8_t *msg(struct lane *l)
{
    return one_line ? l->pad + 4 : l->data;
}

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void run(struct lane *out, struct lane *in, uint32_t size, uint32_t iters, int first, uint8_t *local)
{
    for (uint32_t i = 1; i <= iters; i++) {
        if (first) {
            memcpy(msg(out), local, size);
            atomic_store_explicit(&out->seq, i, memory_order_release);
        }
        while (atomic_load_explicit(&in->seq, memory_order_acquire) != i)
            __builtin_ia32_pause();
        memcpy(local, msg(in), size);
        if (!first) {
            memcpy(msg(out), local, size);
            atomic_store_explicit(&out->seq, i, memory_order_release);
        }
    }
}

int main(int argc, char **argv)
{
    uint32_t size = 8, iters = 1000000;
    int json = 0;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-S") && i + 1 < argc)
            size = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "-i") && i + 1 < argc)
            iters = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "-1"))
            one_line = 1;
        else if (!strcmp(argv[i], "--json"))
            json = 1;
    }
    if (size > sizeof(((struct lane *)0)->data))
        return 2;
    struct lane *l = mmap(NULL, 2 * sizeof(struct lane), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    uint8_t local[1 << 16] = { 0 };

    if (l == MAP_FAILED)
        return 1;
    pid_t pid = fork();
    if (pid == 0) {
        run(&l[1], &l[0], size, iters + 10000, 0, local);
        _exit(0);
    }
    run(&l[0], &l[1], size, 10000, 1, local);    /* warm-up */
    atomic_store(&l[0].seq, 0);
    double t0 = now_us();
    /* Continue the sequence where the warm-up left off. */
    for (uint32_t i = 10001; i <= iters + 10000; i++) {
        memcpy(msg(&l[0]), local, size);
        atomic_store_explicit(&l[0].seq, i, memory_order_release);
        while (atomic_load_explicit(&l[1].seq, memory_order_acquire) != i)
            __builtin_ia32_pause();
        memcpy(local, msg(&l[1]), size);
    }
    double us = now_us() - t0;
    waitpid(pid, NULL, 0);
    if (json)
        printf("{\"size\":%u,\"iterations\":%u,\"latency_us\":%.4f}\n", size, iters, us / iters / 2);
    else
        printf("raw shm ping-pong: %u B, %u iterations, half round trip %.4f us\n", size, iters, us / iters / 2);
    return 0;
}
