/* SPDX-License-Identifier: MIT */
/* Counting this thread's system calls around a measured loop (tools and benchmarks). */
#ifndef ND_SYSCOUNT_H
#define ND_SYSCOUNT_H

#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/*
 * A counter of thread @tid's system calls (0: this thread; the raw_syscalls:sys_enter
 * tracepoint), or -1 where tracefs or permissions are missing. Open only around a counted
 * loop: while any such event exists, even disabled, every thread on the machine takes the
 * system call slow path (TIF_SYSCALL_TRACEPOINT: ~40 ns a call here), timed runs and their
 * anchors included.
 */
static inline int tool_syscall_counter_of(pid_t tid)
{
    static const char *const paths[] = { "/sys/kernel/tracing/events/raw_syscalls/sys_enter/id",
                                         "/sys/kernel/debug/tracing/events/raw_syscalls/sys_enter/id" };
    struct perf_event_attr attr;
    unsigned long long id = 0;

    for (int i = 0; i < 2 && !id; i++) {
        FILE *f = fopen(paths[i], "r");

        if (f) {
            if (fscanf(f, "%llu", &id) != 1)
                id = 0;
            fclose(f);
        }
    }
    if (!id)
        return -1;
    memset(&attr, 0, sizeof(attr));
    attr.type = PERF_TYPE_TRACEPOINT;
    attr.size = sizeof(attr);
    attr.config = id;
    attr.disabled = 1;
    return (int)syscall(SYS_perf_event_open, &attr, tid, -1, -1, 0);
}

static inline int tool_syscall_counter(void)
{
    return tool_syscall_counter_of(0);
}

/* Count from now on a counter already open (-1: nothing). */
static inline void tool_counter_enable(int fd)
{
    if (fd >= 0) {
        ioctl(fd, PERF_EVENT_IOC_RESET, 0);
        ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
    }
}

/* A counter of thread @tid's system calls, counting (-1 without tracefs or rights). */
static inline int tool_counter_start_of(pid_t tid)
{
    int fd = tool_syscall_counter_of(tid);

    tool_counter_enable(fd);
    return fd;
}

/* A new counter, counting (-1 without tracefs or rights). Opening registers a tracepoint:
 * milliseconds, so open early (tool_syscall_counter) where that delay would matter. */
static inline int tool_counter_start(void)
{
    return tool_counter_start_of(0);
}

/* Syscalls since enabled, less the one disable call itself (-1 without a counter); the
 * counter stays open, disabled (tool_counter_enable counts again from zero). */
static inline long long tool_counter_pause(int fd)
{
    unsigned long long v = 0;

    if (fd < 0)
        return -1;
    ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
    if (read(fd, &v, sizeof(v)) != sizeof(v))
        return -1;
    return v > 0 ? (long long)v - 1 : 0;
}

/* As tool_counter_pause, then closes it. */
static inline long long tool_counter_stop(int fd)
{
    long long calls = tool_counter_pause(fd);

    if (fd >= 0)
        close(fd);
    return calls;
}

#endif
