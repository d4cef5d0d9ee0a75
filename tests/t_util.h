/* SPDX-License-Identifier: MIT */
/* Test helpers (t_*): exit 0 pass, 1 fail, 77 skip. */
#ifndef T_UTIL_H
#define T_UTIL_H

#include <netdirect/netdirect.h>

#include <arpa/inet.h>
#include <execinfo.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define T_SKIP 77

#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);   \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

/* Evaluate @expr once and require status @want, naming both on failure. */
#define CHECK_ST(expr, want)                                                           \
    do {                                                                               \
        nd_status got_ = (expr), want_ = (want);                                       \
        if (got_ != want_) {                                                           \
            fprintf(stderr, "%s:%d: %s returned %s (0x%08x), expected %s (0x%08x)\n",  \
                    __FILE__, __LINE__, #expr, nd_strerror(got_), (unsigned)got_,      \
                    nd_strerror(want_), (unsigned)want_);                              \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

static inline struct sockaddr_in t_ipv4(const char *ip, uint16_t port)
{
    struct sockaddr_in sin;

    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_port = htons(port);
    inet_pton(AF_INET, ip, &sin.sin_addr);
    return sin;
}

/*
 * Where this process and its peer live. By default both on loopback. The namespace run
 * (tests/netns_run.sh) puts the test in one network namespace with ND_TEST_ADDR and
 * ND_TEST_PEER_ADDR set, and names in ND_TEST_CHILD_NETNS the other namespace, which
 * every forked peer enters (t_become_child_side) with the two addresses swapped.
 */
static inline const char *t_env_ip(const char *name)
{
    const char *v = getenv(name);

    return v && *v ? v : "127.0.0.1";
}
static inline const char *t_my_ip(void) { return t_env_ip("ND_TEST_ADDR"); }
static inline const char *t_peer_ip(void) { return t_env_ip("ND_TEST_PEER_ADDR"); }

/* In a forked peer, before it opens anything: move to the peer's namespace, if any. */
static inline void t_become_child_side(void)
{
    const char *ns = getenv("ND_TEST_CHILD_NETNS");
    char me[64], peer[64];
    int fd;

    if (!ns || !*ns)
        return;
    fd = open(ns, O_RDONLY | O_CLOEXEC);
    CHECK(fd >= 0 && setns(fd, CLONE_NEWNET) == 0);
    close(fd);
    snprintf(me, sizeof(me), "%s", t_my_ip());
    snprintf(peer, sizeof(peer), "%s", t_peer_ip());
    CHECK(setenv("ND_TEST_ADDR", peer, 1) == 0 && setenv("ND_TEST_PEER_ADDR", me, 1) == 0);
}

/* The adapter of this side's address (loopback unless a namespace run says otherwise). */
static inline nd_adapter *t_open_loopback(void)
{
    struct sockaddr_in lo = t_ipv4(t_my_ip(), 0);
    nd_adapter *a = NULL;

    CHECK_ST(nd_open_adapter_by_address((struct sockaddr *)&lo, sizeof(lo), &a), ND_SUCCESS);
    return a;
}

/*
 * A hang becomes a failure that says where: after @seconds this process prints @what and
 * its stack to stderr and aborts. ctest's own timeout would only say "Timeout". Call it in
 * each process (a pending alarm does not survive fork); 0 cancels.
 */
static const char *t_watchdog_what;

static inline void t_watchdog_fire(int sig)
{
    void *frames[32];
    int n = backtrace(frames, 32);

    (void)sig;
    fprintf(stderr, "watchdog: pid %d still in \"%s\"\n", (int)getpid(), t_watchdog_what);
    backtrace_symbols_fd(frames, n, 2);
    abort();
}

static inline void t_watchdog(unsigned seconds, const char *what)
{
    t_watchdog_what = what;
    signal(SIGALRM, t_watchdog_fire);
    alarm(seconds);
}

#endif
