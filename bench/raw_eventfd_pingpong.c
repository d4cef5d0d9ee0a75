// SPDX-License-Identifier: MIT
/*
 * The floor for blocking ping-pong on one host: two processes share a buffer per direction
 * and sleep in read() on an eventfd until the other side copies its message in and writes
 * the eventfd. Two system calls per side per round trip and a cross-CPU wake-up each way:
 * what a blocking transport pays at least when it sleeps every time.
 *   raw_eventfd_pingpong [-S size] [-i iterations] [--json]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_SIZE (1u << 20)

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* One side: wait for the peer's message (unless we start), copy it out, answer. */
static int run(uint8_t *in, uint8_t *out, int wait_fd, int wake_fd, uint32_t size, uint32_t iters, int first,
               uint8_t *local)
{
    uint64_t v = 1;

    for (uint32_t i = 0; i < iters; i++) {
        if (first) {
            memcpy(out, local, size);
            if (write(wake_fd, &v, sizeof(v)) != sizeof(v))
                return -1;
        }
        if (read(wait_fd, &v, sizeof(v)) != sizeof(v))
            return -1;
        memcpy(local, in, size);
        if (!first) {
            memcpy(out, local, size);
            if (write(wake_fd, &v, sizeof(v)) != sizeof(v))
                return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    uint32_t size = 8, iters = 100000, warm = 2000;
    int json = 0;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-S") && i + 1 < argc)
            size = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "-i") && i + 1 < argc)
            iters = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--json"))
            json = 1;
    }
    if (size > MAX_SIZE)
        return 2;
    uint8_t *shared = mmap(NULL, 2 * MAX_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    uint8_t *local = calloc(1, MAX_SIZE);
    int to_server = eventfd(0, EFD_CLOEXEC), to_client = eventfd(0, EFD_CLOEXEC);

    if (shared == MAP_FAILED || !local || to_server < 0 || to_client < 0)
        return 1;
    pid_t pid = fork();
    if (pid == 0)
        _exit(run(shared, shared + MAX_SIZE, to_server, to_client, size, warm + iters, 0, local) ? 1 : 0);
    if (run(shared + MAX_SIZE, shared, to_client, to_server, size, warm, 1, local))
        return 1;
    double t0 = now_us();
    if (run(shared + MAX_SIZE, shared, to_client, to_server, size, iters, 1, local))
        return 1;
    double us = now_us() - t0;
    int status;
    waitpid(pid, &status, 0);
    if (json)
        printf("{\"size\":%u,\"iterations\":%u,\"latency_us\":%.4f,\"syscalls_per_roundtrip\":2}\n", size, iters,
               us / iters / 2);
    else
        printf("raw eventfd ping-pong: %u B, %u iterations, half round trip %.4f us, 2 system calls per side\n",
               size, iters, us / iters / 2);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
