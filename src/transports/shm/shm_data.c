// SPDX-License-Identifier: MIT
/*
 * shm data path. The initiator does what a NIC would: it reads the peer's posted receive,
 * places the message (a slot copy for small ones, one process_vm_writev for the rest),
 * writes the completion into the peer's inbound ring and signals the peer's CQ only if
 * armed. Read and Write check the peer's token table and move the bytes with one
 * cross-memory call; the peer's CPU takes no part. Where cross-memory attach is refused,
 * what a slot or a view of the peer's memory cannot carry goes by the peer's bounce
 * channel instead (shm_bounce.c), which the peer's agent thread serves.
 */
#include "shm.h"
#include "core/copy.h"
#include "core/log.h"
#include "core/srq_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* A Send waits this long for a receive: a peer that is only slow to post (descheduled on a
 * loaded machine between Accept and its first receive) must not lose the connection. */
#define LIVENESS_NS (50ull * 1000000)         /* how often a polled QP checks its peer */
#define MAX_IOV 64
#define PEER_MAPS 8                           /* the peer's allocations we keep mapped */
/* Sends up to this size go through the peer's slot without a look at its receive: above
 * it, a receive in memory we can map takes one memcpy instead of two. */
#define SLOT_ONLY_MAX (16u << 10)

/* A peer's nd_alloc_memory allocation as we map it. */
struct peer_map {
    uint64_t ino, base, size;       /* as published; the inode and size checked on the file */
    uint8_t *view;                  /* NULL: it could not be mapped: cross-memory calls */
};

struct held {
    struct nd_wr wr;
    nd_sge *sge;
};

struct shm_conn {
    struct nd_conn base;            /* first: the core's view (ops, qp) */
    pid_t pid;
    const uint8_t *peer_adapter;    /* read-only, shared by every connection to that adapter */
    const struct nd_mtab_entry *peer_mtab;
    uint8_t *peer_region;
    struct nd_qp_layout pl;
    struct nd_qp_ctl *pctl;
    uint32_t peer_rq_entries, peer_max_sge, peer_slot_size;
    uint16_t peer_pd, peer_recv_pd; /* what the peer's queue pair (and its receives) may use */
    /* STags our last Sends with Invalidate named: the peer revokes them only when it reaps
     * those Sends, but our own later requests must already find them invalid. */
    uint32_t inv_sent[8];
    uint32_t inv_count;
    /* The peer's SRQ, when its queue pair takes receives from one. */
    uint8_t *psrq;
    struct nd_srq_layout psl;
    struct nd_srq_ctl *psrq_ctl;
    uint32_t psrq_entries, psrq_max_sge;
    struct nd_ring_producer pprod;  /* into the peer's inbound ring */
    struct shm_signal *prcq, *picq; /* the peer's CQs' eventfds (shared, see shm_signal.c) */
    int peer_rcq_fd, peer_icq_fd;   /* theirs */
    uint32_t next_peer_recv;
    uint32_t peer_posted;           /* receives the peer is known to have posted */
    uint32_t ird, ord;
    struct held *held;              /* FIFO of requests waiting behind a send with no receive */
    uint32_t held_head, held_cap;
    _Atomic uint32_t held_count;     /* read without the lock by shm_progress */
    uint64_t held_since;
    _Atomic uint64_t last_check;
    _Atomic uint32_t poll_count;
    uint32_t sweep_seen_polls;      /* the sweeper's: poll_count at its last look (sweeper lock) */
    bool timed;
    struct peer_map maps[PEER_MAPS];    /* under the QP lock, like every post */
    uint32_t next_map;
    struct nd_atomic_page *peer_locks;  /* the peer's atomic locks, mapped at the first atomic */
    bool cma;                       /* we may use cross-memory attach on the peer */
    struct shm_bounce_link *bounce; /* else the peer's channel, mapped at first use */
    bool bounce_failed;             /* it could not be had: requests needing it fail */
    struct shm_served *served;      /* ours, when the peer may not reach our memory */
};

static struct shm_conn *conn_of(struct nd_qp *qp)
{
    return (struct shm_conn *)qp->conn;     /* the base is its first member */
}

static void poke(int fd)
{
    uint64_t one = 1;

    if (fd >= 0 && write(fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
        nd_log(ND_LOG_DEBUG, ND_SUB_SHM, "peer signal failed: %m");
}

/* Both control blocks' state words together: 0 while the connection is up and neither
 * side flagged anything (ND_WIRE_*). */
static inline uint32_t wire_words(struct nd_qp *qp, struct shm_conn *c)
{
    return atomic_load_explicit(&qp->ctl->state, memory_order_acquire) |
           atomic_load_explicit(&c->pctl->state, memory_order_acquire);
}

static bool terminated(struct nd_qp *qp, struct shm_conn *c)
{
    return wire_words(qp, c) & ND_WIRE_TERMINATED;
}

/* Gather the local SGEs into a contiguous destination (a slot). */
static void gather(const struct nd_wr *wr, uint8_t *dst)
{
    for (uint32_t i = 0; i < wr->nsge; i++) {
        nd_copy(dst, wr->sge[i].buffer, wr->sge[i].buffer_length);
        dst += wr->sge[i].buffer_length;
    }
}

static int local_iov(const struct nd_wr *wr, struct iovec *iov)
{
    int n = 0;

    for (uint32_t i = 0; i < wr->nsge; i++)
        if (wr->sge[i].buffer_length) {
            if (n == MAX_IOV)
                return -1;
            iov[n++] = (struct iovec){ wr->sge[i].buffer, wr->sge[i].buffer_length };
        }
    return n;
}

/*
 * Around every touch of the peer's registered memory (a cross-memory call, a copy through
 * a view), after which the peer's Deregister may return: it revokes the token and then
 * reads our word (Dekker's pattern: each side stores, fences, then loads what the other
 * stored). So either it sees us inside and waits, or we see its revocation (or its
 * Terminate: a closing peer waits the same way). We are the word's only writer.
 */
static void touch_begin(struct nd_qp *qp)
{
    uint32_t v = atomic_load_explicit(&qp->ctl->touching_peer, memory_order_relaxed);

    atomic_store_explicit(&qp->ctl->touching_peer, v | 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst);
}

static void touch_end(struct nd_qp *qp)
{
    uint32_t v = atomic_load_explicit(&qp->ctl->touching_peer, memory_order_relaxed);

    atomic_store_explicit(&qp->ctl->touching_peer, v + 1, memory_order_release);
}

/* One cross-memory call; a short or failed transfer is an access error, unless the peer
 * is the reason. */
static int cma(struct shm_conn *c, const struct nd_wr *wr, struct iovec *remote, int nremote, bool to_peer)
{
    struct iovec local[MAX_IOV];
    int nlocal = local_iov(wr, local);
    ssize_t n;

    if (nlocal < 0)
        return -EMSGSIZE;
    if (wr->total == 0)
        return 0;
    n = to_peer ? process_vm_writev(c->pid, local, (unsigned long)nlocal, remote, (unsigned long)nremote, 0)
                : process_vm_readv(c->pid, local, (unsigned long)nlocal, remote, (unsigned long)nremote, 0);
    if (n == (ssize_t)wr->total)
        return 0;
    int err = errno;

    nd_log(ND_LOG_INFO, ND_SUB_SHM, "cross-memory %s of %llu bytes: %zd (%s)", to_peer ? "write" : "read",
           (unsigned long long)wr->total, n, n < 0 ? strerror(err) : "short");
    /* The tables were checked: a peer that died (or is dying: its memory goes first) fails
     * the call, and that is a lost connection, not an access error of ours. */
    return (n < 0 && err == ESRCH) || shm_peer_exiting(c->pid) ? -ECONNABORTED : -EFAULT;
}

/*
 * Open the peer's descriptor @fd if it is a regular file with inode @ino, or -1. Through an
 * O_PATH descriptor first: opening whatever the peer put behind that number (a device, a
 * terminal) could have effects of its own, and the O_PATH one pins the file we checked.
 */
static int open_peer_file(pid_t pid, int fd, uint64_t ino)
{
    char path[64];
    struct stat st;
    int pfd, rfd = -1;

    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
    pfd = open(path, O_PATH | O_CLOEXEC);
    if (pfd < 0)
        return -1;
    if (fstat(pfd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_ino == ino) {
        snprintf(path, sizeof(path), "/proc/self/fd/%d", pfd);
        rfd = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY);
    }
    close(pfd);
    return rfd;
}

/*
 * Our view of the peer's [addr, addr+len) inside the allocation @s names, mapped on first
 * use (its memfd opened through /proc/<pid>/fd, once per allocation), or NULL: use a
 * cross-memory call. Nothing of @s is trusted: the file must be a regular file with the
 * published inode, sealed against shrinking (no SIGBUS however the peer resizes it) and at
 * least the published size, and the range must fall inside what we mapped.
 */
static uint8_t *peer_view(struct shm_conn *c, const struct nd_mtab_share *s, uint64_t addr, uint64_t len)
{
    struct peer_map *m = NULL;
    struct stat st;
    int fd;

    if (!s->ino || s->fd < 0 || !s->size || s->size > nd_caps.max_mr_size)
        return NULL;
    for (uint32_t i = 0; i < PEER_MAPS && !m; i++)
        if (c->maps[i].ino == s->ino && c->maps[i].base == s->base && c->maps[i].size == s->size)
            m = &c->maps[i];
    if (!m) {
        m = &c->maps[c->next_map++ % PEER_MAPS];
        if (m->view)
            munmap(m->view, m->size);
        *m = (struct peer_map){ .ino = s->ino, .base = s->base, .size = s->size };
        fd = open_peer_file(c->pid, s->fd, s->ino);
        if (fd >= 0) {
            if (nd_memfd_mappable(fd, s->size, &st)) {     /* the inode: open_peer_file */
                void *v = mmap(NULL, s->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

                m->view = v == MAP_FAILED ? NULL : v;
            }
            close(fd);
        }
        nd_log(ND_LOG_DEBUG, ND_SUB_SHM, "peer allocation of %llu bytes: %s", (unsigned long long)s->size,
               m->view ? "mapped" : "not mappable, cross-memory calls");
    }
    if (!m->view || addr < m->base || addr - m->base > m->size || len > m->size - (addr - m->base))
        return NULL;
    return m->view + (addr - m->base);
}

static void unmap_peer_views(struct shm_conn *c)
{
    for (uint32_t i = 0; i < PEER_MAPS; i++)
        if (c->maps[i].view)
            munmap(c->maps[i].view, c->maps[i].size);
}

/* The peer's bounce channel, mapped at first use: NULL if it cannot be had. */
static struct shm_bounce_link *bounce_of(struct nd_qp *qp, struct shm_conn *c)
{
    if (!c->bounce && !c->bounce_failed) {
        c->bounce = shm_bounce_link(c->pid, c->pctl, &qp->ctl->state, &c->pctl->state);
        c->bounce_failed = !c->bounce;
    }
    return c->bounce;
}

/* What a cross-memory call would move, moved by the peer through its bounce channel. */
static int bounce_move(struct nd_qp *qp, struct shm_conn *c, uint8_t op, const struct shm_piece *p, int n,
                       const struct nd_wr *wr)
{
    struct shm_bounce_link *l = bounce_of(qp, c);

    return l ? shm_bounce_move(l, op, p, n, wr) : -EIO;
}

/* Does the peer have receive @k posted? Credits first (no shared read), then its queue. */
static inline __attribute__((always_inline)) bool peer_has_receive(struct nd_qp *qp, struct shm_conn *c, uint32_t k)
{
    uint32_t credit = atomic_load_explicit(&qp->peer_posted, memory_order_relaxed);

    if ((int32_t)(credit - c->peer_posted) > 0)
        c->peer_posted = credit;
    if ((int32_t)(c->peer_posted - k) > 0)
        return true;
    c->peer_posted = atomic_load_explicit(&c->pctl->rq_prod, memory_order_acquire);
    if ((int32_t)(c->peer_posted - k) > 0)
        return true;
    atomic_store(&c->pctl->peer_waiting, 1);
    atomic_thread_fence(memory_order_seq_cst);
    c->peer_posted = atomic_load_explicit(&c->pctl->rq_prod, memory_order_acquire);
    return (int32_t)(c->peer_posted - k) > 0;
}

/* The receive a Send will consume: the peer's next posted one, or a slot of its SRQ. */
static inline __attribute__((always_inline)) int next_receive(struct nd_qp *qp, struct shm_conn *c, uint32_t *k, const struct nd_rwqe **w)
{
    if (c->psrq) {
        int got = nd_srq_claim(c->psrq_ctl, (const uint32_t *)(c->psrq + c->psl.ring), c->psrq_entries, k);

        if (got < 0 || (got > 0 && *k >= c->psrq_entries))
            return -EIO;
        if (!got) {
            atomic_store(&c->psrq_ctl->waiting, 1);
            return -EINPROGRESS;
        }
        *w = (const struct nd_rwqe *)(c->psrq + c->psl.slots + (size_t)*k * c->psl.slot_stride);
        return 0;
    }
    *k = c->next_peer_recv;
    if (!peer_has_receive(qp, c, *k))
        return -EINPROGRESS;
    if (c->peer_posted - *k > c->peer_rq_entries)
        return -EIO;           /* impossible receive count: the peer is broken */
    *w = (const struct nd_rwqe *)(c->peer_region + c->pl.rwqe +
                                  (size_t)(*k & (c->peer_rq_entries - 1)) * c->pl.rwqe_stride);
    return 0;
}

/*
 * Place a Send straight into the peer's receive buffers: one memcpy through our views when
 * every piece lies in memory the peer allocated with ndc_alloc_memory, else one cross-memory
 * call. With @slot_ok (the message fits the peer's slot) anything but the memcpy is left to
 * the slot instead (*use_slot, 0): two copies beat a cross-memory call up to the
 * slot size, and the receiver then judges the length and its buffers itself, as for any
 * slot message. A receive whose buffers fail their check fails the Send with -EREMOTEIO:
 * the peer could not take it (a remote operation error, as an RNIC's requester hears).
 */
static int place_direct(struct nd_qp *qp, struct shm_conn *c, const struct nd_wr *wr, const struct nd_rwqe *w,
                        uint32_t max_sge, bool slot_ok, bool *use_slot, int *status)
{
    uint32_t nsge = __atomic_load_n(&w->nsge, __ATOMIC_RELAXED), total = __atomic_load_n(&w->total, __ATOMIC_RELAXED);
    struct iovec remote[MAX_IOV];
    struct shm_piece pieces[MAX_IOV];
    uint8_t *views[MAX_IOV];
    uint64_t left = wr->total;
    bool viewed = true;
    int n = 0;

    *use_slot = slot_ok;
    if (nsge > max_sge)
        return -EIO;
    if (wr->total > total) {
        if (!slot_ok)
            *status = -EMSGSIZE;      /* the receiver reports it; iWARP senders succeed */
        return 0;
    }
    for (uint32_t i = 0; i < nsge && left && n < MAX_IOV; i++) {
        struct nd_rwqe_sge s;
        struct nd_mtab_share sh;

        memcpy(&s, &w->sge[i], sizeof(s));
        uint32_t len = s.length < left ? s.length : (uint32_t)left;
        if (nd_mtab_check_share(c->peer_mtab, ND_MTAB_ENTRIES, s.token, s.addr, len, ND_ACCESS_LOCAL_WRITE,
                                c->peer_recv_pd, &sh))
            return slot_ok ? 0 : -EREMOTEIO;
        views[n] = peer_view(c, &sh, s.addr, len);
        viewed &= views[n] != NULL;
        pieces[n] = (struct shm_piece){ s.token, s.addr, len };
        remote[n++] = (struct iovec){ (void *)(uintptr_t)s.addr, len };
        left -= len;
    }
    if (left)
        return slot_ok ? 0 : -EREMOTEIO;
    if (viewed) {
        struct shm_sge_stream from = { wr->sge, 0, 0 };

        for (int i = 0; i < n; i++)
            shm_stream_copy(&from, views[i], remote[i].iov_len, true);
        *use_slot = false;
        return 0;
    }
    if (slot_ok)
        return 0;
    *use_slot = false;
    return c->cma ? cma(c, wr, remote, n, true) : bounce_move(qp, c, SHM_BOUNCE_RECV, pieces, n, wr);
}

/* Complete the peer's receive @k: the entry goes into its inbound ring, filled in place. */
static inline __attribute__((always_inline)) int publish_receive(struct nd_qp *qp, struct shm_conn *c, uint32_t k, int status,
                                 const struct nd_wr *wr, uint8_t flags)
{
    struct nd_cqe *e;

    nd_ring_learn_cons(&c->pprod, atomic_load_explicit(&qp->peer_consumed, memory_order_relaxed));
    /* Filled in place in the peer's ring: no stack copy (see nd_ring_next). */
    if (!(e = nd_ring_next(&c->pprod)))
        return -EIO;
    nd_cqe_set(e, k, status, (uint32_t)wr->total, ND_REQUEST_TYPE_RECEIVE, flags, qp->rq_posted,
               atomic_load_explicit(&qp->inbound_hdr->cons, memory_order_relaxed));
    if (flags & ND_CQE_INLINE_DATA)
        gather(wr, e->data);
    if (ND_UNLIKELY(flags & (ND_CQE_IMM | ND_CQE_INV)))
        nd_cqe_set_imm(e, wr->imm);
    nd_ring_commit(&c->pprod, e);
    if (!c->psrq)
        c->next_peer_recv = k + 1;
    return 0;
}

static int do_send(struct nd_qp *qp, struct shm_conn *c, const struct nd_wr *wr)
{
    const struct nd_rwqe *w;
    uint32_t k, max_sge = c->psrq ? c->psrq_max_sge : c->peer_max_sge;
    int st = next_receive(qp, c, &k, &w), status = 0;
    uint8_t flags = wr->flags & ND_OP_FLAG_SEND_AND_SOLICIT_EVENT ? ND_CQE_SOLICITED : 0;
    bool slot_ok = wr->total <= c->peer_slot_size, use_slot = slot_ok;

    if (st != 0)
        return st;
    if (ND_UNLIKELY(wr->flags & (ND_WR_IMM | ND_WR_INV))) {
        if (wr->flags & ND_WR_IMM) {
            flags |= ND_CQE_IMM;
        } else {
            flags |= ND_CQE_INV | ND_CQE_INV_ASK;
            c->inv_sent[c->inv_count++ % ND_ARRAY_SIZE(c->inv_sent)] = wr->imm;
        }
        if (wr->total <= ND_CQE_IMM_INLINE_MAX)
            goto inline_data;
    } else if (wr->total <= ND_CQE_INLINE_MAX) {
inline_data:
        /* The message rides in its completion: one cache line, and the receiver checks the
         * length against its own copy of the receive. Gathered at publish. */
        flags |= ND_CQE_INLINE_DATA;
        goto publish;
    }
    if (wr->total > SLOT_ONLY_MAX || !slot_ok) {
        touch_begin(qp);
        st = terminated(qp, c) ? -ECANCELED : place_direct(qp, c, wr, w, max_sge, slot_ok, &use_slot, &status);
        touch_end(qp);
        if (st != 0)
            return st;
    }
    if (use_slot) {
        /* The slot that goes with the ring position this completion will take. */
        gather(wr, c->peer_region + c->pl.slots + (size_t)(c->pprod.prod & c->pprod.mask) * c->peer_slot_size);
        flags |= ND_CQE_INLINE;
    }
publish:
    return publish_receive(qp, c, k, status, wr, flags);
}

static bool invalidated_by_us(const struct shm_conn *c, uint32_t stag)
{
    for (uint32_t i = 0; i < ND_ARRAY_SIZE(c->inv_sent) && i < c->inv_count; i++)
        if (c->inv_sent[i] == stag)
            return true;
    return false;
}

/* The bytes of a Write or Read (of at least one byte), checked against the peer's table. */
static int place_rdma(struct nd_qp *qp, struct shm_conn *c, const struct nd_wr *wr)
{
    bool write = wr->type == ND_REQUEST_TYPE_WRITE;
    struct iovec remote = { (void *)(uintptr_t)wr->remote_addr, (size_t)wr->total };
    struct nd_mtab_share sh;
    int st = 0;
    uint8_t *view;

    touch_begin(qp);
    if (terminated(qp, c))
        st = -ECANCELED;
    else if (ND_UNLIKELY(c->inv_count) && invalidated_by_us(c, wr->remote_token))
        st = -EFAULT;
    else if (nd_mtab_check_share(c->peer_mtab, ND_MTAB_ENTRIES, wr->remote_token, wr->remote_addr, wr->total,
                                 write ? ND_ACCESS_REMOTE_WRITE : ND_ACCESS_REMOTE_READ, c->peer_pd, &sh))
        st = -EFAULT;
    else if ((view = peer_view(c, &sh, wr->remote_addr, wr->total))) {
        struct shm_sge_stream local = { wr->sge, 0, 0 };

        shm_stream_copy(&local, view, wr->total, write);
    } else if (c->cma) {
        st = cma(c, wr, &remote, 1, write);
    } else {
        struct shm_piece p = { wr->remote_token, wr->remote_addr, wr->total };

        st = bounce_move(qp, c, write ? SHM_BOUNCE_WRITE : SHM_BOUNCE_READ, &p, 1, wr);
    }
    touch_end(qp);
    return st;
}

/*
 * An RDMA Write with immediate data: the bytes, then the peer's next receive reports them.
 * The receive is found first: without one the request waits (-EINPROGRESS) and nothing is
 * written twice.
 */
static int do_write_imm(struct nd_qp *qp, struct shm_conn *c, const struct nd_wr *wr)
{
    const struct nd_rwqe *w;
    uint32_t k;
    int st;

    st = next_receive(qp, c, &k, &w);
    if (st == 0 && wr->total)
        st = place_rdma(qp, c, wr);
    if (st != 0)
        return st;
    return publish_receive(qp, c, k, 0, wr, ND_CQE_IMM | ND_CQE_RDMA_IMM |
                           (wr->flags & ND_OP_FLAG_SEND_AND_SOLICIT_EVENT ? ND_CQE_SOLICITED : 0));
}

/* A remote atomic, run here on the peer's memory (shm_atomic.c); the old value to our SGEs.
 * Out of line: inlined, it would weigh on every post's path (registers saved). */
static __attribute__((noinline, cold)) int do_atomic(struct nd_qp *qp, struct shm_conn *c, const struct nd_wr *wr)
{
    struct nd_mtab_share sh;
    uint64_t old;
    uint8_t *view;
    int st;

    if (!c->peer_locks && !(c->peer_locks = shm_atomic_locks(c->pid, &c->peer_mtab[0])))
        return -EOPNOTSUPP;
    touch_begin(qp);
    if (terminated(qp, c))
        st = -ECANCELED;
    else if (atomic_load_explicit(&c->pctl->no_remote_atomic, memory_order_relaxed))
        st = -EBADRQC;      /* the peer's QP takes none: an invalid request, as rxe answers */
    else if (ND_UNLIKELY(c->inv_count) && invalidated_by_us(c, wr->remote_token))
        st = -EFAULT;
    else if (nd_mtab_check_share(c->peer_mtab, ND_MTAB_ENTRIES, wr->remote_token, wr->remote_addr, sizeof(old),
                                 ND_ACCESS_REMOTE_ATOMIC, c->peer_pd, &sh))
        st = -EFAULT;
    else if (!(view = peer_view(c, &sh, wr->remote_addr, sizeof(old))) && !c->cma)
        st = bounce_of(qp, c) ? shm_bounce_atomic(c->bounce, wr, &old) : -EIO;
    else
        st = shm_atomic_run(c->pid, c->peer_locks, view, wr, &old);
    touch_end(qp);
    if (st == 0) {
        struct shm_sge_stream local = { wr->sge, 0, 0 };

        shm_stream_copy(&local, (uint8_t *)&old, sizeof(old), false);
    }
    return st;
}

static int do_rdma(struct nd_qp *qp, struct shm_conn *c, const struct nd_wr *wr)
{
    if (wr->type != ND_REQUEST_TYPE_WRITE && c->ord == 0)
        return -EBADRQC;   /* no outbound Read (nor atomic) was negotiated */
    if (ND_UNLIKELY(wr->atomic))
        return do_atomic(qp, c, wr);
    if (ND_UNLIKELY(wr->flags & ND_WR_IMM))
        return do_write_imm(qp, c, wr);
    if (!wr->total)
        return 0;
    return place_rdma(qp, c, wr);
}

/*
 * Would the peer refuse the receive @wr's Send is about to take (it flagged receives that
 * may fail their check)? Its table says, as the peer's own scatter would find it. A receive
 * not posted yet is not judged: the Send waits for it and comes back here. The peer's SRQ
 * checks its receives when they are posted.
 */
static __attribute__((noinline, cold)) bool peer_receive_refused(struct nd_qp *qp, struct shm_conn *c,
                                                                 const struct nd_wr *wr)
{
    uint32_t k, nsge;
    uint64_t left = wr->total;
    const struct nd_rwqe *w;

    if (c->psrq || next_receive(qp, c, &k, &w) != 0)
        return false;
    nsge = __atomic_load_n(&w->nsge, __ATOMIC_RELAXED);
    if (nsge > c->peer_max_sge)
        return true;
    for (uint32_t i = 0; i < nsge && left; i++) {
        struct nd_rwqe_sge s;
        struct nd_mtab_share sh;

        memcpy(&s, &w->sge[i], sizeof(s));
        uint32_t len = s.length < left ? s.length : (uint32_t)left;
        if (len && nd_mtab_check_share(c->peer_mtab, ND_MTAB_ENTRIES, s.token, s.addr, len, ND_ACCESS_LOCAL_WRITE,
                                       c->peer_recv_pd, &sh))
            return true;
        left -= len;
    }
    return false;       /* a receive too short is the receiver's to report */
}

/* The peer's next receive fails as a local protection error, as its RNIC would fail it
 * (its inbound ring says so: ND_CQE_LOC_PROT, nothing placed); our Send with a remote
 * operation error, which ends the connection. */
static __attribute__((noinline, cold)) int refuse_receive(struct nd_qp *qp, struct shm_conn *c)
{
    struct nd_cqe *e;

    nd_ring_learn_cons(&c->pprod, atomic_load_explicit(&qp->peer_consumed, memory_order_relaxed));
    if ((e = nd_ring_next(&c->pprod)) != NULL) {
        nd_cqe_set(e, c->next_peer_recv, 0, 0, ND_REQUEST_TYPE_RECEIVE, ND_CQE_LOC_PROT, qp->rq_posted,
                   atomic_load_explicit(&qp->inbound_hdr->cons, memory_order_relaxed));
        nd_ring_commit(&c->pprod, e);
        c->next_peer_recv++;
    }
    return -EREMOTEIO;
}

/* A connection either side flagged (ND_WIRE_*): 0 when the request goes as usual. */
static __attribute__((noinline, cold)) int execute_flagged(struct nd_qp *qp, struct shm_conn *c,
                                                           const struct nd_wr *wr, uint32_t words)
{
    if (words & ND_WIRE_TERMINATED)
        return -ECANCELED;
    if (wr->type == ND_REQUEST_TYPE_SEND && nd_qp_local_sges_ok(qp, wr) && peer_receive_refused(qp, c, wr))
        return refuse_receive(qp, c);
    return 0;
}

/* Run @wr now. -EINPROGRESS: it must wait (a Send with no receive). */
static int execute(struct nd_qp *qp, struct shm_conn *c, const struct nd_wr *wr)
{
    uint32_t words = wire_words(qp, c);
    int st;

    if (ND_UNLIKELY(words != 0) && (st = execute_flagged(qp, c, wr, words)) != 0)
        return st;
    if (wr->type == ND_REQUEST_TYPE_BIND || wr->type == ND_REQUEST_TYPE_INVALIDATE)
        return nd_qp_local_op(qp, wr);
    if (!nd_qp_local_sges_ok(qp, wr))
        return ND_LOCAL_PROTECTION;
    if (wr->type == ND_REQUEST_TYPE_SEND)
        return do_send(qp, c, wr);
    return do_rdma(qp, c, wr);
}

static bool sweep_left_alone(struct nd_qp *qp);
static bool sweep_once(struct nd_qp *qp);
static const struct shm_sweep_client sweep_client = { .left_alone = sweep_left_alone, .once = sweep_once };

static bool hold(struct nd_qp *qp, struct shm_conn *c, const struct nd_wr *wr)
{
    struct held *h;

    if (c->held_count == c->held_cap) {
        uint32_t cap = c->held_cap ? c->held_cap * 2 : 8;
        struct held *n = calloc(cap, sizeof(*n));

        if (!n)
            return false;
        for (uint32_t i = 0; i < c->held_count; i++)
            n[i] = c->held[(c->held_head + i) % c->held_cap];
        free(c->held);
        c->held = n;
        c->held_head = 0;
        c->held_cap = cap;
    }
    h = &c->held[(c->held_head + c->held_count) % c->held_cap];
    h->wr = *wr;
    h->sge = NULL;
    if ((wr->flags & ND_OP_FLAG_INLINE) && wr->nsge) {
        /* Inline data is the caller's again once the post returns: keep a copy, as one
         * SGE right behind the array (one allocation, freed with it). */
        h->sge = malloc(sizeof(nd_sge) + wr->total);
        if (!h->sge)
            return false;
        h->sge[0] = (nd_sge){ .buffer = h->sge + 1, .buffer_length = (uint32_t)wr->total };
        gather(wr, (uint8_t *)(h->sge + 1));
        h->wr.nsge = 1;
    } else if (wr->nsge) {
        h->sge = malloc(wr->nsge * sizeof(nd_sge));
        if (!h->sge)
            return false;
        memcpy(h->sge, wr->sge, wr->nsge * sizeof(nd_sge));
    }
    h->wr.sge = h->sge;
    if (c->held_count++ == 0) {
        c->held_since = nd_now_ns();
        shm_sweep_watch(qp, &sweep_client);
        if (!c->timed) {
            nd_port_timed(qp->icq->ov.port, 1);
            c->timed = true;
        }
    }
    return true;
}

static void finish(struct nd_qp *qp, const struct nd_wr *wr, int st)
{
    nd_qp_complete_initiator(qp, wr->index, st, wr->type == ND_REQUEST_TYPE_READ ? (uint32_t)wr->total : 0);
}

static void drop_held(struct shm_conn *c)
{
    free(c->held[c->held_head].sge);
    c->held_head = (c->held_head + 1) % c->held_cap;
    c->held_count--;
}

static void untime(struct nd_qp *qp, struct shm_conn *c)
{
    if (c->timed && c->held_count == 0) {
        nd_port_timed(qp->icq->ov.port, -1);
        c->timed = false;
    }
}

static void shm_post(struct nd_qp *qp, const struct nd_wr *wr)
{
    struct shm_conn *c = conn_of(qp);
    int st;

    if (c->held_count) {                /* keep order behind a held send */
        if (!hold(qp, c, wr))
            finish(qp, wr, -ENOMEM);
        return;
    }
    st = execute(qp, c, wr);
    if (st == -EINPROGRESS && hold(qp, c, wr))
        return;
    finish(qp, wr, st == -EINPROGRESS ? -ENOMEM : st);
}

/* Retry held requests; a send held past the RNR timeout fails -ETIMEDOUT. */
static void retry_held(struct nd_qp *qp, struct shm_conn *c)
{
    while (c->held_count && nd_qp_live(qp)) {
        struct held *h = &c->held[c->held_head];
        int st = execute(qp, c, &h->wr);

        if (st == -EINPROGRESS) {
            /* An empty SRQ must not end the connection (ND §3.2): wait as long as it takes. */
            uint64_t wait = __atomic_load_n(&qp->rnr_wait_ns, __ATOMIC_RELAXED);

            if (c->psrq || nd_now_ns() - c->held_since < wait)
                break;
            nd_log(ND_LOG_INFO, ND_SUB_SHM, "a Send waited %llu ms for a receive: -ETIMEDOUT",
                   (unsigned long long)(wait / 1000000));
            st = -ETIMEDOUT;
        }
        struct nd_wr wr = h->wr;
        drop_held(c);
        c->held_since = nd_now_ns();
        finish(qp, &wr, st);
    }
    untime(qp, c);
}

static bool sweep_left_alone(struct nd_qp *qp)
{
    struct shm_conn *c = conn_of(qp);
    uint32_t polls = atomic_load_explicit(&c->poll_count, memory_order_relaxed);
    bool alone = polls == c->sweep_seen_polls;

    c->sweep_seen_polls = polls;
    return alone;
}

static bool sweep_once(struct nd_qp *qp)
{
    struct shm_conn *c;

    if (qp->tops != &shm_transport || !qp->conn)
        return false;               /* closed, or never ours */
    c = conn_of(qp);
    if (nd_qp_live(qp)) {
        if (terminated(qp, c))
            nd_qp_fail_locked(qp, -ECANCELED);
        else
            retry_held(qp, c);
    }
    return nd_qp_live(qp) && c->held_count;
}

static void shm_queue_full(struct nd_qp *qp)
{
    struct shm_conn *c = conn_of(qp);

    if (terminated(qp, c))
        nd_qp_fail_locked(qp, -ECANCELED);
    else if (c->held_count)
        retry_held(qp, c);
}

/* Through the connector's socket, which it lends the QP while it holds it (QP lock held).
 * Without one there is nothing to ask: the connector's own watch covers the peer. */
static bool peer_alive(struct nd_qp *qp)
{
    char b;
    ssize_t n;

    if (qp->cm_sock < 0)
        return true;
    n = recv(qp->cm_sock, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
}

/* Called on every poll of the QP's CQs: cheap checks first, the lock only to act. */
static bool shm_progress(struct nd_qp *qp)
{
    struct shm_conn *c = conn_of(qp);
    bool busy = atomic_load_explicit(&c->held_count, memory_order_relaxed) != 0 || terminated(qp, c);
    bool check = false, served = false;

    /* A peer's requests in our bounce channel: ours to serve while we poll anyway. */
    if (ND_UNLIKELY(c->served != NULL))
        served = shm_bounce_poll(c->served) != 0;

    /* A plain increment: losing a count to a concurrent poller only shifts the next check. */
    uint32_t polls = atomic_load_explicit(&c->poll_count, memory_order_relaxed) + 1;

    atomic_store_explicit(&c->poll_count, polls, memory_order_relaxed);
    if ((polls & 63) == 0) {
        uint64_t now = nd_now_ns(), last = atomic_load_explicit(&c->last_check, memory_order_relaxed);

        /* One poller per interval wins the check (under the lock: the socket is lent). */
        check = now - last > LIVENESS_NS && atomic_compare_exchange_strong(&c->last_check, &last, now);
    }
    if (!busy && !check)
        return served;
    nd_lock_acquire(&qp->lock);
    /* The peer's socket is asked only once an interval: a send held for a receive is
     * retried on every poll, and a system call each time cost 7 per round trip in
     * ping-pongs whose sends raced the peer's receives. */
    if (nd_qp_live(qp)) {
        if (terminated(qp, c) || (check && !peer_alive(qp)))
            nd_qp_fail_locked(qp, -ECANCELED);
        else
            retry_held(qp, c);
    }
    nd_lock_release(&qp->lock);
    return true;
}

/* Longer than any one transfer takes; a peer inside one for longer is stopped or broken. */
#define QUIESCE_MAX_NS (10000ull * 1000000)

/* Wait for the peer to leave a transfer into or out of our memory (see touch_begin). */
static void shm_peer_quiesce(struct nd_qp *qp)
{
    struct shm_conn *c = (struct shm_conn *)__atomic_load_n(&qp->conn, __ATOMIC_ACQUIRE);
    uint64_t start = 0, checked = 0;
    uint32_t v;

    if (!c)
        return;
    shm_bounce_quiesce(c->served);
    atomic_thread_fence(memory_order_seq_cst);      /* our revocation (or Terminate) first */
    v = atomic_load_explicit(&c->pctl->touching_peer, memory_order_acquire);
    if (!(v & 1))
        return;
    for (uint32_t spins = 0; atomic_load_explicit(&c->pctl->touching_peer, memory_order_acquire) == v; spins++) {
        uint64_t now;

        if (spins < 1000) {
            nd_cpu_relax();
            continue;
        }
        nanosleep(&(struct timespec){ .tv_nsec = 20000 }, NULL);
        now = nd_now_ns();
        if (!start)
            start = checked = now;
        if (now - checked < 1000000)
            continue;
        checked = now;
        if (shm_peer_exiting(c->pid))
            return;                 /* its transfers ended with its last system call */
        if (now - start > QUIESCE_MAX_NS) {
            nd_log(ND_LOG_ERROR, ND_SUB_SHM, "peer %d stayed inside a transfer into our memory for %llu s: "
                   "connection ended", (int)c->pid, (unsigned long long)(QUIESCE_MAX_NS / 1000000000ull));
            nd_qp_fail(qp, -ETIMEDOUT);
            return;
        }
    }
}

static void shm_recv_posted(struct nd_qp *qp)
{
    struct shm_conn *c = conn_of(qp);

    if (atomic_load_explicit(&qp->ctl->peer_waiting, memory_order_acquire) &&
        atomic_exchange(&qp->ctl->peer_waiting, 0))
        poke(c->peer_icq_fd);
}

/* Between two processes of ours the entry carries it. */
static bool shm_carries_imm(struct nd_qp *qp)
{
    return true;
}

/* Every shm peer is netdirect: whether its lock page can be had is found at the atomic. */
static bool shm_carries_atomic(struct nd_qp *qp)
{
    return true;
}

static void shm_shutdown(struct nd_qp *qp, int why)
{
    struct shm_conn *c = conn_of(qp);

    /* The peer's posts check these words: stored first, a request it posts from now on
     * is flushed, however long the rest of this takes. */
    atomic_store(&qp->ctl->term_status, why);
    atomic_store(&qp->ctl->state, ND_WIRE_TERMINATED);
    atomic_store(&c->pctl->term_status, why);
    atomic_store(&c->pctl->state, ND_WIRE_TERMINATED);
    while (c->held_count) {
        struct nd_wr wr = c->held[c->held_head].wr;

        drop_held(c);
        finish(qp, &wr, -ECANCELED);
    }
    untime(qp, c);
    /* Wake the peer wherever it sleeps, so it flushes now. */
    poke(c->peer_rcq_fd);
    if (c->peer_icq_fd != c->peer_rcq_fd)  /* one CQ for both: one eventfd, one wake */
        poke(c->peer_icq_fd);
}

/* We let go of the peer's region: the released word is our last store there, and the peer
 * may give the area to its next queue pair once it sees it. */
static void release_peer_region(struct nd_adapter *a, uint8_t *region)
{
    if (!region)
        return;
    atomic_store_explicit(&((struct nd_qp_ctl *)region)->released, 1, memory_order_release);
    nd_peer_area_unmap(a, region);
}

static void shm_destroy(struct nd_qp *qp)
{
    struct shm_conn *c = conn_of(qp);

    if (!c)
        return;
    shm_sweep_forget(qp);
    shm_bounce_withdraw(qp, c->served);
    shm_bounce_unlink(c->bounce);
    release_peer_region(qp->adapter, c->peer_region);
    if (c->psrq)
        munmap(c->psrq, c->psl.size);
    unmap_peer_views(c);
    shm_atomic_unmap(c->peer_locks);
    shm_signal_put(c->prcq);
    shm_signal_put(c->picq);
    free(c->held);
    free(c);
    __atomic_store_n(&qp->conn, NULL, __ATOMIC_RELEASE);
}

/* Our queue pair's doorbell, in its control block: the peer rings it (shm_cm_ring). */
static uint32_t shm_cm_bell(struct nd_qp *qp)
{
    return atomic_load_explicit(&qp->ctl->cm_bell, memory_order_acquire);
}

static void shm_cm_ring(struct nd_qp *qp)
{
    struct shm_conn *c;

    nd_lock_acquire(&qp->lock);
    c = conn_of(qp);
    /* The peer's region stays mapped until destroy, and the peer keeps the area until we
     * store released there: the bell cannot land in another queue pair's region. */
    if (c && c->pctl)
        atomic_fetch_add_explicit(&c->pctl->cm_bell, 1, memory_order_release);
    nd_lock_release(&qp->lock);
}

static int shm_cm_attach(struct nd_qp *qp, int *sock, pid_t pid, struct nd_cm_msg *m, uint32_t ird,
                               uint32_t ord, bool active)
{
    (void)sock;
    return shm_attach(qp, pid, m, ird, ord);
}

const struct nd_transport_ops shm_transport = {
    .name = "shm",
    .cm_listen = shm_cm_listen,
    .cm_accept = shm_cm_accept,
    .cm_dial = shm_cm_dial,
    .cm_send = shm_send,
    .cm_recv = shm_cm_recv,
    .attach = shm_cm_attach,
    .cm_ring = shm_cm_ring,
    .cm_bell = shm_cm_bell,
    .attach_at_rtu = false,
    .post = shm_post,
    .recv_posted = shm_recv_posted,
    .progress = shm_progress,
    .lend = shm_agent_lend,
    .queue_full = shm_queue_full,
    .carries_imm = shm_carries_imm,
    .carries_atomic = shm_carries_atomic,
    .shutdown = shm_shutdown,
    .peer_quiesce = shm_peer_quiesce,
    .destroy = shm_destroy,
    .adapter_close = shm_adapter_close,
};

/* Peer @pid's SRQ region @ref, fetched and mapped (one per connection: SRQs are few). */
static void *map_peer_srq(pid_t pid, const struct nd_fd_ref *ref, size_t size)
{
    struct stat st;
    void *p = MAP_FAILED;
    int fd = nd_fd_fetch(pid, ref);

    if (fd >= 0 && nd_memfd_mappable(fd, size, &st))
        p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (fd >= 0)
        close(fd);
    return p == MAP_FAILED ? NULL : p;
}

/* The slots must also keep to the budget our own queue pairs keep (nd_qp_slot_size): a
 * peer claiming 64 KiB slots for 65536 receives would have us map 4 GiB of its memfd. */
bool shm_geometry_ok(const struct nd_cm_msg *msg)
{
    struct shm_qp_desc d;

    shm_desc_get(msg, &d);
    return d.rq_entries && !(d.rq_entries & (d.rq_entries - 1)) && d.rq_entries <= 65536 &&
           d.max_sge >= 1 && d.max_sge <= nd_caps.max_recv_sge && d.slot_size >= ND_SLOT_MIN &&
           d.slot_size <= ND_SLOT_MAX && !(d.slot_size & (d.slot_size - 1)) &&
           (d.slot_size == ND_SLOT_MIN || (uint64_t)d.slot_size * d.rq_entries <= ND_SLOT_BUDGET) &&
           d.arm_slot < ND_MAX_CQS_PER_ADAPTER && d.iarm_slot < ND_MAX_CQS_PER_ADAPTER;
}

int shm_attach(struct nd_qp *qp, pid_t pid, struct nd_cm_msg *msg, uint32_t ird, uint32_t ord)
{
    struct shm_qp_desc d;
    struct shm_conn *c = calloc(1, sizeof(*c));

    shm_desc_get(msg, &d);
    if (!c || !shm_geometry_ok(msg))
        goto err;
    nd_qp_layout(d.rq_entries, d.max_sge, d.slot_size, &c->pl);
    c->peer_slot_size = d.slot_size;
    c->peer_region = nd_peer_area_map(qp->adapter, pid, &d.refs[0], d.region_off, c->pl.size);
    c->peer_adapter = nd_adapter_map_peer(qp->adapter, pid, &d.refs[1]);
    if (!c->peer_region || !c->peer_adapter)
        goto err;
    c->pctl = (struct nd_qp_ctl *)c->peer_region;
    if (c->pctl->magic != ND_QP_REGION_MAGIC || c->pctl->rq_entries != d.rq_entries)
        goto err;
    nd_qp_region_populate(c->peer_region, &c->pl, d.slot_size);
    c->peer_mtab = (const struct nd_mtab_entry *)(c->peer_adapter + ND_ADAPTER_ARM_BYTES);
    c->peer_rq_entries = d.rq_entries;
    c->peer_max_sge = d.max_sge;
    c->peer_pd = d.pd;
    c->peer_recv_pd = d.recv_pd;
    c->pprod.hdr = (struct nd_ring_hdr *)(c->peer_region + c->pl.ring);
    c->pprod.ents = (struct nd_cqe *)(c->peer_region + c->pl.ents);
    c->pprod.mask = d.rq_entries - 1;
    c->pprod.prod = atomic_load(&c->pprod.hdr->prod);
    c->pprod.cons_seen = atomic_load(&c->pprod.hdr->cons);
    c->pprod.arm = (const _Atomic uint32_t *)(c->peer_adapter + (size_t)d.arm_slot * ND_CACHELINE);
    if (d.srq_entries) {
        if (!d.srq_max_sge || d.srq_max_sge > nd_caps.max_recv_sge || (d.srq_entries & (d.srq_entries - 1)) ||
            d.srq_entries > 65536)
            goto err;
        nd_srq_layout(d.srq_entries, d.srq_max_sge, &c->psl);
        c->psrq = map_peer_srq(pid, &d.refs[4], c->psl.size);
        if (!c->psrq)
            goto err;
        c->psrq_ctl = (struct nd_srq_ctl *)c->psrq;
        c->psrq_entries = d.srq_entries;
        c->psrq_max_sge = d.srq_max_sge;
    }
    c->cma = shm_cma_allowed(pid);
    if ((d.flags & SHM_DESC_NO_CMA) && !(c->served = shm_bounce_offer(qp)))
        goto err;
    c->prcq = shm_signal_get(pid, d.nonce, d.rcq_serial, d.refs[2].fd);
    c->picq = shm_signal_get(pid, d.nonce, d.icq_serial, d.refs[3].fd);
    if (!c->prcq || !c->picq)
        goto err;
    c->peer_rcq_fd = shm_signal_fd(c->prcq);
    c->peer_icq_fd = shm_signal_fd(c->picq);
    c->pprod.signal_fd = c->peer_rcq_fd;
    c->next_peer_recv = 0;
    c->pid = pid;
    c->ird = ird;
    c->ord = ord;
    c->last_check = nd_now_ns();
    c->base = (struct nd_conn){ .ops = &shm_transport, .qp = qp };
    if (!nd_qp_set_connected(qp, &c->base))
        goto err;               /* closed meanwhile */
    __atomic_store_n(&qp->has_progress, true, __ATOMIC_RELEASE);
    return 0;
err:
    if (c) {
        shm_bounce_withdraw(qp, c->served);
        release_peer_region(qp->adapter, c->peer_region);
        if (c->psrq)
            munmap(c->psrq, c->psl.size);
        shm_signal_put(c->prcq);
        shm_signal_put(c->picq);
        free(c);
    }
    return -ECONNABORTED;
}

void shm_peer_gone(struct nd_qp *qp)
{
    nd_qp_fail(qp, -ECANCELED);
}
