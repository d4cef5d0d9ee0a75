// SPDX-License-Identifier: MIT
#include "core.h"

#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int nd_futex_wait(uint32_t *word, uint32_t expect, int timeout_ms)
{
    struct timespec ts, *tsp = NULL;

    if (timeout_ms >= 0) {
        ts.tv_sec = timeout_ms / 1000;
        ts.tv_nsec = (long)(timeout_ms % 1000) * 1000000;
        tsp = &ts;
    }
    return (int)syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expect, tsp, NULL, 0);
}

int nd_futex_wake(uint32_t *word, int n)
{
    return (int)syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

uint64_t nd_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
