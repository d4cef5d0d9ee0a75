// SPDX-License-Identifier: MIT
/* What a connector tells about its connection: read limits, the peer's private data, the
 * two addresses (IND2Connector's Get* calls). */
#include "cm_int.h"

#include <string.h>

ND_DOOR int ndc_connector_get_read_limits(nd_connector *c, uint32_t *inbound, uint32_t *outbound)
{
    int st = 0;

    if (!nd_connector_valid(c))
        return -EBADF;
    pthread_mutex_lock(&c->lock);
    if (c->state == ND_CS_REQ_RECEIVED) {
        /* The peer's view swapped: what it will read from us is our inbound. */
        if (inbound)
            *inbound = nd_clamp_u32(c->msg.ord, nd_caps.max_ird);
        if (outbound)
            *outbound = nd_clamp_u32(c->msg.ird, nd_caps.max_ord);
    } else if (c->state == ND_CS_REP_RECEIVED) {
        if (inbound)
            *inbound = nd_clamp_u32(c->ird, c->msg.ord);
        if (outbound)
            *outbound = nd_clamp_u32(c->ord, c->msg.ird);
    } else {
        st = c->state == ND_CS_DISCONNECTED ? -ENOTCONN : -EBADFD;
    }
    pthread_mutex_unlock(&c->lock);
    return st;
}

ND_DOOR int ndc_connector_get_private_data(nd_connector *c, void *buf, uint32_t *len)
{
    int st = 0;

    if (!nd_connector_valid(c))
        return -EBADF;
    if (!len)
        return ND_EARG(2);
    pthread_mutex_lock(&c->lock);
    if (!c->have_msg) {
        st = -ENOTCONN;
    } else {
        uint32_t n = c->msg.pdata_len;

        if (buf)
            memcpy(buf, c->msg.pdata, *len < n ? *len : n);
        if (!buf || *len < n)
            st = -EOVERFLOW;
        *len = n;
    }
    pthread_mutex_unlock(&c->lock);
    return st;
}

ND_DOOR int ndc_connector_get_local_address(nd_connector *c, struct sockaddr *addr, uint32_t *len)
{
    int st;

    if (!nd_connector_valid(c))
        return -EBADF;
    pthread_mutex_lock(&c->lock);
    if (c->state == ND_CS_IDLE || c->state == ND_CS_QUEUED)
        st = -ENOTCONN;
    else if (c->state == ND_CS_BOUND && (st = nd_connector_reserve_if_unset(c)) != 0)
        ;
    else
        st = nd_sockaddr_copy_out(&c->local, addr, len);
    pthread_mutex_unlock(&c->lock);
    return st;
}

ND_DOOR int ndc_connector_get_peer_address(nd_connector *c, struct sockaddr *addr, uint32_t *len)
{
    int st;

    if (!nd_connector_valid(c))
        return -EBADF;
    pthread_mutex_lock(&c->lock);
    switch (c->state) {
    case ND_CS_REQ_RECEIVED: case ND_CS_REP_RECEIVED: case ND_CS_ACCEPTING: case ND_CS_CONNECTED:
        st = nd_sockaddr_copy_out(&c->peer, addr, len);
        break;
    default:
        st = -ENOTCONN;
    }
    pthread_mutex_unlock(&c->lock);
    return st;
}
