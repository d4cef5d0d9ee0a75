// SPDX-License-Identifier: MIT
#include "core.h"
#include "env.h"
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int nd_log_levels[ND_SUB_COUNT];
static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static FILE *log_file;

static const char *const level_names[] = { "none", "error", "warn", "info", "debug", "trace" };
static const char *const sub_names[ND_SUB_COUNT] = { "core", "port", "cq", "mem", "srq",
                                                     "addr", "shm", "iwarp", "cm", "verbs", "udp" };

static int find_name(const char *const *names, int n, const char *s, size_t len)
{
    for (int i = 0; i < n; i++)
        if (strlen(names[i]) == len && !strncmp(names[i], s, len))
            return i;
    return -1;
}

/* One item of ND_LOG: "LEVEL" (every subsystem) or "SUBSYS:LEVEL". Unknown items are ignored. */
static void parse_item(const char *s, size_t len)
{
    const char *colon = memchr(s, ':', len);
    int sub = -1, level;

    if (colon) {
        sub = find_name(sub_names, ND_SUB_COUNT, s, (size_t)(colon - s));
        len -= (size_t)(colon + 1 - s);
        s = colon + 1;
        if (sub < 0)
            return;
    }
    level = find_name(level_names, (int)ND_ARRAY_SIZE(level_names), s, len);
    if (level < 0)
        return;
    for (int i = 0; i < ND_SUB_COUNT; i++)
        if (sub < 0 || sub == i)
            nd_log_levels[i] = level;
}

static void log_setup(void)
{
    const char *spec = nd_env(ND_KNOB_LOG), *path = nd_env(ND_KNOB_LOG_FILE);

    for (const char *p = spec; *p;) {
        size_t len = strcspn(p, ",");

        parse_item(p, len);
        p += len + (p[len] == ',');
    }
    log_file = *path ? fopen(path, "ae") : NULL;
}

void nd_log_init(void)
{
    pthread_once(&log_once, log_setup);
}

void nd_log_write(enum nd_log_level level, enum nd_log_subsys sub, const char *fmt, ...)
{
    FILE *f = log_file ? log_file : stderr;
    struct timespec ts;
    va_list ap;

    clock_gettime(CLOCK_REALTIME, &ts);
    flockfile(f);
    fprintf(f, "netdirect[%d] %ld.%06ld %s %s: ", (int)getpid(), (long)ts.tv_sec,
            ts.tv_nsec / 1000, level_names[level], sub_names[sub]);
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
    fflush(f);
    funlockfile(f);
}
