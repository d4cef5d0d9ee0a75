// SPDX-License-Identifier: MIT
/*
 * rdma_getaddrinfo, the synchronous endpoints (rdma_create_ep, rdma_get_request), address
 * accessors and options; and the entry points the target programs import that this CM
 * does not serve (multicast; rsockets but rpoll, in rsocket_absent.c); SRQs made through the
 * CM; ECE, which this CM does not carry.
 */
#include "cma_int.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <rdma/rdma_verbs.h>
#include <rdma/rsocket.h>
#include <stdlib.h>
#include <string.h>

static struct rdma_addrinfo *one_info(const struct addrinfo *ai, bool passive)
{
    struct rdma_addrinfo *r = calloc(1, sizeof(*r));
    struct sockaddr *sa = malloc(ai->ai_addrlen);

    if (!r || !sa) {
        free(r);
        free(sa);
        return NULL;
    }
    memcpy(sa, ai->ai_addr, ai->ai_addrlen);
    r->ai_flags = passive ? RAI_PASSIVE : 0;
    r->ai_family = ai->ai_family;
    r->ai_qp_type = IBV_QPT_RC;
    r->ai_port_space = RDMA_PS_TCP;
    if (passive) {
        r->ai_src_addr = sa;
        r->ai_src_len = ai->ai_addrlen;
    } else {
        r->ai_dst_addr = sa;
        r->ai_dst_len = ai->ai_addrlen;
    }
    return r;
}

CM_API void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
    while (res) {
        struct rdma_addrinfo *next = res->ai_next;

        free(res->ai_src_addr);
        free(res->ai_dst_addr);
        free(res->ai_src_canonname);
        free(res->ai_dst_canonname);
        free(res->ai_route);
        free(res->ai_connect);
        free(res);
        res = next;
    }
}

static struct sockaddr *sa_dup(const struct sockaddr *sa, socklen_t len)
{
    struct sockaddr *c = sa && len ? malloc(len) : NULL;

    if (c)
        memcpy(c, sa, len);
    return c;
}

/* The hints' source address, where the answer has none (rdma-core's rule: libfabric asks for
 * a destination by name and gives the source it will bind). */
static int src_from_hints(struct rdma_addrinfo *r, const struct rdma_addrinfo *hints)
{
    if (r->ai_src_len || !hints || !hints->ai_src_addr || !hints->ai_src_len)
        return 0;
    r->ai_src_addr = sa_dup(hints->ai_src_addr, hints->ai_src_len);
    if (!r->ai_src_addr)
        return cm_fail(ENOMEM);
    r->ai_src_len = hints->ai_src_len;
    return 0;
}

/* No name or service: the hints are the answer, addresses or none (libfabric asks so, and
 * then falls back on the device's own addresses). */
static int info_from_hints(const struct rdma_addrinfo *hints, struct rdma_addrinfo **res)
{
    struct rdma_addrinfo *r;

    if (!hints)
        return cm_fail(EINVAL);
    r = calloc(1, sizeof(*r));
    if (!r)
        return cm_fail(ENOMEM);
    r->ai_flags = hints->ai_flags;
    r->ai_family = hints->ai_family;
    r->ai_qp_type = hints->ai_qp_type;
    r->ai_port_space = hints->ai_port_space;
    r->ai_dst_addr = sa_dup(hints->ai_dst_addr, hints->ai_dst_len);
    r->ai_dst_len = r->ai_dst_addr ? hints->ai_dst_len : 0;
    if ((hints->ai_dst_addr && hints->ai_dst_len && !r->ai_dst_addr) || src_from_hints(r, hints) < 0) {
        rdma_freeaddrinfo(r);
        return cm_fail(ENOMEM);
    }
    *res = r;
    return 0;
}

CM_API int rdma_getaddrinfo(const char *node, const char *service, const struct rdma_addrinfo *hints,
                            struct rdma_addrinfo **res)
{
    struct addrinfo h = { .ai_socktype = SOCK_STREAM }, *ais, *ai;
    struct rdma_addrinfo *head = NULL, **tail = &head;
    bool passive = hints && (hints->ai_flags & RAI_PASSIVE);
    int rc;

    if (!res)
        return cm_fail(EINVAL);
    if (!node && !service)
        return info_from_hints(hints, res);
    if (hints) {
        if (hints->ai_qp_type && hints->ai_qp_type != IBV_QPT_RC)
            return cm_fail(EOPNOTSUPP);
        h.ai_family = hints->ai_family;
        h.ai_flags = (passive ? AI_PASSIVE : 0) | ((hints->ai_flags & RAI_NUMERICHOST) ? AI_NUMERICHOST : 0);
    }
    rc = getaddrinfo(node, service, &h, &ais);
    if (rc)
        return cm_fail(rc == EAI_SYSTEM ? errno : rc == EAI_MEMORY ? ENOMEM : ENOENT);
    for (ai = ais; ai; ai = ai->ai_next) {
        struct rdma_addrinfo *r;

        if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
            continue;
        r = one_info(ai, passive);
        if (r && src_from_hints(r, hints) < 0) {
            rdma_freeaddrinfo(r);
            r = NULL;
        }
        if (!r) {
            freeaddrinfo(ais);
            rdma_freeaddrinfo(head);
            return cm_fail(ENOMEM);
        }
        *tail = r;
        tail = &r->ai_next;
    }
    freeaddrinfo(ais);
    if (!head)
        return cm_fail(ENOENT);
    *res = head;
    return 0;
}

CM_API int rdma_create_ep(struct rdma_cm_id **out, struct rdma_addrinfo *res, struct ibv_pd *pd,
                          struct ibv_qp_init_attr *qp_attr)
{
    struct rdma_cm_id *id;

    if (!out || !res)
        return cm_fail(EINVAL);
    if (rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP) < 0)
        return -1;
    if ((res->ai_flags & RAI_PASSIVE) ? rdma_bind_addr(id, res->ai_src_addr) < 0
                                      : rdma_resolve_addr(id, res->ai_src_addr, res->ai_dst_addr, 2000) < 0 ||
                                            rdma_resolve_route(id, 2000) < 0)
        goto fail;
    if (qp_attr && !(res->ai_flags & RAI_PASSIVE) && rdma_create_qp(id, pd, qp_attr) < 0)
        goto fail;
    /* A listener keeps the QP attributes for the ids its requests make (rdma_get_request). */
    if (qp_attr && (res->ai_flags & RAI_PASSIVE)) {
        struct cm_id *c = (struct cm_id *)id;

        c->ep_qp_attr = *qp_attr;
        c->ep_has_qp = true;
        c->ep_pd = pd;
    }
    *out = id;
    return 0;
fail:;
    int e = errno;

    rdma_destroy_id(id);
    return cm_fail(e);
}

CM_API void rdma_destroy_ep(struct rdma_cm_id *id)
{
    if (!id)
        return;
    rdma_destroy_qp(id);
    rdma_destroy_srq(id);
    rdma_destroy_id(id);
}

/* The next connection request of a synchronous listener: an id of its own channel, with
 * the QP the listener's rdma_create_ep asked for. */
CM_API int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **out)
{
    struct cm_id *l = (struct cm_id *)listen;
    struct rdma_cm_event *ev;
    struct rdma_cm_id *id;
    int type;

    if (!listen || !out || !l->own_channel)
        return cm_fail(EINVAL);
    for (;;) {
        type = cm_wait_event(l, &ev);
        if (type < 0)
            return -1;
        if (type == RDMA_CM_EVENT_CONNECT_REQUEST)
            break;
        rdma_ack_cm_event(ev);
    }
    id = ev->id;
    rdma_ack_cm_event(ev);
    if (rdma_migrate_id(id, NULL) < 0 ||
        (l->ep_has_qp && rdma_create_qp(id, l->ep_pd, &l->ep_qp_attr) < 0)) {
        int e = errno;

        rdma_reject(id, NULL, 0);
        rdma_destroy_id(id);
        return cm_fail(e);
    }
    *out = id;
    return 0;
}

CM_API __be16 rdma_get_src_port(struct rdma_cm_id *id)
{
    const struct sockaddr *sa = &id->route.addr.src_addr;

    return sa->sa_family == AF_INET6 ? ((const struct sockaddr_in6 *)sa)->sin6_port
                                     : ((const struct sockaddr_in *)sa)->sin_port;
}

CM_API __be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
    const struct sockaddr *sa = &id->route.addr.dst_addr;

    return sa->sa_family == AF_INET6 ? ((const struct sockaddr_in6 *)sa)->sin6_port
                                     : ((const struct sockaddr_in *)sa)->sin_port;
}

/* Options that tune a RoCE packet's class or the port space mean nothing here: they are
 * accepted and have no effect. The ACK timeout is the QP's attribute. Anything else is
 * refused. */
CM_API int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval, size_t optlen)
{
    if (!id || !optval || !optlen)
        return cm_fail(EINVAL);
    if (level == RDMA_OPTION_ID && optname == RDMA_OPTION_ID_ACK_TIMEOUT) {
        struct cm_id *c = (struct cm_id *)id;

        if (optlen != sizeof(uint8_t))
            return cm_fail(EINVAL);
        /* Kept for the id's QP, which reports it (ibv_query_qp); the core's own peer timeout
         * (ND_IWARP_TIMEOUT_MS) decides when a silent peer fails it. */
        c->ack_timeout = *(uint8_t *)optval;
        if (id->qp)
            ndv_qp_cm_timeout(id->qp, (uint8_t)c->ack_timeout);
        return 0;
    }
    if (level == RDMA_OPTION_ID && (optname == RDMA_OPTION_ID_TOS || optname == RDMA_OPTION_ID_REUSEADDR ||
                                    optname == RDMA_OPTION_ID_AFONLY))
        return 0;
    return cm_fail(ENOSYS);
}

CM_API int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
    (void)event;
    return id ? 0 : cm_fail(EINVAL);
}

/*
 * The attributes that move an application-managed QP to @attr->qp_state for the id's
 * connection. The connection itself is the CM's (the QP is bound to it by number at
 * rdma_connect or rdma_accept), so no address vector is given, on either personality:
 * as the kernel's iWARP CM answers (access rights; RTR and RTS need nothing else), plus
 * the IB CM's other fields where they mean something here. With an address vector the
 * verbs layer would dial a second connection of its own.
 */
CM_API int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *attr, int *mask)
{
    struct cm_id *c = (struct cm_id *)id;

    if (!id || !attr || !mask || !id->verbs)
        return cm_fail(EINVAL);
    /* As the kernel's CM gives an RC QP: remote atomics too (the device offers them). */
    const int rc_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                             IBV_ACCESS_REMOTE_ATOMIC;
    enum ibv_qp_state want = attr->qp_state;

    memset(attr, 0, sizeof(*attr));
    attr->qp_state = want;
    if (cm_is_ud(c))
        return cm_ud_init_qp_attr(attr, mask);
    switch (want) {
    case IBV_QPS_INIT:
        attr->qp_access_flags = rc_access;
        attr->port_num = id->port_num ? id->port_num : 1;
        *mask = IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
        return 0;
    case IBV_QPS_RTR:
        attr->qp_access_flags = rc_access;
        attr->max_dest_rd_atomic = (uint8_t)c->ird;
        attr->min_rnr_timer = 12;
        *mask = IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
        /* The path as a RoCE CM gives it (UCX reads the MTU and the peer's GID from it).
         * Not in the mask: the CM connects our QPs itself, and an address vector in a
         * modify would start a connection of its own (verbs' av.c). */
        if (!cm_iwarp(c)) {
            struct ibv_port_attr pa;

            if (ibv_query_port(id->verbs, 1, &pa) == 0)
                attr->path_mtu = pa.active_mtu;
            cm_ah_attr(c, &attr->ah_attr);
        }
        return 0;
    case IBV_QPS_RTS:
        attr->timeout = c->ack_timeout >= 0 ? (uint8_t)c->ack_timeout : 14;
        attr->retry_cnt = 7;
        attr->rnr_retry = 7;
        attr->max_rd_atomic = (uint8_t)c->ord;
        *mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
        return 0;
    default:
        return cm_fail(EINVAL);
    }
}

CM_API int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
    (void)id;
    (void)addr;
    (void)context;
    return cm_fail(ENOSYS);
}

CM_API int rdma_join_multicast_ex(struct rdma_cm_id *id, struct rdma_cm_join_mc_attr_ex *attr, void *context)
{
    (void)id;
    (void)attr;
    (void)context;
    return cm_fail(ENOSYS);
}

CM_API int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
    (void)id;
    (void)addr;
    return cm_fail(ENOSYS);
}

/* rsockets are not offered; rpoll over ordinary descriptors is poll. */
CM_API int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
    return poll(fds, nfds, timeout);
}

/* An SRQ the id's QP then takes its receives from (rdma_create_qp), in the id's PD unless
 * the caller names one. XRC needs XRC domains, which the device does not have. */
CM_API int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)
{
    struct ibv_srq *srq;

    if (!id || !attr || !(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) || !id->verbs)
        return cm_fail(EINVAL);
    if (attr->srq_type != IBV_SRQT_BASIC)
        return cm_fail(EOPNOTSUPP);
    if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd) {
        attr->pd = id->pd ? id->pd : cm_default_pd();
        attr->comp_mask |= IBV_SRQ_INIT_ATTR_PD;
    }
    srq = ibv_create_srq_ex(id->verbs, attr);
    if (!srq)
        return -1;
    if (!id->pd)
        id->pd = attr->pd;
    id->srq = srq;
    return 0;
}

CM_API int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
    struct ibv_srq_init_attr_ex ex = { 0 };
    int rc;

    if (!id || !attr)
        return cm_fail(EINVAL);
    memcpy(&ex, attr, sizeof(*attr));
    ex.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
    ex.srq_type = IBV_SRQT_BASIC;
    ex.pd = pd;
    rc = rdma_create_srq_ex(id, &ex);
    memcpy(attr, &ex, sizeof(*attr));
    return rc;
}

CM_API void rdma_destroy_srq(struct rdma_cm_id *id)
{
    if (!id || !id->srq)
        return;
    ibv_destroy_srq(id->srq);
    id->srq = NULL;
}

/* ECE (vendor options negotiated in the CM exchange) is Mellanox's. A local choice is taken
 * as rdma-core takes it, checked, but this CM's wire has no place for it, so it goes
 * nowhere and no peer's ever arrives (vendor 0: none). */
CM_API int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
    if (!id || id->qp || !ece || !ece->vendor_id || ece->comp_mask)
        return cm_fail(EINVAL);
    return 0;
}

CM_API int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
    if (!id || id->qp || !ece)
        return cm_fail(EINVAL);
    memset(ece, 0, sizeof(*ece));
    return 0;
}

/* The reason (vendor option not supported) has no place on this CM's wire: a plain reject. */
CM_API int rdma_reject_ece(struct rdma_cm_id *id, const void *pdata, uint8_t len)
{
    return rdma_reject(id, pdata, len);
}
