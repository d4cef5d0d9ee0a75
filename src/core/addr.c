// SPDX-License-Identifier: MIT
/* Address discovery: adapters are network interfaces; an adapter serves its interface's addresses. */
#include "core.h"
#include "log.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#define ADAPTER_ID_BASE 0x4e44000000000000ull   /* "ND" in the top bytes, ifindex below */

uint64_t nd_adapter_id_for_ifindex(unsigned ifindex)
{
    return ADAPTER_ID_BASE | ifindex;
}

bool nd_ifindex_exists(unsigned ifindex)
{
    char name[IF_NAMESIZE];

    return ifindex != 0 && if_indextoname(ifindex, name) != NULL;
}

static size_t sockaddr_len(int family)
{
    return family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
}

static bool usable(const struct ifaddrs *ifa)
{
    return ifa->ifa_addr && (ifa->ifa_flags & IFF_UP) &&
           (ifa->ifa_addr->sa_family == AF_INET || ifa->ifa_addr->sa_family == AF_INET6);
}

static size_t align8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

int nd_addr_list(unsigned ifindex_filter, nd_address_list *list, uint32_t *size)
{
    struct ifaddrs *ifs, *ifa;
    size_t need, count = 0, addr_bytes = 0;
    uint8_t *cursor;

    if (!size)
        return ND_EARG(2);
    if (getifaddrs(&ifs) < 0)
        return -ENOBUFS;
    for (ifa = ifs; ifa; ifa = ifa->ifa_next)
        if (usable(ifa) && (!ifindex_filter || if_nametoindex(ifa->ifa_name) == ifindex_filter)) {
            count++;
            addr_bytes += align8(sockaddr_len(ifa->ifa_addr->sa_family));
        }
    need = align8(offsetof(nd_address_list, address) + count * sizeof(nd_socket_address)) + addr_bytes;
    if (!list || *size < need) {
        *size = (uint32_t)need;
        freeifaddrs(ifs);
        return -EOVERFLOW;
    }
    cursor = (uint8_t *)list + align8(offsetof(nd_address_list, address) + count * sizeof(nd_socket_address));
    list->address_count = 0;
    for (ifa = ifs; ifa; ifa = ifa->ifa_next) {
        size_t len;

        if (!usable(ifa) || (ifindex_filter && if_nametoindex(ifa->ifa_name) != ifindex_filter))
            continue;
        len = sockaddr_len(ifa->ifa_addr->sa_family);
        memcpy(cursor, ifa->ifa_addr, len);
        list->address[list->address_count].sockaddr = (struct sockaddr *)cursor;
        list->address[list->address_count].sockaddr_length = (int32_t)len;
        list->address_count++;
        cursor += align8(len);
    }
    *size = (uint32_t)need;
    freeifaddrs(ifs);
    return 0;
}

bool nd_sockaddr_same_host(const struct sockaddr *a, const struct sockaddr *b)
{
    if (a->sa_family != b->sa_family)
        return false;
    if (a->sa_family == AF_INET)
        return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
               ((const struct sockaddr_in *)b)->sin_addr.s_addr;
    const struct sockaddr_in6 *x = (const struct sockaddr_in6 *)a, *y = (const struct sockaddr_in6 *)b;
    return !memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr)) &&
           (!x->sin6_scope_id || !y->sin6_scope_id || x->sin6_scope_id == y->sin6_scope_id);
}

int nd_addr_resolve(const struct sockaddr *addr, uint32_t len, unsigned *ifindex)
{
    struct ifaddrs *ifs, *ifa;
    int st = -EADDRNOTAVAIL;

    if (!addr || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
        return ND_EARG(1);
    if (len < sockaddr_len(addr->sa_family))
        return -ERANGE;
    if (getifaddrs(&ifs) < 0)
        return -ENOBUFS;
    for (ifa = ifs; ifa; ifa = ifa->ifa_next)
        if (usable(ifa) && nd_sockaddr_same_host(ifa->ifa_addr, addr)) {
            *ifindex = if_nametoindex(ifa->ifa_name);
            st = *ifindex ? 0 : -EADDRNOTAVAIL;
            break;
        }
    /* Linux delivers all of 127.0.0.0/8 locally, through the loopback interface. */
    if (st != 0 && addr->sa_family == AF_INET &&
        (ntohl(((const struct sockaddr_in *)addr)->sin_addr.s_addr) >> 24) == 127) {
        for (ifa = ifs; ifa; ifa = ifa->ifa_next)
            if (usable(ifa) && (ifa->ifa_flags & IFF_LOOPBACK)) {
                *ifindex = if_nametoindex(ifa->ifa_name);
                st = 0;
                break;
            }
    }
    freeifaddrs(ifs);
    if (st == -EADDRNOTAVAIL)
        nd_log(ND_LOG_DEBUG, ND_SUB_ADDR, "address not served by any local interface");
    return st;
}

ND_DOOR int ndc_query_address_list(nd_address_list *list, uint32_t *size)
{
    return nd_addr_list(0, list, size);
}

ND_DOOR int ndc_resolve_address(const struct sockaddr *addr, uint32_t addr_len, uint64_t *adapter_id)
{
    unsigned ifindex;
    int st;

    if (!adapter_id)
        return ND_EARG(3);
    st = nd_addr_resolve(addr, addr_len, &ifindex);
    if (st == 0)
        *adapter_id = nd_adapter_id_for_ifindex(ifindex);
    return st;
}
