// SPDX-License-Identifier: MIT
/*
 * raw_conn_rate: the socket floor for connection set-up on this host. A forked server
 * accepts and closes; the client connects, waits for the server's close, closes: one
 * connection at a time, as nd_conn runs. --data N: the client sends N bytes, the server
 * answers N bytes, then both close (nd_conn moves 4 KiB each way). --threads N: N clients
 * and N servers at once (processes), as nd_conn -t N.
 *   raw_conn_rate unix|tcp [seconds] [--json] [--data N] [--threads N]
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char buf[1 << 20];

/* All of @n bytes, or -1. */
static int full(int fd, size_t n, int out)
{
    for (size_t done = 0; done < n;) {
        ssize_t r = out ? write(fd, buf + done, n - done) : read(fd, buf + done, n - done);

        if (r <= 0)
            return -1;
        done += (size_t)r;
    }
    return 0;
}

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    int tcp = argc > 1 && !strcmp(argv[1], "tcp"), json = 0;
    double seconds = argc > 2 ? atof(argv[2]) : 2;
    size_t data = 0;
    int threads = 1;

    for (int i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--data") && i + 1 < argc)
            data = (size_t)atol(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = atoi(argv[++i]);
    }
    if (data > sizeof(buf) || threads < 1 || threads > 64)
        return 2;
    struct sockaddr_storage ss;
    socklen_t len;
    int lfd;

    memset(&ss, 0, sizeof(ss));
    if (tcp) {
        struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

        sin->sin_family = AF_INET;
        sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        len = sizeof(*sin);
    } else {
        struct sockaddr_un *un = (struct sockaddr_un *)&ss;

        un->sun_family = AF_UNIX;
        snprintf(un->sun_path + 1, sizeof(un->sun_path) - 1, "raw-conn-rate-%d", (int)getpid());
        len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(un->sun_path + 1));
    }
    lfd = socket(ss.ss_family, SOCK_STREAM, 0);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&ss, len) < 0 || listen(lfd, 128) < 0)
        return 1;
    if (tcp)
        getsockname(lfd, (struct sockaddr *)&ss, &len);
    pid_t servers[64], clients[64];
    int counts[2];

    for (int k = 0; k < threads; k++) {
        if ((servers[k] = fork()) == 0) {
            for (;;) {
                int fd = accept(lfd, NULL, NULL);

                if (fd >= 0 && data && full(fd, data, 0) == 0)
                    full(fd, data, 1);
                if (fd >= 0)
                    close(fd);
            }
        }
    }
    close(lfd);
    if (pipe(counts) < 0)
        return 1;
    for (int k = 0; k < threads; k++) {
        if ((clients[k] = fork()) == 0) {
            unsigned long n = 0;
            double t0 = now();

            while (now() - t0 < seconds) {
                int fd = socket(ss.ss_family, SOCK_STREAM, 0);
                char c;

                if (fd < 0 || connect(fd, (struct sockaddr *)&ss, len) < 0)
                    _exit(1);
                if (data && (full(fd, data, 1) < 0 || full(fd, data, 0) < 0))
                    _exit(1);
                if (read(fd, &c, 1) != 0)    /* the server closed: the connection's whole life is done */
                    _exit(1);
                close(fd);
                n++;
            }
            _exit(write(counts[1], &n, sizeof(n)) == sizeof(n) ? 0 : 1);
        }
    }
    unsigned long n = 0;
    double t0 = now(), t;
    int failed = 0;

    for (int k = 0; k < threads; k++) {
        unsigned long one;
        int status;

        if (read(counts[0], &one, sizeof(one)) == sizeof(one))
            n += one;
        if (waitpid(clients[k], &status, 0) != clients[k] || !WIFEXITED(status) || WEXITSTATUS(status))
            failed = 1;
    }
    t = now() - t0;
    if (t < seconds)
        t = seconds;
    for (int k = 0; k < threads; k++) {
        kill(servers[k], SIGKILL);
        waitpid(servers[k], NULL, 0);
    }
    if (failed)
        return 1;
    if (json)
        printf("{\"kind\":\"%s\",\"data\":%zu,\"threads\":%d,\"connections\":%lu,\"seconds\":%.3f,"
               "\"per_second\":%.0f}\n", tcp ? "tcp" : "unix", data, threads, n, t, n / t);
    else
        printf("raw %s connect/accept/close (%d at once): %lu in %.2f s: %.0f/s\n", tcp ? "tcp" : "unix", threads,
               n, t, n / t);
    return 0;
}
