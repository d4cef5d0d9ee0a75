// SPDX-License-Identifier: MIT
/* Completion port: FIFO, timeouts, nd_port_fd with epoll, wake-up of a blocked waiter. */
#include "t_util.h"

#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <time.h>

static nd_overlapped late;
static int wake_pipe[2];

static void *poster(void *arg)
{
    char c;

    /* Post only once the main thread says it is about to block. */
    CHECK(read(wake_pipe[0], &c, 1) == 1);
    CHECK_ST(nd_port_post(arg, &late, ND_SUCCESS, 99), ND_SUCCESS);
    return NULL;
}

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(void)
{
    nd_overlapped ov[100], *got;
    struct epoll_event ev = { .events = EPOLLIN };
    nd_port *port;
    pthread_t t;
    int ep;

    CHECK_ST(nd_port_create(NULL), ND_INVALID_PARAMETER_1);
    CHECK_ST(nd_port_create(&port), ND_SUCCESS);
    CHECK(nd_port_fd(port) >= 0 && nd_port_fd(NULL) == -1);
    CHECK_ST(nd_port_wait(port, 0, &got), ND_TIMEOUT);
    CHECK_ST(nd_port_wait(port, 0, NULL), ND_INVALID_PARAMETER_3);
    CHECK_ST(nd_port_wait(NULL, 0, &got), ND_INVALID_PARAMETER_1);
    CHECK_ST(nd_port_post(port, NULL, ND_SUCCESS, 0), ND_INVALID_PARAMETER_2);

    /* A bounded wait returns ND_TIMEOUT after about the timeout. */
    double t0 = now_ms();
    CHECK_ST(nd_port_wait(port, 50, &got), ND_TIMEOUT);
    double waited = now_ms() - t0;
    CHECK(waited >= 45);

    /* The port fd works in the application's own epoll set, level-style. */
    ep = epoll_create1(0);
    CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, nd_port_fd(port), &ev) == 0);
    CHECK(epoll_wait(ep, &ev, 1, 0) == 0);
    /* Whatever status a program posts comes back as it was: ND's own, and values ND never
     * names (a customer code, an unknown warning), which the core carries untouched. */
    static const nd_status posted[] = { ND_SUCCESS, ND_CANCELED, (nd_status)0x20000001u, (nd_status)0x80000123u,
                                        ND_INVALID_PARAMETER_3, ND_UNSUCCESSFUL, ND_TIMEOUT, ND_REMOTE_ERROR };
#define POSTED(i) posted[(i) % (int)(sizeof(posted) / sizeof(posted[0]))]
    for (int i = 0; i < 100; i++)
        CHECK_ST(nd_port_post(port, &ov[i], POSTED(i), (uint64_t)i), ND_SUCCESS);
    for (int i = 0; i < 100; i++) {
        CHECK(epoll_wait(ep, &ev, 1, 0) == 1);   /* readable while anything is queued */
        CHECK_ST(nd_port_wait(port, 0, &got), ND_SUCCESS);
        CHECK(got == &ov[i]);                    /* FIFO */
        CHECK(got->bytes == (uint64_t)i && got->status == POSTED(i));
        CHECK_ST(nd_get_overlapped_result(got, 0), got->status);
    }
    CHECK(epoll_wait(ep, &ev, 1, 0) == 0);
    CHECK_ST(nd_port_wait(port, 0, &got), ND_TIMEOUT);

    /* A waiter blocked forever is woken by a post from another thread. */
    CHECK(pipe(wake_pipe) == 0);
    CHECK(pthread_create(&t, NULL, poster, port) == 0);
    CHECK(write(wake_pipe[1], "x", 1) == 1);
    CHECK_ST(nd_port_wait(port, ND_INFINITE, &got), ND_SUCCESS);
    CHECK(got == &late && got->bytes == 99);
    pthread_join(t, NULL);

    close(ep);
    CHECK_ST(nd_port_close(port), ND_SUCCESS);
    CHECK_ST(nd_port_close(NULL), ND_INVALID_HANDLE);
    printf("port ok (50 ms timeout waited %.1f ms)\n", waited);
    return 0;
}
