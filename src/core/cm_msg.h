/* SPDX-License-Identifier: MIT */
/*
 * The connection manager's messages, as the core sees them. Each transport carries them
 * its own way: shm as fixed records with descriptors on a unix socket, iwarp as MPA
 * request/reply frames on the TCP connection (RTU as the RTR frame, DISC as the FIN).
 */
#ifndef ND_CM_MSG_H
#define ND_CM_MSG_H

#include "core.h"

#include <stdint.h>
#include <sys/socket.h>

enum nd_cm_msg_type { ND_CM_REQ = 1, ND_CM_REP = 2, ND_CM_REJ = 3, ND_CM_RTU = 4, ND_CM_DISC = 5 };

#define ND_CM_MAX_PDATA 252u        /* MPA's 256 bytes less the RFC 6581 block */
#define ND_CM_XPORT_BYTES 200u

struct nd_cm_msg {
    uint16_t type;
    uint32_t ird, ord;
    uint32_t pdata_len;
    uint8_t pdata[ND_CM_MAX_PDATA];
    struct sockaddr_storage src;    /* the sender's local address (shm) */
    bool from_active;               /* REJ: sent by the connecting side (after its REP) */
    bool redirect;                  /* REJ from a listener: connect again with the next transport */
    uint32_t xport_opts;            /* transport options of a REQ, echoed by its REP (iwarp: MPA bits) */
    /* The transport's own part, which the core carries and never reads: shm's description
     * of the sender's queue pair in a REQ or REP (struct shm_qp_desc). */
    _Alignas(8) uint8_t xport[ND_CM_XPORT_BYTES];
};

void nd_cm_msg_init(struct nd_cm_msg *m, uint16_t type);

#endif
