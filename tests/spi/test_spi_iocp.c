// SPDX-License-Identifier: MIT
/*
 * A completion port's packets go to the threads already waiting on it, in the order they
 * came, never to a thread that arrives later (Windows' rule, which ndconn's teardown counts
 * on: one NULL packet per worker, then the main thread waits for a CQ's cancel packet).
 * Four threads wait; the main thread posts four NULL packets and a marker and waits
 * itself: it must get the marker, each worker a NULL. Also a timed wait behind a waiter
 * that holds the port times out, and the line moves on.
 */
#include <ndspi/ndsupport.h>

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #c); exit(1); } } while (0)
#define WORKERS 4

static HANDLE port;
static OVERLAPPED marker;
static pid_t tids[WORKERS];
static OVERLAPPED *got[WORKERS];

static void *worker(void *arg)
{
    int i = (int)(intptr_t)arg;
    DWORD bytes;
    ULONG_PTR key;

    __atomic_store_n(&tids[i], (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
    CHECK(GetQueuedCompletionStatus(port, &bytes, &key, &got[i], INFINITE));
    return NULL;
}

/* Thread @tid sleeps in the kernel, seen twice a while apart: it is waiting in line. */
static bool asleep(pid_t tid)
{
    char path[64], buf[256];

    snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    return p && p[1] == ' ' && p[2] == 'S';
}

static void wait_asleep(pid_t tid)
{
    for (int i = 0, seen = 0; i < 10000000; i++) {
        seen = asleep(tid) ? seen + 1 : 0;
        if (seen == 100)
            return;
        sched_yield();
    }
    fprintf(stderr, "a worker never went to sleep\n");
    exit(1);
}

int main(void)
{
    pthread_t th[WORKERS];
    DWORD bytes;
    ULONG_PTR key;
    OVERLAPPED *ov;

    port = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 0);
    CHECK(port != NULL);
    for (int i = 0; i < WORKERS; i++) {
        CHECK(pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i) == 0);
        while (!__atomic_load_n(&tids[i], __ATOMIC_ACQUIRE))
            sched_yield();
        wait_asleep(tids[i]);
    }
    for (int i = 0; i < WORKERS; i++)
        CHECK(PostQueuedCompletionStatus(port, 0, 0, NULL));
    CHECK(PostQueuedCompletionStatus(port, 7, 9, &marker));
    CHECK(GetQueuedCompletionStatus(port, &bytes, &key, &ov, INFINITE));
    CHECK(ov == &marker && bytes == 7 && key == 9);
    for (int i = 0; i < WORKERS; i++) {
        CHECK(pthread_join(th[i], NULL) == 0);
        CHECK(got[i] == NULL);
    }
    /* Nothing posted: a timed wait times out (WAIT_TIMEOUT), and so does the next. */
    CHECK(!GetQueuedCompletionStatus(port, &bytes, &key, &ov, 20) && ov == NULL && GetLastError() == WAIT_TIMEOUT);
    CHECK(!GetQueuedCompletionStatus(port, &bytes, &key, &ov, 0) && ov == NULL);
    CloseHandle(port);
    puts("completion port packets go to the waiting threads first");
    return 0;
}
