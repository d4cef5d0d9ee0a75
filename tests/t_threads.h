/* SPDX-License-Identifier: MIT */
/* The signal masks of this process's threads, for tests of every front end (no CHECK of
 * its own: the ND tests' and the verbs tests' differ). */
#ifndef T_THREADS_H
#define T_THREADS_H

#include <dirent.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The threads whose name starts with @prefix must each block the application's signals
 * (SIGINT, SIGTERM, SIGUSR1, SIGCHLD, SIGPIPE, SIGALRM). Returns how many were checked;
 * exits 1 on one that does not. */
static inline uint32_t t_threads_block_signals(const char *prefix)
{
    const unsigned long long wanted = 1ull << (SIGINT - 1) | 1ull << (SIGTERM - 1) | 1ull << (SIGUSR1 - 1) |
                                      1ull << (SIGCHLD - 1) | 1ull << (SIGPIPE - 1) | 1ull << (SIGALRM - 1);
    DIR *d = opendir("/proc/self/task");
    struct dirent *t;
    uint32_t n = 0;

    if (!d) {
        perror("/proc/self/task");
        exit(1);
    }
    while ((t = readdir(d))) {
        char path[300], line[128];
        unsigned long long blocked = 0;

        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", t->d_name);
        FILE *f = fopen(path, "r");
        bool named = f && fgets(line, sizeof(line), f) && !strncmp(line, prefix, strlen(prefix));
        if (f)
            fclose(f);
        if (!named)
            continue;
        snprintf(path, sizeof(path), "/proc/self/task/%s/status", t->d_name);
        if (!(f = fopen(path, "r"))) {
            perror(path);
            exit(1);
        }
        while (fgets(line, sizeof(line), f))
            sscanf(line, "SigBlk: %llx", &blocked);
        fclose(f);
        if ((blocked & wanted) != wanted) {
            fprintf(stderr, "thread %s (%s) blocks signals %llx only\n", t->d_name, prefix, blocked);
            exit(1);
        }
        n++;
    }
    closedir(d);
    return n;
}

#endif
