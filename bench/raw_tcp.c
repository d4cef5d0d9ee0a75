// SPDX-License-Identifier: MIT
/*
 * The floor for iwarp over loopback: two processes on one TCP connection (127.0.0.1),
 * TCP_NODELAY, non-blocking sockets.
 *   raw_tcp pingpong [-S size] [-i iterations] [-b]   busy-polling recv(), half round trip;
 *                                                    -b: blocking sockets (sleep in recv)
 *   raw_tcp stream [-S size] [-t seconds]          one direction, bytes/s
 * -P N (pingpong): after each message in, both sides load N cache lines one after another
 * (each address read from the line before), each line on a page of its own; with -L the
 * same N lines lie in two pages. The difference prices what a page first touched after a
 * system call costs on this machine (a TLB refill when system calls flush the TLB), the
 * cost a library's receive-to-send path pays once per page of code and data it touches.
 * Prints one line of JSON.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void spin_io(int fd, void *buf, size_t n, int out)
{
    size_t done = 0;

    while (done < n) {
        ssize_t r = out ? send(fd, (char *)buf + done, n - done, MSG_NOSIGNAL) : recv(fd, (char *)buf + done, n - done, 0);

        if (r > 0)
            done += (size_t)r;
        else if (r == 0 || (errno != EAGAIN && errno != EINTR))
            exit(1);
    }
}

static int blocking;
static long chase_lines;            /* -P */
static int chase_dense;             /* -L */
static void *chase_head;
static volatile uintptr_t chase_sink;

/* Where line @at of the chain lies: on a page of its own, or (-L) packed into two pages. */
static char *chase_line(char *area, long at)
{
    if (chase_dense)
        return area + (size_t)(at % 2) * 4096 + (size_t)(at / 2) * 64;
    return area + (size_t)at * 4096 + (size_t)(at % 64) * 64;
}

/* A cyclic chain of @chase_lines cache lines in a shuffled order: each load waits for the
 * one before it, as a program's path from one structure to the next does. */
static void chase_build(void)
{
    size_t bytes = (size_t)(chase_dense ? 2 : chase_lines) * 4096;
    char *area = aligned_alloc(4096, bytes);
    long order[128] = { 0 };

    if (!area)
        exit(1);
    memset(area, 0, bytes);
    for (long i = 0; i < chase_lines; i++)
        order[i] = i;
    srand(1);
    for (long i = chase_lines - 1; i > 0; i--) {
        long j = rand() % (i + 1), t = order[i];

        order[i] = order[j];
        order[j] = t;
    }
    for (long i = 0; i < chase_lines; i++)
        *(void **)chase_line(area, order[i]) = chase_line(area, order[(i + 1) % chase_lines]);
    chase_head = chase_line(area, order[0]);
}

static void chase(void)
{
    void *p = chase_head;

    for (long i = 0; i < chase_lines; i++)
        p = *(void **)p;
    chase_sink = (uintptr_t)p;
}

static void receive(int fd, void *buf, size_t n)
{
    spin_io(fd, buf, n, 0);
    if (chase_lines)
        chase();
}

static void pair(int *a, int *b)
{
    struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(sin);
    int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;

    if (l < 0 || bind(l, (struct sockaddr *)&sin, sizeof(sin)) || listen(l, 1) ||
        getsockname(l, (struct sockaddr *)&sin, &len))
        exit(1);
    *a = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(*a, (struct sockaddr *)&sin, sizeof(sin)) || (*b = accept(l, NULL, NULL)) < 0)
        exit(1);
    close(l);
    setsockopt(*a, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(*b, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (!blocking) {
        fcntl(*a, F_SETFL, O_NONBLOCK);
        fcntl(*b, F_SETFL, O_NONBLOCK);
    }
}

int main(int argc, char **argv)
{
    size_t size = 8;
    long iters = 100000;
    double secs = 2;
    int a, b, opt;
    pid_t pid;
    char *buf;
    const char *mode = argc > 1 ? argv[1] : "pingpong";

    optind = 2;
    while ((opt = getopt(argc, argv, "S:i:t:bP:L")) != -1) {
        if (opt == 'S')
            size = strtoul(optarg, NULL, 0);
        else if (opt == 'i')
            iters = strtol(optarg, NULL, 0);
        else if (opt == 't')
            secs = strtod(optarg, NULL);
        else if (opt == 'b')
            blocking = 1;
        else if (opt == 'P')
            chase_lines = strtol(optarg, NULL, 0);
        else if (opt == 'L')
            chase_dense = 1;
    }
    if (chase_lines < 0 || chase_lines > 128 || (chase_dense && !chase_lines))
        return 2;   /* -L packs the lines into two pages of 64: at most 128 */
    if (chase_lines)
        chase_build();
    buf = calloc(1, size);
    pair(&a, &b);
    pid = fork();
    if (pid == 0) {
        close(a);
        if (!strcmp(mode, "stream")) {
            while (recv(b, buf, size, 0) != 0)
                ;
        } else {
            for (long i = 0; i < iters; i++) {
                receive(b, buf, size);
                spin_io(b, buf, size, 1);
            }
        }
        _exit(0);
    }
    close(b);
    if (!strcmp(mode, "stream")) {
        double t0 = now_s(), t;
        uint64_t bytes = 0;

        while ((t = now_s()) - t0 < secs) {
            spin_io(a, buf, size, 1);
            bytes += size;
        }
        printf("{\"test\":\"raw_tcp_stream\",\"size\":%zu,\"bytes_per_s\":%.0f}\n", size, (double)bytes / (t - t0));
        shutdown(a, SHUT_WR);
    } else {
        for (long i = 0; i < iters / 10; i++) {     /* warm-up is part of the count: time the rest */
            spin_io(a, buf, size, 1);
            receive(a, buf, size);
        }
        double t0 = now_s();
        for (long i = iters / 10; i < iters; i++) {
            spin_io(a, buf, size, 1);
            receive(a, buf, size);
        }
        double t = now_s() - t0;
        printf("{\"test\":\"raw_tcp_pingpong\",\"size\":%zu,\"chase_lines\":%ld,\"chase_pages\":%ld,\"half_rtt_us\":%.3f}\n",
               size, chase_lines, chase_dense ? 2 : chase_lines, t / (double)(iters - iters / 10) / 2 * 1e6);
    }
    waitpid(pid, NULL, 0);
    return 0;
}
