/* SPDX-License-Identifier: MIT */
/*
 * The verbs front end (libibverbs.so.1): rdma-core 44's ABI over netdirect's core. The
 * objects handed out are rdma-core's public structs, each at the start of ours, so that
 * applications read their fields and call the inline ops through them.
 */
#ifndef ND_VERBS_INT_H
#define ND_VERBS_INT_H

#include <stdlib.h>
#include <infiniband/verbs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/core.h"

#define VB_API __attribute__((visibility("default")))
#define VB_PORT 1                   /* the one port */
#define VB_GID_MAX 128              /* the GID table's length */
/* The port's width and speed (ibv_query_port: 4X, EDR) as sysfs names them. */
#define VB_PORT_WIDTH 2
#define VB_PORT_SPEED 32
#define VB_PORT_RATE "100 Gb/sec (4X EDR)"
#define VB_AV_SLOTS 255             /* QPs per AV listener (av.c): the QP number's low byte */
#define VB_AV_LISTENERS 64

enum vb_personality { VB_ROCE, VB_IWARP };

/*
 * The one device of the network namespace: every interface's addresses are its port's GIDs
 * (the core's adapter for it serves every interface), so a connection made through any
 * address finds the PD and memory the application registered.
 */
struct vb_device {
    struct ibv_device dev;
    enum vb_personality personality;
    uint64_t guid;                  /* network order */
};

/*
 * A core request whose completion the context's event thread (events.c) takes from the
 * port: it carries its own handler, run on that thread with the request's status, so that
 * the thread knows nothing of what it serves (CQ notifies, SRQ limits, AV connections).
 */
struct vb_work {
    nd_overlapped ov;               /* first: what the core completes */
    void (*done)(struct vb_work *w, int st);
};

struct vb_context {
    struct verbs_context vctx;      /* its ibv_context is what applications hold */
    struct vb_device *dev;
    int async_pipe[2];              /* async_fd: whole struct ibv_async_event records */
    /* The core's adapter on every interface, and a port for its overlapped requests. Its
     * token table holds every PD's memory, each entry marked with its PD's id (pd.handle),
     * and serves a QP only the memory of its own PD. */
    nd_adapter *adapter;
    nd_port *port;
    /* PD ids in use (bit per id; id 0 is the ND API's, never given out). */
    pthread_mutex_t pd_lock;
    uint64_t pd_ids[65536 / 64];
    /* The event thread (events.c): waits on the port for CQs' notify requests. */
    pthread_mutex_t event_lock;
    pthread_t event_thread;
    bool event_started;
    nd_overlapped stop_ov;
    nd_overlapped kick_ov;          /* wakes the event thread (vb_event_thread_kick) */
    bool kick_queued;               /* atomic */
    /* The event thread's deadlines: how long it may wait, in ms (-1: until something
     * completes); av.c's, set before the first deadline (atomic). */
    int (*event_tick)(struct vb_context *c);
    /* QPs connected with an address vector (av.c), under av_lock. */
    pthread_mutex_t av_lock;
    struct av_listener *av_listeners[VB_AV_LISTENERS];
    uint32_t av_nlisteners;
    uint32_t av_deadlines;          /* QPs whose held sends have a deadline */
    struct av_link *av_orphans;     /* links of destroyed QPs, a request still out */
    bool av_closing;
    /* Memory windows, found by rkey for IBV_WR_LOCAL_INV (mw_lock). */
    pthread_mutex_t mw_lock;
    struct vb_mw *windows;
};

struct vb_pd {
    struct ibv_pd pd;
};

/* The core's protection domain for @pd. */
static inline uint16_t vb_pd_id(const struct ibv_pd *pd)
{
    return (uint16_t)pd->handle;
}

struct vb_mr {
    struct ibv_mr mr;
    struct nd_mr *core;
    bool mw_bind;                   /* registered with IBV_ACCESS_MW_BIND */
    unsigned access;                /* as registered (ibv_rereg_mr keeps what it does not change) */
};

/* A window's rkey is the core's token: its slot << 8 | a key byte, which type 2 binds take
 * from the caller (ibv_inc_rkey) and type 1 binds advance. */
struct vb_mw {
    struct ibv_mw mw;
    nd_mw *core;
    uint32_t slot;                  /* rkey >> 8, fixed for the window's life */
    struct vb_mw *next;             /* in the context's list (mw_lock) */
};

struct vb_channel_notify;

struct vb_cq {
    union {
        struct ibv_cq cq;
        struct ibv_cq_ex cqx;       /* of a CQ made by ibv_create_cq_ex (cq_ex.c) */
    };
    struct ibv_wc cur;              /* an extended CQ's current completion (its poll's) */
    nd_cq *core;
    struct vb_work notify;          /* the one notify request of a CQ without a channel */
    struct vb_channel_notify *cnotify;  /* of a CQ with one: its own memory (cq.c) */
    struct vb_cq *channel_next;     /* the channel's CQs, for its waiters' spin (channel lock) */
    bool armed;                     /* notify is with the core, or its event queued (cq.mutex) */
    bool dying;                     /* ibv_destroy_cq has begun (cq.mutex) */
    uint32_t events_delivered;      /* taken by ibv_get_cq_event (cq.mutex) */
    struct vb_qp *graves;           /* destroyed QPs this CQ may still name (cq.mutex) */
    uint32_t empty_polls;           /* in a row (relaxed atomics: only a hint) */
    uint64_t empty_since_ns;        /* when the row reached VB_POLL_CLOCK_EVERY */
};

/* A QP's connection made with an address vector (av.c); av_lock, except hold. */
struct vb_av_qp {
    struct av_listener *listener;   /* whose slot gives the QP its number */
    uint32_t slot;
    bool on;                        /* moved to RTR with an address vector */
    bool dialer;
    bool hold;                      /* atomic: sends are held until the connection is up */
    /* The connection failed while the QP was in RTR: it fails at the RTS step, as an RNIC's
     * QP would at its first send (av_lock). */
    bool failed_in_rtr;
    uint32_t dest_qpn;
    uint32_t ird, ord;
    struct ibv_ah_attr ah;          /* as RTR gave it, for ibv_query_qp */
    uint8_t timeout, retry_cnt, rnr_retry;  /* as RTS gave them (timeout: or the CM's option) */
    uint64_t retry_ns;              /* how long held sends may wait (0: forever) */
    uint64_t deadline_ns;           /* when the held sends fail (0: none) */
    struct av_link *link;           /* the connection: dialling, accepting or up */
    struct av_link *parked;         /* a request that came before our RTR */
    uint32_t parked_src;            /* the QP number it came from */
    struct av_held *held, **held_tail;
    uint32_t nheld;
};

/* The ibv_wr_* batch of an extended QP (qp_ex.c). */
struct vb_wr_batch {
    pthread_mutex_t lock;
    uint32_t cap, n;                /* requests: room (the send queue's depth), built */
    uint32_t max_sge;
    int err;                        /* the first builder error, 0 if none */
    struct ibv_send_wr *wr;         /* cap of them */
    struct ibv_sge *sge;            /* max_sge per request */
    /* Inline bytes of the batch, appended; an inline request's one SGE holds its offset
     * here until complete turns it into an address (the store may move as it grows). */
    uint8_t *inl;
    size_t inl_len, inl_cap;
};

struct vb_qp {
    union {
        struct ibv_qp qp;
        struct ibv_qp_ex qpx;       /* of a QP made with send ops flags (qp_ex.c) */
    };
    nd_qp *core;
    struct ibv_qp_cap cap;          /* as granted */
    bool sig_all;
    bool cm_connected;              /* the CM made its connection */
    bool cm_attaching;              /* atomic: the CM is connecting it; posts wait (av.hold is set) */
    uint32_t ird, ord;              /* the connection's read limits */
    struct vb_av_qp av;
    /* Destroyed: the core may still hand over completions it had queued, which polls drop
     * (rdma-core's providers clean them out of the CQ). The QP is freed with the last of
     * its CQs (grave_refs of them), so a poll never reads freed memory. */
    bool dead;                      /* atomic */
    bool closing;                   /* ibv_destroy_qp has begun (qp.mutex) */
    uint32_t grave_refs;            /* atomic: the CQs', and a CM's hold (ndv_qp_find) */
    struct vb_qp *grave_next[2];    /* in the send CQ's and the receive CQ's lists */
    /* UD (ud.c). Its sends take the held path's branch (av.hold stays set for life), where
     * they go out as datagrams: the connected QPs' fast path pays nothing for it. */
    bool ud;
    uint32_t qkey, sq_psn;
    struct vb_wr_batch *batch;      /* the ibv_wr_* batch of an extended QP, else NULL */
};

/* The verbs object around the rdma-core one an application holds (each embeds it). */
#define vb_container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))

static inline struct vb_device *to_vb_device(struct ibv_device *d)
{
    return vb_container_of(d, struct vb_device, dev);
}

static inline struct vb_mr *to_vb_mr(struct ibv_mr *mr)
{
    return vb_container_of(mr, struct vb_mr, mr);
}

static inline struct vb_mw *to_vb_mw(struct ibv_mw *mw)
{
    return vb_container_of(mw, struct vb_mw, mw);
}

static inline struct vb_cq *to_vb_cq(struct ibv_cq *cq)
{
    return vb_container_of(cq, struct vb_cq, cq);
}

static inline struct vb_qp *to_vb_qp(struct ibv_qp *qp)
{
    return vb_container_of(qp, struct vb_qp, qp);
}

/* A destroyed QP's memory, once the last reference to its grave goes (cq.c, ndv_qp_release). */
static inline void vb_qp_free(struct vb_qp *q)
{
    pthread_cond_destroy(&q->qp.cond);
    pthread_mutex_destroy(&q->qp.mutex);
    free(q);
}

struct vb_gid {
    union ibv_gid gid;
    bool ipv4;
    char ifname[IF_NAMESIZE];       /* the interface with the address */
    unsigned ifindex;
};

static inline struct vb_context *vb_ctx(struct ibv_context *c)
{
    return vb_container_of(c, struct vb_context, vctx.context);
}

enum vb_personality vb_personality(void);
const char *vb_personality_name(enum vb_personality p);
struct vb_device *vb_device_get(void);
/* The port's GIDs now: IPv4 addresses (IPv4-mapped, RoCE v2) first, then IPv6; in each,
 * loopback's after the other interfaces'. */
uint32_t vb_gids(struct vb_gid *out, uint32_t max);
/* The device tree (devtree.c): written into the user's directory, 0 or -errno; and
 * written again where netdirect-run made it. */
int vb_devtree_publish(char *root, size_t len);
void vb_devtree_refresh(void);
uint32_t vb_port_mtu(void);         /* the largest interface MTU, as an IBV_MTU_* */
void vb_device_attr(const struct vb_device *d, struct ibv_device_attr *attr);
void vb_ops_fill(struct ibv_context_ops *ops);
struct ibv_mw *vb_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int vb_dealloc_mw(struct ibv_mw *mw);
int vb_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind);
/* IBV_WR_BIND_MW and IBV_WR_LOCAL_INV of ibv_post_send: 0 or an errno. */
int vb_post_bind(struct ibv_qp *qp, const struct ibv_send_wr *wr, uint32_t flags);
int vb_post_bind1(struct ibv_qp *qp, struct ibv_mw *mw, const struct ibv_mw_bind_info *b, uint64_t wr_id,
                  uint32_t flags, uint8_t key);
int vb_bind_wr_check(struct ibv_qp *qp, const struct ibv_send_wr *wr);
/* Whether a type 1 bind's rights and range hold against its region: 0 or EINVAL. */
int vb_bind_check(const struct vb_mw *w, const struct ibv_mw_bind_info *b);
int vb_post_local_inv(struct vb_context *c, nd_qp *qp, const struct ibv_send_wr *wr, uint32_t flags);
int vb_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
/* UD queue pairs (ud.c). */
struct nd_qp_sizes;
int vb_ud_create(struct vb_context *c, struct vb_qp *q, struct ibv_qp_init_attr *attr, const struct nd_qp_sizes *sz);
int vb_ud_modify(struct vb_qp *q, struct ibv_qp_attr *attr, int mask);
int vb_ud_post_send(struct vb_qp *q, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
/* An address handle (ah.c): the IP address its destination GID names. */
struct vb_ah {
    struct ibv_ah ah;
    struct ibv_ah_attr attr;
    struct sockaddr_storage dest;   /* IPv4-mapped GIDs: AF_INET */
};

/* Where an address handle's datagrams go: addr and addr_len of @d. */
static inline void vb_ah_dest(const struct ibv_ah *ah, struct nd_dgram_dest *d)
{
    const struct vb_ah *a = vb_container_of(ah, struct vb_ah, ah);

    d->addr = (const struct sockaddr *)&a->dest;
    d->addr_len = a->dest.ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
}
/* Extended CQs and QPs (cq_ex.c, qp_ex.c). */
struct ibv_cq_ex *vb_create_cq_ex(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *a);
struct ibv_qp *vb_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *ax);
/* An extended QP's batch, freed with the QP (qp.c). */
static inline void vb_qp_ex_free(struct vb_qp *q)
{
    struct vb_wr_batch *b = q->batch;

    if (!b)
        return;
    pthread_mutex_destroy(&b->lock);
    free(b->wr);
    free(b->sge);
    free(b->inl);
    free(b);
    q->batch = NULL;
}
int vb_post_send_now(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int vb_send_wr_check(struct vb_qp *q, const struct ibv_send_wr *wr);
/* Until the CM has connected the QP (ndv_qp_cm_attaching). */
void vb_wait_cm_attach(struct vb_qp *q);
nd_request_type vb_request_type(enum ibv_wr_opcode op);
int vb_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
void vb_cq_bury(struct ibv_cq *cq, struct vb_qp *q, int slot);
/* Move @q to ERR (everything outstanding flushes) and say so in ibv_qp.state. */
void vb_qp_enter_err(struct vb_qp *q);
int vb_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
nd_srq *vb_srq_core(struct ibv_srq *srq);
int vb_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int vb_event_thread_start(struct vb_context *c);   /* 0 or an errno */
/* Queue an asynchronous event for ibv_get_async_event (the context's async_fd). */
void vb_async_push(struct vb_context *c, const struct ibv_async_event *ev);
void vb_event_thread_stop(struct vb_context *c);
void vb_event_thread_kick(struct vb_context *c);

/* av.c: QPs connected by the application's own exchange. */
uint32_t vb_av_attach(struct vb_context *c, struct vb_qp *q);
struct vb_qp *vb_av_find(struct vb_context *c, uint32_t qpn);
void vb_av_detach(struct vb_qp *q);
void vb_av_reset(struct vb_qp *q);
/* Is the address vector of an RTR step one av.c can connect (0, or EINVAL)? */
int vb_av_check(const struct vb_qp *q, const struct ibv_qp_attr *attr, int mask);
/* Start the connection the vector names, the QP in RTR already. */
int vb_av_rtr(struct vb_qp *q, const struct ibv_qp_attr *attr, int mask);
void vb_av_rts(struct vb_qp *q, const struct ibv_qp_attr *attr, int mask);
/* Never inlined into ibv_post_send's path: there it would cost every post a prologue. */
__attribute__((noinline, cold)) int vb_av_post_send(struct vb_qp *q, struct ibv_send_wr *wr,
                                                    struct ibv_send_wr **bad);
/* ibv_bind_mw of a type 1 window on a QP whose sends are held: held too. */
int vb_av_hold_bind1(struct vb_qp *q, struct ibv_mw *mw, const struct ibv_mw_bind *bind, uint32_t flags,
                     uint8_t key);
int vb_av_tick(struct vb_context *c);
void vb_av_close(struct vb_context *c);

#endif
