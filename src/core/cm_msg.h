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
#define ND_CM_NREFS 5

struct nd_cm_msg {
    uint16_t type;
    uint32_t ird, ord;
    uint32_t pdata_len;
    uint8_t pdata[ND_CM_MAX_PDATA];
    struct sockaddr_storage src;    /* the sender's local address (shm) */
    bool from_active;               /* REJ: sent by the connecting side (after its REP) */
    bool redirect;                  /* REJ from a listener: connect again with the next transport */
    uint32_t xport_opts;            /* transport options of a REQ, echoed by its REP (iwarp: MPA bits) */
    /* shm, REQ and REP: the sender's queue pair */
    uint32_t rq_entries, max_sge, slot_size, arm_slot, iarm_slot;
    uint32_t srq_entries, srq_max_sge;  /* nonzero when the sender's QP takes receives from an SRQ */
    uint16_t pd, recv_pd;           /* protection domains of its QP's memory and of its receives' */
    uint64_t nonce, rcq_serial, icq_serial; /* who the CQs of refs[2], refs[3] are (nd_cq serials) */
    uint64_t region_off;            /* of the sender's region in the memfd of refs[0] */
    /* The sender's region, adapter region (read-only), receive CQ and initiator CQ eventfds,
     * SRQ region, as it names them (fd -1: none). Named, not passed: nothing to close. */
    struct nd_fd_ref refs[ND_CM_NREFS];
};

void nd_cm_msg_init(struct nd_cm_msg *m, uint16_t type);

#endif
