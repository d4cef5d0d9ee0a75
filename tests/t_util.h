/* SPDX-License-Identifier: MIT */
/* Test helpers (t_*): exit 0 pass, 1 fail, 77 skip. */
#ifndef T_UTIL_H
#define T_UTIL_H

#include <netdirect/netdirect.h>

#include <arpa/inet.h>
#include <netinet/in.h>
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

/* The loopback adapter (127.0.0.1), which every Linux host has. */
static inline nd_adapter *t_open_loopback(void)
{
    struct sockaddr_in lo = t_ipv4("127.0.0.1", 0);
    nd_adapter *a = NULL;

    CHECK_ST(nd_open_adapter_by_address((struct sockaddr *)&lo, sizeof(lo), &a), ND_SUCCESS);
    return a;
}

#endif
