// SPDX-License-Identifier: MIT
/*
 * An rdma_cm id's address and device, as rdma-core gives them:
 * - a new id has no device (verbs NULL) and no PD;
 * - bound to the wildcard address it still has none, listening too; bound to a loopback
 *   address neither, unless loopback is all the host (or namespace) has, as with kernel rxe
 *   or siw on eth0 against rxe or siw on lo (libfabric's verbs provider relies on it); bound
 *   to another address of this host, or resolved (loopback included), it is on the device,
 *   with the device's default PD in id->pd, so that ibv_create_qp(id->pd, ...) and
 *   rdma_reg_msgs work before rdma_create_qp. Run plain and in a namespace with only lo;
 * - port 0 takes a port at the bind (rdma_get_src_port says which), and nothing else can
 *   take it meanwhile;
 * - an address no interface of this host has is EADDRNOTAVAIL;
 * - rdma_resolve_addr with a port-0 source on an id already bound keeps its binding;
 * - rdma_set_option(RDMA_OPTION_ID_ACK_TIMEOUT) is what ibv_query_qp reports of the id's QP;
 * - the CM's thread (nd-rdmacm), as every library thread, blocks the application's signals.
 */
#include "cm_test.h"
#include "../t_threads.h"

#include <rdma/rdma_verbs.h>
#include <ifaddrs.h>
#include <stdbool.h>
#include <net/if.h>
#include <string.h>

static struct sockaddr_in in4(uint32_t host_order_addr, uint16_t port)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(host_order_addr) };

    return a;
}

static struct rdma_cm_id *new_id(void)
{
    struct rdma_cm_id *id;

    CHECK(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP) == 0);
    CHECK(id->verbs == NULL && id->pd == NULL);
    return id;
}

static void wildcard(void)
{
    struct rdma_cm_id *id = new_id();
    struct sockaddr_in a = in4(INADDR_ANY, 0);

    CHECK(rdma_bind_addr(id, (struct sockaddr *)&a) == 0);
    CHECK(rdma_get_src_port(id) != 0 && id->verbs == NULL);
    CHECK(rdma_listen(id, 1) == 0 && rdma_get_src_port(id) != 0);
    CHECK(rdma_destroy_id(id) == 0);
}

/* An IPv4 address of this host other than loopback, if it has one (port 0). */
static bool host_address_of(struct sockaddr_in *out)
{
    struct ifaddrs *ifs, *i;
    bool found = false;

    CHECK(getifaddrs(&ifs) == 0);
    for (i = ifs; i && !found; i = i->ifa_next)
        if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && !(i->ifa_flags & IFF_LOOPBACK) &&
            (i->ifa_flags & IFF_UP)) {
            memcpy(out, i->ifa_addr, sizeof(*out));
            out->sin_port = 0;
            found = true;
        }
    freeifaddrs(ifs);
    return found;
}

static void check_on_device(struct rdma_cm_id *id);

/* Loopback puts the id on the device only where loopback is all there is. */
static void loopback(void)
{
    struct rdma_cm_id *id = new_id(), *other = new_id();
    struct sockaddr_in a = in4(INADDR_LOOPBACK, 0), any;
    struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
    bool lo_only = !host_address_of(&any);
    uint16_t port;

    CHECK(rdma_bind_addr(id, (struct sockaddr *)&a) == 0);
    port = ntohs(rdma_get_src_port(id));
    CHECK(port != 0);
    if (lo_only)
        check_on_device(id);
    else
        CHECK(id->verbs == NULL && id->pd == NULL);
    /* The port is the id's: another bind to it is refused. */
    a.sin_port = htons(port);
    CHECK(rdma_bind_addr(other, (struct sockaddr *)&a) == -1 && errno == EADDRINUSE);
    CHECK(rdma_listen(id, 1) == 0 && ntohs(rdma_get_src_port(id)) == port && !id->verbs == !lo_only);
    CHECK(rdma_destroy_id(id) == 0 && rdma_destroy_id(other) == 0);
    /* Any 127/8 address and ::1 alike. */
    id = new_id();
    a = in4(0x7f000102u, 0);
    CHECK(rdma_bind_addr(id, (struct sockaddr *)&a) == 0 && !id->verbs == !lo_only);
    CHECK(rdma_destroy_id(id) == 0);
    id = new_id();
    if (rdma_bind_addr(id, (struct sockaddr *)&a6) == 0)
        CHECK(!id->verbs == !lo_only);
    CHECK(rdma_destroy_id(id) == 0);
    printf("loopback: %s\n", lo_only ? "all this namespace has, on the device" : "not on the device");
}

/* An id on the device: its default PD serves ibv_create_qp and rdma_reg_msgs at once. */
static void check_on_device(struct rdma_cm_id *id)
{
    struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC, .cap = { .max_send_wr = 2, .max_recv_wr = 2,
                                                                   .max_send_sge = 1, .max_recv_sge = 1 } };
    static char buf[64];
    struct ibv_mr *mr;

    CHECK(id->verbs && id->pd && id->pd->context == id->verbs);
    CHECK((mr = rdma_reg_msgs(id, buf, sizeof(buf))) != NULL);
    qa.send_cq = qa.recv_cq = ibv_create_cq(id->verbs, 4, NULL, NULL, 0);
    CHECK(qa.send_cq);
    struct ibv_qp *qp = ibv_create_qp(id->pd, &qa);
    CHECK(qp);
    CHECK(ibv_destroy_qp(qp) == 0 && ibv_destroy_cq(qa.send_cq) == 0 && rdma_dereg_mr(mr) == 0);
}

/* Bound to an IPv4 address of this host other than loopback (if it has one). */
static void host_address(void)
{
    struct sockaddr_in a;

    if (!host_address_of(&a)) {
        puts("no IPv4 address but loopback: binding a host address not checked here");
        return;
    }
    struct rdma_cm_id *id = new_id();

    CHECK(rdma_bind_addr(id, (struct sockaddr *)&a) == 0);
    check_on_device(id);
    CHECK(rdma_listen(id, 1) == 0 && id->verbs);
    CHECK(rdma_destroy_id(id) == 0);
}

/* Resolved towards loopback: on the device (the kernel binds loopback to its first device). */
static void resolved_loopback(void)
{
    struct rdma_cm_id *id = new_id();
    struct sockaddr_in dst = in4(INADDR_LOOPBACK, 9);

    CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 1000) == 0);
    check_on_device(id);
    CHECK(rdma_destroy_id(id) == 0);
}

static void not_here(void)
{
    struct rdma_cm_id *id = new_id();
    struct sockaddr_in a = in4(0xc6336477u, 0);   /* 198.51.100.119: no interface of ours */

    CHECK(rdma_bind_addr(id, (struct sockaddr *)&a) == -1 && errno == EADDRNOTAVAIL);
    CHECK(rdma_destroy_id(id) == 0);
}

/* Resolving with a port-0 source keeps the port the id was bound to. */
static void resolve_keeps_binding(void)
{
    struct rdma_cm_id *id = new_id();
    struct sockaddr_in a = in4(INADDR_LOOPBACK, 0), dst = in4(INADDR_LOOPBACK, 9), src = in4(INADDR_LOOPBACK, 0);
    uint16_t port;

    CHECK(rdma_bind_addr(id, (struct sockaddr *)&a) == 0);
    port = ntohs(rdma_get_src_port(id));
    CHECK(rdma_resolve_addr(id, (struct sockaddr *)&src, (struct sockaddr *)&dst, 1000) == 0);
    CHECK(ntohs(rdma_get_src_port(id)) == port && id->verbs);
    CHECK(rdma_destroy_id(id) == 0);
}

static void ack_timeout(void)
{
    struct rdma_cm_id *id = new_id();
    struct sockaddr_in a = in4(INADDR_LOOPBACK, 0);
    struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC, .cap = { .max_send_wr = 2, .max_recv_wr = 2,
                                                                   .max_send_sge = 1, .max_recv_sge = 1 } };
    struct ibv_qp_attr attr;
    struct ibv_qp_init_attr init;
    uint8_t timeout = 18;
    struct sockaddr_in dst = in4(INADDR_LOOPBACK, 9);

    CHECK(rdma_resolve_addr(id, (struct sockaddr *)&a, (struct sockaddr *)&dst, 1000) == 0);
    CHECK(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &timeout, sizeof(timeout)) == 0);
    CHECK(rdma_create_qp(id, NULL, &qa) == 0);
    CHECK(ibv_query_qp(id->qp, &attr, IBV_QP_TIMEOUT, &init) == 0 && attr.timeout == 18);
    timeout = 20;
    CHECK(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &timeout, sizeof(timeout)) == 0);
    CHECK(ibv_query_qp(id->qp, &attr, IBV_QP_TIMEOUT, &init) == 0 && attr.timeout == 20);
    rdma_destroy_qp(id);
    CHECK(rdma_destroy_id(id) == 0);
}

/* The CM's thread exists by now (the ids above started it) and blocks SIGINT, SIGTERM, ... */
static void cm_thread_blocks_signals(void)
{
    CHECK(t_threads_block_signals("nd-rdmacm") == 1);
}

int main(void)
{
    wildcard();
    loopback();
    host_address();
    resolved_loopback();
    not_here();
    resolve_keeps_binding();
    ack_timeout();
    cm_thread_blocks_signals();
    puts("ok");
    return 0;
}
