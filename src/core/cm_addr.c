// SPDX-License-Identifier: MIT
/* Socket addresses as connectors and listeners use them: checks, ports, reservations. */
#include "cm_int.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

uint32_t nd_sockaddr_len(const struct sockaddr *sa)
{
    return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

bool nd_sockaddr_ok(const struct sockaddr *sa, uint32_t len)
{
    return sa && (sa->sa_family == AF_INET || sa->sa_family == AF_INET6) && len >= nd_sockaddr_len(sa);
}

bool nd_sockaddr_is_wildcard(const struct sockaddr *sa)
{
    static const struct in6_addr any6 = IN6ADDR_ANY_INIT;

    if (sa->sa_family == AF_INET)
        return ((const struct sockaddr_in *)sa)->sin_addr.s_addr == htonl(INADDR_ANY);
    return !memcmp(&((const struct sockaddr_in6 *)sa)->sin6_addr, &any6, sizeof(any6));
}

/* The address part of @sa (no port) into @out, zero-padded, for comparison. */
static void address_only(const struct sockaddr *sa, struct sockaddr_storage *out)
{
    memset(out, 0, sizeof(*out));
    out->ss_family = sa->sa_family;
    if (sa->sa_family == AF_INET)
        ((struct sockaddr_in *)out)->sin_addr = ((const struct sockaddr_in *)sa)->sin_addr;
    else
        ((struct sockaddr_in6 *)out)->sin6_addr = ((const struct sockaddr_in6 *)sa)->sin6_addr;
}

int nd_cm_check_local(struct nd_adapter *a, const struct sockaddr *sa, bool wildcard_ok)
{
    struct sockaddr_storage key;
    unsigned ifindex;
    bool seen;

    if (nd_sockaddr_is_wildcard(sa))
        return wildcard_ok ? 0 : -EADDRNOTAVAIL;
    address_only(sa, &key);
    pthread_mutex_lock(&a->lock);
    seen = a->local_seen_ns && nd_now_ns() - a->local_seen_ns < 1000000000ull &&
           !memcmp(&key, &a->local_seen, sizeof(key));
    pthread_mutex_unlock(&a->lock);
    if (seen)
        return 0;
    if (nd_addr_resolve(sa, nd_sockaddr_len(sa), &ifindex) != 0 || (a->ifindex && ifindex != a->ifindex))
        return -EADDRNOTAVAIL;
    pthread_mutex_lock(&a->lock);
    a->local_seen = key;
    a->local_seen_ns = nd_now_ns();
    pthread_mutex_unlock(&a->lock);
    return 0;
}

int nd_cm_reserve_port(const struct sockaddr *sa, struct sockaddr_storage *bound, int *fd_out, bool listener)
{
    int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    socklen_t len = sizeof(*bound);

    if (fd < 0)
        return -ENOBUFS;
    if (sa->sa_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    if (listener)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, sa, nd_sockaddr_len(sa)) < 0) {
        int e = errno;

        close(fd);
        return e == EADDRINUSE ? -EADDRINUSE
               : e == EADDRNOTAVAIL ? -EADDRNOTAVAIL : -EMFILE;
    }
    getsockname(fd, (struct sockaddr *)bound, &len);
    *fd_out = fd;
    return 0;
}

uint16_t nd_sockaddr_port(const struct sockaddr *sa)
{
    return sa->sa_family == AF_INET ? ((const struct sockaddr_in *)sa)->sin_port
                                    : ((const struct sockaddr_in6 *)sa)->sin6_port;
}

void nd_sockaddr_set_port(struct sockaddr_storage *ss, uint16_t port_be)
{
    if (ss->ss_family == AF_INET)
        ((struct sockaddr_in *)ss)->sin_port = port_be;
    else
        ((struct sockaddr_in6 *)ss)->sin6_port = port_be;
}

int nd_sockaddr_copy_out(const struct sockaddr_storage *ss, struct sockaddr *out, uint32_t *len)
{
    uint32_t need = nd_sockaddr_len((const struct sockaddr *)ss);

    if (!len)
        return ND_EARG(2);
    if (!out || *len < need) {
        *len = need;
        return -EOVERFLOW;
    }
    memcpy(out, ss, need);
    *len = need;
    return 0;
}

int nd_adapter_reserve_port(struct nd_adapter *a, const struct sockaddr *want, struct sockaddr_storage *bound,
                                  int *fd)
{
    pthread_mutex_lock(&a->lock);
    for (uint32_t i = 0; i < a->nspare_ports; i++)
        if (nd_sockaddr_same_host((const struct sockaddr *)&a->spare_ports[i].bound, want)) {
            *fd = a->spare_ports[i].fd;
            *bound = a->spare_ports[i].bound;
            a->spare_ports[i] = a->spare_ports[--a->nspare_ports];
            pthread_mutex_unlock(&a->lock);
            return 0;
        }
    pthread_mutex_unlock(&a->lock);
    return nd_cm_reserve_port(want, bound, fd, false);
}

void nd_adapter_release_port(struct nd_adapter *a, int fd, const struct sockaddr_storage *bound)
{
    pthread_mutex_lock(&a->lock);
    if (a->nspare_ports < ND_SPARE_PORTS) {
        a->spare_ports[a->nspare_ports++] = (struct nd_spare_port){ fd, *bound };
        fd = -1;
    }
    pthread_mutex_unlock(&a->lock);
    if (fd >= 0)
        close(fd);
}
