/* SPDX-License-Identifier: MIT */
/* What a test can see of its own process: descriptors, mappings, resident memory. */
#ifndef T_PROC_H
#define T_PROC_H

#include "t_threads.h"
#include "t_util.h"

#include <dirent.h>
#include <malloc.h>
#include <signal.h>
#include <stdbool.h>
#include <time.h>

/* Sanitizer runtimes hold freed memory in quarantine and map their own regions: there, the
 * descriptors are checked here and the heap by LeakSanitizer at exit. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

/* The library's own threads (named nd-*): each must block the application's signals.
 * Returns how many were checked; exits 1 on one that does not. */
static inline uint32_t t_library_threads_block_signals(void)
{
    return t_threads_block_signals("nd-");
}

static inline uint32_t open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    uint32_t n = 0;

    CHECK(d != NULL);
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

/* What each open descriptor is (" 3=socket:[123]" each), into @out, for a failure's report. */
static inline void fd_listing(char *out, size_t size)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    size_t at = 0;

    CHECK(d != NULL && size > 0);
    out[0] = 0;
    while ((e = readdir(d)) && at < size) {
        char path[300], target[256];
        ssize_t n;

        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
        n = readlink(path, target, sizeof(target) - 1);
        target[n > 0 ? n : 0] = 0;
        at += (size_t)snprintf(out + at, size - at, " %s=%s", e->d_name, target);
    }
    closedir(d);
}

static inline uint32_t mappings(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    uint32_t n = 0;
    int ch;

    CHECK(f != NULL);
    while ((ch = fgetc(f)) != EOF)
        n += ch == '\n';
    fclose(f);
    return n;
}

static inline long rss_kib(void)
{
    long pages = 0, resident = 0;

    malloc_trim(0);
    FILE *f = fopen("/proc/self/statm", "r");

    CHECK(f && fscanf(f, "%ld %ld", &pages, &resident) == 2);
    fclose(f);
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/*
 * A queue pair closed while the iwarp engine thread still held it for a moment is
 * released by that thread right after: read the descriptor count until it holds still
 * (bounded; this waits for the library, not for a peer).
 */
static inline uint32_t settled_fds(void)
{
    uint32_t n = open_fds(), same = 0;

    /* Stable for 4 readings 5 ms apart (the engine thread may be preempted under load),
     * within a second. */
    for (int i = 0; i < 200 && same < 4; i++) {
        struct timespec ts = { 0, 5000000 };
        uint32_t again;

        nanosleep(&ts, NULL);
        again = open_fds();
        same = again == n ? same + 1 : 0;
        n = again;
    }
    return n;
}

/* Resident memory that is private to this process (heap, stacks, private mappings): what
 * grows if something leaks; shared pages (rings and slots a peer writes) are left out. */
static inline long rss_private_kib(void)
{
    long pages = 0, resident = 0, shared = 0;

    malloc_trim(0);
    FILE *f = fopen("/proc/self/statm", "r");

    CHECK(f && fscanf(f, "%ld %ld %ld", &pages, &resident, &shared) == 3);
    fclose(f);
    return (resident - shared) * (sysconf(_SC_PAGESIZE) / 1024);
}

#endif
