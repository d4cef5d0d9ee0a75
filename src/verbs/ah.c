// SPDX-License-Identifier: MIT
/*
 * Address handles: where a UD queue pair's send goes (a GID of the destination's device on
 * a port of ours), checked as a RoCE device checks one: the port must be ours, the route
 * global (Ethernet has no LIDs) and its source GID one of the port's. The destination is
 * kept as the IP address the GID carries.
 */
#include "verbs_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

static bool gid_empty(const union ibv_gid *g)
{
    static const union ibv_gid zero;

    return !memcmp(g, &zero, sizeof(zero));
}

/* The address @gid names; false for none (the empty GID). */
static bool gid_to_sockaddr(const union ibv_gid *gid, struct sockaddr_storage *ss)
{
    static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

    memset(ss, 0, sizeof(*ss));
    if (gid_empty(gid))
        return false;
    if (!memcmp(gid->raw, mapped, sizeof(mapped))) {
        struct sockaddr_in *in = (struct sockaddr_in *)ss;

        in->sin_family = AF_INET;
        memcpy(&in->sin_addr, gid->raw + 12, 4);
    } else {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

        in6->sin6_family = AF_INET6;
        memcpy(&in6->sin6_addr, gid->raw, 16);
    }
    return true;
}

/* rxe's checks: 0, or the errno the create fails with. */
static int ah_attr_error(const struct ibv_ah_attr *attr, struct sockaddr_storage *dest)
{
    struct vb_gid gids[VB_GID_MAX];
    uint32_t n;

    if (attr->port_num != VB_PORT)
        return EINVAL;
    if (!attr->is_global)
        return EINVAL;                  /* RoCE: every route is global */
    n = vb_gids(gids, VB_GID_MAX);
    if (attr->grh.sgid_index >= n)
        return EINVAL;
    if (!gid_to_sockaddr(&attr->grh.dgid, dest))
        return EINVAL;
    return 0;
}

VB_API struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
    struct vb_ah *a;
    int err;

    if (!pd || !attr) {
        errno = EINVAL;
        return NULL;
    }
    a = calloc(1, sizeof(*a));
    if (!a) {
        errno = ENOMEM;
        return NULL;
    }
    err = ah_attr_error(attr, &a->dest);
    if (err) {
        free(a);
        errno = err;
        return NULL;
    }
    a->attr = *attr;
    a->ah.context = pd->context;
    a->ah.pd = pd;
    a->ah.handle = 0;
    return &a->ah;
}

VB_API struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc, struct ibv_grh *grh,
                                            uint8_t port_num)
{
    struct ibv_ah_attr attr;

    if (!pd || !wc || ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr))
        return NULL;
    return ibv_create_ah(pd, &attr);
}

VB_API int ibv_destroy_ah(struct ibv_ah *ah)
{
    if (!ah)
        return EINVAL;
    free(vb_container_of(ah, struct vb_ah, ah));
    return 0;
}
