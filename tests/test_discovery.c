// SPDX-License-Identifier: MIT
/* Address discovery: size probe, loopback IPv4/IPv6, bad family, unknown address, adapter ids. */
#include "t_util.h"

static int list_has(const nd_address_list *l, const struct sockaddr *want)
{
    for (int i = 0; i < l->address_count; i++) {
        const struct sockaddr *sa = l->address[i].sockaddr;

        if (sa->sa_family != want->sa_family)
            continue;
        if (sa->sa_family == AF_INET &&
            ((const struct sockaddr_in *)sa)->sin_addr.s_addr == ((const struct sockaddr_in *)want)->sin_addr.s_addr)
            return 1;
        if (sa->sa_family == AF_INET6 &&
            !memcmp(&((const struct sockaddr_in6 *)sa)->sin6_addr, &((const struct sockaddr_in6 *)want)->sin6_addr, 16))
            return 1;
    }
    return 0;
}

int main(void)
{
    struct sockaddr_in lo = t_ipv4("127.0.0.1", 4242), other_lo = t_ipv4("127.0.0.2", 0);
    struct sockaddr_in absent = t_ipv4("203.0.113.77", 0), any = t_ipv4("0.0.0.0", 0);
    struct sockaddr_in6 lo6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
    struct sockaddr bad = { .sa_family = AF_UNIX };
    uint32_t size = 0, small;
    uint64_t id = 0, id2 = 0;
    nd_address_list *list;
    nd_adapter *a;

    /* Size probe: NULL list. */
    CHECK_ST(nd_query_address_list(NULL, &size), ND_BUFFER_OVERFLOW);
    CHECK(size >= sizeof(nd_address_list));
    CHECK_ST(nd_query_address_list(NULL, NULL), ND_INVALID_PARAMETER_2);
    list = malloc(size);
    /* Too small: overflow, buffer untouched. */
    memset(list, 0xab, size);
    small = size - 1;
    CHECK_ST(nd_query_address_list(list, &small), ND_BUFFER_OVERFLOW);
    CHECK(small == size && ((unsigned char *)list)[0] == 0xab);
    CHECK_ST(nd_query_address_list(list, &size), ND_SUCCESS);
    CHECK(list->address_count >= 1);
    CHECK(list_has(list, (struct sockaddr *)&lo));
    for (int i = 0; i < list->address_count; i++) {
        uint64_t aid;

        CHECK((uint8_t *)list->address[i].sockaddr > (uint8_t *)list);
        CHECK((uint8_t *)list->address[i].sockaddr + list->address[i].sockaddr_length <= (uint8_t *)list + size);
        /* Every listed address resolves and opens. */
        CHECK_ST(nd_resolve_address(list->address[i].sockaddr, (uint32_t)list->address[i].sockaddr_length, &aid),
                 ND_SUCCESS);
        CHECK_ST(nd_open_adapter(aid, &a), ND_SUCCESS);
        CHECK_ST(nd_adapter_close(a), ND_SUCCESS);
    }

    CHECK_ST(nd_resolve_address((struct sockaddr *)&lo, sizeof(lo), &id), ND_SUCCESS);
    CHECK_ST(nd_resolve_address((struct sockaddr *)&other_lo, sizeof(other_lo), &id2), ND_SUCCESS);
    CHECK(id == id2);   /* all of 127/8 is the loopback adapter */
    if (list_has(list, (struct sockaddr *)&lo6)) {
        CHECK_ST(nd_resolve_address((struct sockaddr *)&lo6, sizeof(lo6), &id2), ND_SUCCESS);
        CHECK(id == id2);   /* ::1 is on the same interface */
    }
    CHECK_ST(nd_resolve_address((struct sockaddr *)&absent, sizeof(absent), &id2), ND_INVALID_ADDRESS);
    CHECK_ST(nd_resolve_address((struct sockaddr *)&any, sizeof(any), &id2), ND_INVALID_ADDRESS);
    CHECK_ST(nd_resolve_address(&bad, sizeof(bad), &id2), ND_INVALID_PARAMETER_1);
    CHECK_ST(nd_resolve_address(NULL, 16, &id2), ND_INVALID_PARAMETER_1);
    CHECK_ST(nd_resolve_address((struct sockaddr *)&lo, 4, &id2), ND_INVALID_BUFFER_SIZE);
    CHECK_ST(nd_resolve_address((struct sockaddr *)&lo6, sizeof(struct sockaddr_in), &id2), ND_INVALID_BUFFER_SIZE);
    CHECK_ST(nd_resolve_address((struct sockaddr *)&lo, sizeof(lo), NULL), ND_INVALID_PARAMETER_3);

    CHECK_ST(nd_open_adapter(id, &a), ND_SUCCESS);
    CHECK_ST(nd_adapter_close(a), ND_SUCCESS);
    CHECK_ST(nd_open_adapter(0x1234, &a), ND_INVALID_PARAMETER);
    CHECK_ST(nd_open_adapter(id | 0xffff0000u, &a), ND_INVALID_PARAMETER);
    CHECK_ST(nd_open_adapter_by_address((struct sockaddr *)&absent, sizeof(absent), &a), ND_INVALID_ADDRESS);

    /* The adapter lists only its own addresses, loopback among them. */
    nd_adapter *lo_adapter = t_open_loopback();
    uint32_t asize = 0;
    CHECK_ST(nd_adapter_query_address_list(lo_adapter, NULL, &asize), ND_BUFFER_OVERFLOW);
    nd_address_list *alist = malloc(asize);
    CHECK_ST(nd_adapter_query_address_list(lo_adapter, alist, &asize), ND_SUCCESS);
    CHECK(list_has(alist, (struct sockaddr *)&lo) && alist->address_count <= list->address_count);
    CHECK_ST(nd_adapter_close(lo_adapter), ND_SUCCESS);
    CHECK_ST(nd_adapter_close(NULL), ND_INVALID_HANDLE);
    free(alist);
    free(list);
    puts("discovery ok");
    return 0;
}
