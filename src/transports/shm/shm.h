/* SPDX-License-Identifier: MIT */
/*
 * The shm transport: peers on one host, same network namespace and uid. Rendezvous over
 * an abstract unix socket named after the listener's address; CM messages carry the
 * queue pair's inbound region, the adapter's read-only region and the CQ eventfds with
 * SCM_RIGHTS. Data moves through the peer's message slots or with one cross-memory call.
 */
#ifndef ND_SHM_H
#define ND_SHM_H

#include "core/transport.h"

enum shm_msg_type { SHM_REQ = 1, SHM_REP = 2, SHM_REJ = 3, SHM_RTU = 4, SHM_DISC = 5 };

#define SHM_MAX_PDATA 252u
#define SHM_NFDS 5

/* A CM message, decoded and checked. */
struct shm_msg {
    uint16_t type;
    uint32_t ird, ord;
    uint32_t pdata_len;
    uint8_t pdata[SHM_MAX_PDATA];
    struct sockaddr_storage src;    /* the sender's local address */
    /* REQ and REP: the sender's queue pair */
    uint32_t rq_entries, max_sge, slot_size, arm_slot, iarm_slot;
    uint32_t srq_entries, srq_max_sge;  /* nonzero when the sender's QP takes receives from an SRQ */
    /* region, adapter (read-only), receive CQ, initiator CQ, SRQ region (the QP region again
     * when there is no SRQ); -1 if none */
    int fds[SHM_NFDS];
};

void shm_msg_init(struct shm_msg *m, uint16_t type);
void shm_msg_close_fds(struct shm_msg *m);

/* Rendezvous. Each returns a socket or a negative errno. */
int shm_listen(const struct sockaddr *addr, int backlog);
int shm_dial(const struct sockaddr *dest);
int shm_accept(int listen_fd);

/* Send @m; for REQ/REP the QP's descriptors go with it. */
nd_status shm_send(int sock, struct shm_msg *m, struct nd_qp *qp);
/* ND_SUCCESS with a message, ND_PENDING when none is there yet, ND_CONNECTION_ABORTED on EOF
 * or a malformed message. */
nd_status shm_recv(int sock, struct shm_msg *m);
/* Is the peer on @sock of our uid? Fills its pid. */
bool shm_peer_same_user(int sock, pid_t *pid);

/* Connect @qp over @sock to the peer described by @m (its REQ or REP). Takes the fds. */
nd_status shm_attach(struct nd_qp *qp, int sock, pid_t pid, struct shm_msg *m, uint32_t ird, uint32_t ord);
/* The peer ended the connection (DISC or EOF): flush. */
void shm_peer_gone(struct nd_qp *qp);

extern const struct nd_transport_ops shm_transport;

#endif
