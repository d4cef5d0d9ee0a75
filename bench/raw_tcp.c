// SPDX-License-Identifier: MIT
/*
 * The floor for iwarp over loopback: two processes on one TCP connection (127.0.0.1),
 * TCP_NODELAY, non-blocking sockets.
 *   raw_tcp pingpong [-S size] [-i iterations] [-b]   busy-polling recv(), half round trip;
 *                                                    -b: blocking sockets (sleep in recv)
 *   raw_tcp stream [-S size] [-t seconds]          one direction, bytes/s
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
    while ((opt = getopt(argc, argv, "S:i:t:b")) != -1) {
        if (opt == 'S')
            size = strtoul(optarg, NULL, 0);
        else if (opt == 'i')
            iters = strtol(optarg, NULL, 0);
        else if (opt == 't')
            secs = strtod(optarg, NULL);
        else if (opt == 'b')
            blocking = 1;
    }
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
                spin_io(b, buf, size, 0);
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
            spin_io(a, buf, size, 0);
        }
        double t0 = now_s();
        for (long i = iters / 10; i < iters; i++) {
            spin_io(a, buf, size, 1);
            spin_io(a, buf, size, 0);
        }
        double t = now_s() - t0;
        printf("{\"test\":\"raw_tcp_pingpong\",\"size\":%zu,\"half_rtt_us\":%.3f}\n", size,
               t / (double)(iters - iters / 10) / 2 * 1e6);
    }
    waitpid(pid, NULL, 0);
    return 0;
}
