/* SPDX-License-Identifier: MIT */
/*
 * The shm transport: peers on one host, same network namespace and uid. Rendezvous over
 * an abstract unix socket named after the listener's address; CM messages name the
 * queue pair's inbound region, the adapter's read-only region and the CQ eventfds, which
 * the receiver fetches (pidfd_getfd) when it has not mapped them already. Data moves through the peer's message slots or with one cross-memory call.
 */
#ifndef ND_SHM_H
#define ND_SHM_H

#include "core/transport.h"
#include "core/cm_msg.h"

#include <string.h>


#define SHM_NREFS 5

/* What a REQ or REP tells the peer of the sender's queue pair: shm's part of a CM message. */
struct shm_qp_desc {
    uint32_t rq_entries, max_sge, slot_size, arm_slot, iarm_slot;
    uint32_t srq_entries, srq_max_sge;  /* nonzero when the sender's QP takes receives from an SRQ */
    uint16_t pd, recv_pd;           /* protection domains of its QP's memory and of its receives' */
    uint64_t nonce, rcq_serial, icq_serial; /* who the CQs of refs[2], refs[3] are (nd_cq serials) */
    uint64_t region_off;            /* of the sender's region in the memfd of refs[0] */
    uint32_t flags;                 /* SHM_DESC_* */
    uint32_t reserved;
    /* The sender's region, adapter region (read-only), receive CQ and initiator CQ eventfds,
     * SRQ region, as it names them (fd -1: none). Named, not passed: nothing to close. */
    struct nd_fd_ref refs[SHM_NREFS];
};

_Static_assert(sizeof(struct shm_qp_desc) <= ND_CM_XPORT_BYTES, "shm's part fits a CM message");

/* The sender may not reach the receiver's memory (cross-memory attach refused): the
 * receiver offers it a bounce channel (shm_bounce.c). */
#define SHM_DESC_NO_CMA 1u

/* The part in and out of a message: copied, as the core's bytes are no shm_qp_desc. */
static inline void shm_desc_get(const struct nd_cm_msg *m, struct shm_qp_desc *d)
{
    memcpy(d, m->xport, sizeof(*d));
}

static inline void shm_desc_put(struct nd_cm_msg *m, const struct shm_qp_desc *d)
{
    memcpy(m->xport, d, sizeof(*d));
}

/* Rendezvous. Each returns a socket or a negative errno. */
int shm_listen(const struct sockaddr *addr, int backlog);
int shm_dial(const struct sockaddr *dest);
int shm_accept(int listen_fd);

/* Send @m; for REQ/REP the QP's descriptors go with it. */
int shm_send(int sock, struct nd_cm_msg *m, struct nd_qp *qp);
/* 0 with a message, -EINPROGRESS when none is there yet, -ECONNABORTED on EOF
 * or a malformed message. */
int shm_recv(int sock, struct nd_cm_msg *m);
/* Is the peer on @sock of our uid? Fills its pid. */
bool shm_peer_same_user(int sock, pid_t *pid);
/* May we read and write @pid's memory (cross-memory attach)? */
bool shm_cma_allowed(pid_t pid);

/* The transport's connection operations (see transport.h). */
int shm_cm_listen(const struct sockaddr *addr, int port_fd, int backlog);
int shm_cm_accept(int listen_fd, pid_t *pid);
int shm_cm_dial(const struct sockaddr *dest, const struct sockaddr *local, pid_t *pid);
int shm_cm_recv(int sock, struct nd_cm_msg *m, uint16_t expect);

/* Is the queue-pair geometry a peer's REQ or REP claims one we accept (sizes, powers of
 * two, the slot budget, arm slots)? */
bool shm_geometry_ok(const struct nd_cm_msg *m);
/* Connect @qp to the peer @pid described by @m (its REQ or REP). The connection socket stays the connector's (it lends it to the QP for liveness). */
int shm_attach(struct nd_qp *qp, pid_t pid, struct nd_cm_msg *m, uint32_t ird, uint32_t ord);
/* A peer CQ's signal descriptor, shared by the connections to it (shm_signal.c). Get
 * fetches the peer's descriptor @peer_fd when the CQ is new to us; NULL when out of
 * memory or when that is no eventfd of @pid's. */
struct shm_signal;
struct shm_signal *shm_signal_get(pid_t pid, uint64_t nonce, uint64_t serial, int32_t peer_fd);
int shm_signal_fd(const struct shm_signal *s);
void shm_signal_put(struct shm_signal *s);

/* Remote atomics (shm_atomic.c): peer @pid's atomic lock page, named by its token table's
 * entry 0, mapped (NULL if it cannot be); its unmapping; and an atomic @wr run on the
 * peer's memory under that lock, through @view (our mapping of the 8 bytes) when not
 * NULL, the old value in *old. */
struct nd_atomic_page;
struct nd_mtab_entry;
struct nd_atomic_page *shm_atomic_locks(pid_t pid, const struct nd_mtab_entry *entry0);
void shm_atomic_unmap(struct nd_atomic_page *locks);
int shm_atomic_run(pid_t pid, struct nd_atomic_page *locks, uint8_t *view, const struct nd_wr *wr, uint64_t *old);

/* Is process @pid gone or exiting (a zombie, dead, or past the start of its exit)? */
bool shm_peer_exiting(pid_t pid);

/* A request's local buffers as one stream, copied piece by piece to or from memory of the
 * peer's (a view, a bounce chunk). */
struct shm_sge_stream {
    const nd_sge *sge;
    uint32_t i;
    uint64_t off;
};

static inline void shm_stream_copy(struct shm_sge_stream *s, uint8_t *peer, uint64_t len, bool to_peer)
{
    while (len) {
        uint8_t *local = (uint8_t *)s->sge[s->i].buffer + s->off;
        uint64_t n = s->sge[s->i].buffer_length - s->off;

        if (n > len)
            n = len;
        if (to_peer)
            memcpy(peer, local, n);
        else
            memcpy(local, peer, n);
        peer += n;
        len -= n;
        s->off += n;
        if (s->off == s->sge[s->i].buffer_length) {
            s->i++;
            s->off = 0;
        }
    }
}

/*
 * The bounce path (shm_bounce.c, shm_agent.c), for a peer that may not reach our memory:
 * it copies into (or out of) a channel we made and both map, and our agent thread checks
 * each chunk against our own token table and copies it on into (or out of) our memory.
 * The target side: a channel offered on @qp's connection (its names in @qp's control block
 * for the peer), withdrawn when the connection goes; quiesce waits out a copy into our
 * registered memory in progress (Deregister's barrier).
 */
struct shm_served;
/* Offer and withdraw go through the process's agent (shm_agent.c), which serves it. */
struct shm_served *shm_bounce_offer(struct nd_qp *qp);
void shm_bounce_withdraw(struct nd_qp *qp, struct shm_served *s);
void shm_bounce_quiesce(struct shm_served *s);
/* Serve @s's waiting requests here, unless another thread serves it now: how many. The
 * agent calls it, and so does a poller of the queue pair's CQs (shm_bounce_poll, which
 * says it came by), saving the agent's wake-ups and its CPU. */
uint32_t shm_bounce_serve_try(struct shm_served *s);
uint32_t shm_bounce_poll(struct shm_served *s);
/* An empty poll's time, lent to every channel this process serves (shm_agent.c). */
void shm_agent_lend(void);

/* The initiator side: the peer's channel, mapped at the first request that needs it (NULL
 * if the peer offers none or it cannot be had). @ours and @theirs: the connection's state
 * words, which end a wait when either leaves ACTIVE. */
struct shm_bounce_link;
struct shm_bounce_link *shm_bounce_link(pid_t pid, const struct nd_qp_ctl *pctl, const _Atomic uint32_t *ours,
                                        const _Atomic uint32_t *theirs);
void shm_bounce_unlink(struct shm_bounce_link *l);

/* A piece of the peer's memory a request names, checked against the peer's table first. */
struct shm_piece {
    uint32_t token;
    uint64_t addr, len;
};

enum shm_bounce_op { SHM_BOUNCE_WRITE = 1, SHM_BOUNCE_READ, SHM_BOUNCE_RECV, SHM_BOUNCE_ATOMIC };

/* @wr's bytes into the @n pieces (WRITE: an RDMA Write; RECV: a Send into a receive), or
 * the one piece's bytes into @wr's buffers (READ); an atomic's old value into *old. 0 once
 * the peer has them; -EFAULT (a piece the peer refused), -EBADRQC (the peer's QP takes no
 * atomics), -ECANCELED (the connection ended), -ECONNABORTED (the peer died), -ETIMEDOUT
 * (it stopped answering), -EIO (it broke the channel). */
int shm_bounce_move(struct shm_bounce_link *l, uint8_t op, const struct shm_piece *p, int n, const struct nd_wr *wr);
int shm_bounce_atomic(struct shm_bounce_link *l, const struct nd_wr *wr, uint64_t *old);

/* The peer ended the connection (DISC or EOF): flush. */
void shm_peer_gone(struct nd_qp *qp);

/* What the held-send sweeper (shm_sweep.c) calls back, the data path's (shm_data.c).
 * left_alone (sweeper, its lock held: @qp's connection stays while it is listed): has
 * nothing polled @qp's CQs since the last look? Only then does the sweeper take @qp's lock:
 * a polling application retries its own held Sends, without contention or system calls.
 * once (sweeper, @qp's lock held): retry @qp's held Sends; whether it still holds any. */
struct shm_sweep_client {
    bool (*left_alone)(struct nd_qp *qp);
    bool (*once)(struct nd_qp *qp);
};

/* Watch: @qp holds a Send (its lock held); @client is what the adapter's sweeper calls,
 * the same for every watch. Forget: @qp goes (its lock held). */
void shm_sweep_watch(struct nd_qp *qp, const struct shm_sweep_client *client);
void shm_sweep_forget(struct nd_qp *qp);
void shm_adapter_close(struct nd_adapter *a);

extern const struct nd_transport_ops shm_transport;

#endif
