/* SPDX-License-Identifier: MIT */
/* The core: the objects the front ends (ND API, verbs, rdma_cm; the ND SPI through the ND
 * API) and the transports share. */
#ifndef ND_CORE_H
#define ND_CORE_H

#include <errno.h>
#include <netdirect/types.h>
#include <netdirect/config.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * A descriptor of a same-host peer, named rather than passed: its number in the peer and
 * the file it must be (device and inode; 0 for an eventfd, known by the peer's CQ serial).
 * The receiver looks the file up among what it has mapped already and fetches it with
 * pidfd_getfd only when it has not: most connections then move no descriptor at all, and
 * neither side pays SCM_RIGHTS, fstat and close for each one.
 */
struct nd_fd_ref {
    int32_t fd;
    uint32_t reserved;
    uint64_t dev, ino;
};

#define ND_API __attribute__((visibility("default")))
/* The core's door: what the front ends call (src/nd wraps each one for ND; libibverbs
 * exports those librdmacm needs through its private version node). */
#define ND_DOOR __attribute__((visibility("default")))

/*
 * The core's status, in no front end's terms: 0, or a negative errno (-EINPROGRESS: the
 * request is pending and completes later). Two refinements a front end may read and the
 * errno front ends read as EINVAL: ND_EARG(n), the call's nth argument is invalid (ND
 * names it, ND_INVALID_PARAMETER_n), and ND_EARG_MIX, a combination of them is. A value
 * outside both ranges is a program's own status passed through untouched (nd_port_post).
 */
#define ND_EARG_BASE 4200
#define ND_EARG(n) (-(ND_EARG_BASE + (n)))
#define ND_EARG_MIX ND_EARG(0)
#define ND_EARG_LAST 10
static inline bool nd_err_is_arg(int st)
{
    return st <= ND_EARG(0) && st >= ND_EARG(ND_EARG_LAST);
}
#define ND_LIKELY(x) __builtin_expect(!!(x), 1)
#define ND_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define ND_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define ND_CACHELINE 64

#if defined(__x86_64__) || defined(__i386__)
#define nd_cpu_relax() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define nd_cpu_relax() __asm__ __volatile__("yield" ::: "memory")
#else
#define nd_cpu_relax() __asm__ __volatile__("" ::: "memory")
#endif

enum nd_magic {
    ND_MAGIC_ADAPTER = 0x4e444150, ND_MAGIC_PORT = 0x4e44504f, ND_MAGIC_CQ = 0x4e444351,
    ND_MAGIC_SRQ = 0x4e445352, ND_MAGIC_MR = 0x4e444d52, ND_MAGIC_MW = 0x4e444d57,
    ND_MAGIC_QP = 0x4e445150, ND_MAGIC_CONNECTOR = 0x4e44434e, ND_MAGIC_LISTENER = 0x4e444c53,
    ND_MAGIC_DEAD = 0xdeadbeef,
};

/*
 * What the device offers, in neither front end's terms: the core enforces these, and ND's
 * nd_adapter_query and verbs' ibv_query_device each fill their own struct from them.
 */
struct nd_caps {
    uint16_t vendor_id, device_id;
    uint64_t max_mr_size;           /* bytes in one registration */
    uint64_t max_mw_size;           /* bytes in one window bind */
    uint32_t max_send_sge, max_recv_sge, max_read_sge;
    uint32_t max_msg_size;          /* bytes per request, all SGEs */
    uint32_t max_inline;            /* inline bytes per request */
    uint32_t max_ird, max_ord;      /* inbound and outbound RDMA Reads in flight per QP */
    uint32_t max_send_wr, max_recv_wr, max_srq_wr, max_cqe;
    uint32_t max_qp, max_srq, max_pd, max_cq, max_mr;
    uint32_t max_connect_pdata, max_accept_pdata;   /* private data of a request, of a reply */
    uint32_t inline_threshold;      /* below this, copying inline pays (a hint) */
    uint32_t large_threshold;       /* above this, Read/Write beat Send (a hint) */
};
extern const struct nd_caps nd_caps;

#define ND_MAX_CQS_PER_ADAPTER 32768u   /* arm words in the adapter's shared region */
#define ND_MTAB_ENTRIES (1u << 18)      /* MR/MW tokens per adapter */
/* The adapter's shared region: arm words, then the token table (a cache line an entry). */
#define ND_ADAPTER_ARM_BYTES ((size_t)ND_MAX_CQS_PER_ADAPTER * ND_CACHELINE)
#define ND_MTAB_ENTRY_BYTES 64
#define ND_ADAPTER_REGION_BYTES (ND_ADAPTER_ARM_BYTES + (size_t)ND_MTAB_ENTRIES * ND_MTAB_ENTRY_BYTES)

/*
 * Why a request failed, told apart as far as an RNIC tells it: whose memory failed its
 * check (a receive's or a requester's own: local protection; the peer's: remote access),
 * what was flushed rather than failed. ND folds these into fewer NTSTATUS codes; a front
 * end that reports them (verbs) reads this instead.
 */
enum nd_wc_status {
    ND_WCS_SUCCESS = 0,
    ND_WCS_FLUSHED,                 /* outstanding when the queue pair left service */
    ND_WCS_LOC_LEN,                 /* a message longer than the receive, or too long to send */
    ND_WCS_LOC_PROT,                /* the request's own memory: a receive's, or a gather list's */
    ND_WCS_REM_ACCESS,              /* the peer refused the remote key, range or rights */
    ND_WCS_REM_INV_REQ,             /* the peer could not run the request (no Read allowed) */
    ND_WCS_RNR_RETRY,               /* a Send found no receive for too long */
    ND_WCS_RETRY_EXC,               /* the connection broke under it */
    ND_WCS_MW_BIND,                 /* a bind the window or region could not take */
    ND_WCS_LOC_QP_OP,               /* a request this connection cannot carry (immediate data to siw) */
    ND_WCS_REM_OP,                  /* the peer could not complete it: its receive's memory failed */
    ND_WCS_GENERAL,
};

/* The neutral cause of a result with @st for a request of @type; @local: the transport
 * found the requester's own memory at fault (ND_WC_LOC_PROT). */
enum nd_wc_status nd_wc_status_of(int st, nd_request_type type, bool local);
/* The errno a status means, the one table the errno front ends (verbs, rdma_cm) share;
 * 0 for success and for -EINPROGRESS. A call that means something else by a status (a full
 * send queue, immediate data a peer cannot take) says so where it is made. */
int nd_errno_of(int st);
/* The status's name, for logs. */
const char *nd_err_name(int st);

/*
 * A completion as a front end other than ND's reads it (verbs): nd_result's layout, written
 * once by the core, with what verbs reports beyond ND in bytes ND leaves unused: the upper
 * bytes of the request type (zero for ND, whose polls never ask for more) and the padding
 * after it. may_alias: the core writes it as an nd_result and the front end reads it as
 * this. The neutral status is derived from status, type and ND_WC_LOC_PROT
 * (nd_wc_status_of) only for a completion that failed.
 */
struct __attribute__((may_alias)) nd_wc {
    int status;
    uint32_t bytes;
    void *qp_context;
    void *request_context;
    uint8_t type;                   /* nd_request_type */
    uint8_t flags;                  /* ND_WC_* */
    uint16_t src_port;              /* under ND_WC_DGRAM: the sending QP's port (ND_DGRAM_QPN) */
    uint32_t imm;                   /* as the sender gave it, under ND_WC_IMM or ND_WC_INV */
};
#define ND_WC_IMM 0x1u              /* imm is valid */
#define ND_WC_RDMA_IMM 0x2u         /* the receive was consumed by an RDMA Write with immediate */
#define ND_WC_INV 0x4u              /* a Send with Invalidate: imm is the STag it invalidated */
#define ND_WC_LOC_PROT 0x8u         /* a failed request's own memory was at fault */
#define ND_WC_DGRAM 0x10u           /* a datagram's receive: src_port names its sender */
#define ND_WC_DGRAM_V6 0x20u        /* ... which came over IPv6 (its GRH holds an IPv6 header) */

/* Request types beyond ND's, of verbs' remote atomics (ND never posts them): 8 aligned
 * bytes of the peer's memory changed, their old value returned to the request's buffer. */
#define ND_REQUEST_TYPE_FETCH_ADD 6
#define ND_REQUEST_TYPE_CMP_SWAP 7
static inline bool nd_type_is_atomic(uint8_t type)
{
    return type == ND_REQUEST_TYPE_FETCH_ADD || type == ND_REQUEST_TYPE_CMP_SWAP;
}

/*
 * Datagram queue pairs (UD). Each has a UDP port of its own, and its number says which:
 * port << 8 | 0xff. A peer that learned (address, QP number) can send to it without asking
 * anyone, and no number of a connected verbs QP (port << 8 | a slot below 0xff: verbs'
 * av.c) is ever one of these.
 */
#define ND_DGRAM_QPN(port) ((uint32_t)(port) << 8 | 0xffu)
#define ND_DGRAM_PORT(qpn) ((uint16_t)((qpn) >> 8))
#define ND_DGRAM_IS_QPN(qpn) (((qpn) & 0xffu) == 0xffu && (qpn) >> 24 == 0 && ((qpn) >> 8) != 0)
/* The bytes before a datagram's payload in its receive: the space of InfiniBand's GRH,
 * which holds the IPv6 header of the datagram, or in its last 20 bytes the IPv4 one (RoCE v2). */
#define ND_DGRAM_GRH 40u

/* Where a datagram goes: the destination's IP address, QP number and Q_Key. */
struct nd_dgram_dest {
    const struct sockaddr *addr;
    uint32_t addr_len;
    uint32_t qpn;
    uint32_t qkey;
};

_Static_assert(sizeof(struct nd_wc) == sizeof(nd_result) && sizeof(nd_request_type) == 4 &&
                   offsetof(struct nd_wc, status) == offsetof(nd_result, status) &&
                   offsetof(struct nd_wc, bytes) == offsetof(nd_result, bytes_transferred) &&
                   offsetof(struct nd_wc, qp_context) == offsetof(nd_result, qp_context) &&
                   offsetof(struct nd_wc, request_context) == offsetof(nd_result, request_context) &&
                   offsetof(struct nd_wc, type) == offsetof(nd_result, request_type) &&
                   __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "struct nd_wc overlays nd_result, its type in the request type's low byte");

/* ndc_cq_get_results, into completions that carry the verbs fields. */
uint32_t nd_cq_get_wc(nd_cq *cq, struct nd_wc *wc, uint32_t max);
/* Does a queue pair use this CQ (nd_cq_close would refuse it)? */
bool nd_cq_in_use(const nd_cq *cq);
/* Forget the results of queue pair context @qp_context a closed queue pair left on @cq (its
 * flushes): verbs' RESET discards a QP's work, as rdma-core's providers clean its CQ entries. */
void nd_cq_forget(nd_cq *cq, const void *qp_context);

/* ---- the CM's queue of incoming requests (listener.c) ---- */

/*
 * For a front end that makes an object of its own per incoming request (rdma_cm): @fn(@ctx)
 * runs each time requests join @l's queue, without the listener's lock, on the thread that
 * serves the listener's port; NULL stops it. Set it before nd_listener_listen: a request
 * that comes earlier waits in the queue unannounced until the next one.
 */
typedef void (*nd_request_fn)(void *ctx);
void ndc_listener_notify_requests(nd_listener *l, nd_request_fn fn, void *ctx);
/*
 * The oldest queued request, on a new connector of the listener's adapter and port, in the
 * state GetConnectionRequest leaves one (accept, reject, read its data). -EINPROGRESS: none.
 * ND's GetConnectionRequest draws from the same queue, pending calls first.
 */
int ndc_listener_take_request(nd_listener *l, nd_connector **out);

/* ---- overlapped requests and completion ports (ov.c, port.c) ---- */

struct nd_ovobj;
struct nd_ovobj_ops {
    /* Block until @ov is no longer pending, driving the object's progress. NULL: futex wait. */
    void (*wait)(struct nd_ovobj *obj, nd_overlapped *ov);
    /* Optional: move the object's progress once, without blocking (GetOverlappedResult
     * without wait on a pending request: an application that polls so, and waits on no
     * port, must still see a peer's disconnect or a CQ event). */
    void (*poll)(struct nd_ovobj *obj);
};

/* The IND2Overlapped part of an object: its port and its FIFO of pending requests. */
struct nd_ovobj {
    struct nd_port *port;
    const struct nd_ovobj_ops *ops;
    nd_overlapped *head, *tail;     /* pending, in request order; guarded by the object lock */
    /* Threads in the object's wait (ops->wait) poll its descriptors and their own wake
     * eventfd (one per thread, not per object: ten thousand connectors must not cost ten
     * thousand descriptors). A request completed by another thread (one that pumped the
     * object for its own wait, or the port) writes the eventfd of each waiter listed here. */
    pthread_mutex_t wait_lock;
    struct nd_ov_waiter *wait_list;   /* guarded by wait_lock */
    uint32_t waiters;               /* atomic: the list's length, read without the lock */
};

/*
 * Completed requests bound for one port, delivered in order by nd_port_deliver. Holds
 * pointers only: once a request's status is published its owner may free it, so nothing
 * of ours may live inside it any more (the port's queue is an array too, as IOCP's is).
 */
struct nd_ovbatch {
    struct nd_port *port;
    nd_overlapped **items;
    uint32_t n, cap;
    nd_overlapped *inline_items[8];
};

void nd_ovobj_init(struct nd_ovobj *obj, struct nd_port *port, const struct nd_ovobj_ops *ops);
void nd_ovobj_fini(struct nd_ovobj *obj);
/* Around an object's wait loop: the wake descriptor to poll (or -1), then drain it on wake. */
int nd_ovobj_wait_begin(struct nd_ovobj *obj);
void nd_ovobj_wait_end(struct nd_ovobj *obj);
void nd_ovobj_wake_drain(struct nd_ovobj *obj);
void nd_ov_start(struct nd_ovobj *obj, nd_overlapped *ov);      /* append to pending */
void nd_ov_requeue(struct nd_ovobj *obj, nd_overlapped *ov);    /* re-append, still pending */
bool nd_ov_remove(struct nd_ovobj *obj, nd_overlapped *ov);     /* take out of pending */
nd_overlapped *nd_ov_take_all(struct nd_ovobj *obj);              /* detach pending list */
nd_overlapped *nd_ov_next(nd_overlapped *ov);
void nd_ov_finish(nd_overlapped *ov, int status, uint64_t bytes, struct nd_ovbatch *batch);
void nd_ovbatch_init(struct nd_ovbatch *b, struct nd_port *port);
void nd_port_deliver(struct nd_ovbatch *b);
/* Take @ov, completed, back out of @port's queue before anyone dequeues it: false when it
 * is not there (taken already, or not delivered yet). */
bool nd_port_unqueue(struct nd_port *port, nd_overlapped *ov);
/* The oldest completed request of @port, waiting up to @timeout_ms (-1: for ever) as
 * nd_port_wait does, but a signal ends the wait: 0, -EAGAIN (none came), -EINTR, -EIO. */
int nd_port_take(struct nd_port *port, int timeout_ms, nd_overlapped **out);
/* The oldest request already in @port's queue, without a system call: false when none. */
bool nd_port_take_queued(struct nd_port *port, nd_overlapped **out);
/* Move what has arrived for @cq into it, completing its notify request if it is due (as a
 * poll of the CQ would): for a waiter that spins before it sleeps. */
void nd_cq_look(struct nd_cq *cq);
/* Arm @cq for its next completion (@type, as ndc_cq_notify): @ov completes on the CQ's port,
 * and is queued there at once when completions no notify covered are waiting. 0 or -errno. */
int nd_cq_arm_to_port(struct nd_cq *cq, uint32_t type, nd_overlapped *ov);
void nd_ovbatch_remove(struct nd_ovbatch *b, nd_overlapped *ov);
void nd_ovbatch_release(struct nd_ovbatch *b);
bool nd_ov_is_pending(const nd_overlapped *ov);
/* The status a completed request carries, as the core reads it. */
int nd_ov_result(const nd_overlapped *ov);

/*
 * How a status reads where a front end's programs read it themselves: a request's in its
 * nd_overlapped, a failed completion's in its nd_result (ND's programs expect NTSTATUS
 * there). The front end this copy of the core serves says once, before its first request,
 * how the core's status is written there and read back; by default it is the core's own.
 * Both directions are total and each undoes the other; 0 is 0 both ways.
 */
struct nd_status_codec {
    int32_t (*encode)(int st);
    int (*decode)(int32_t shown);
};
void nd_use_status_codec(const struct nd_status_codec *codec);
/* @st as the front end shows it (for a failed completion's nd_result). */
int32_t nd_status_shown(int st);

/* Port event sources: a file descriptor in the port's epoll set (edge-triggered), or with
 * fd -1 a source without one, which runs when kicked. */
typedef void (*nd_port_signal_fn)(void *obj, struct nd_ovbatch *batch);
int nd_port_add_source(struct nd_port *port, int fd, void *obj, nd_port_signal_fn fn,
                             _Atomic uint32_t *inflight, uint32_t *id);
/* With @inflight (the object's count of its sources' running calls), removal does not wait
 * for those calls: the object calls nd_port_quiesce, without its lock, before it frees. */
void nd_port_del_source(struct nd_port *port, uint32_t id, int fd);
void nd_port_quiesce(struct nd_port *port, _Atomic uint32_t *inflight);
/* A source's identity for kicks: its slot and the slot's generation (a removed source's
 * kicks are ignored, even once the slot is reused). */
struct nd_port_kick {
    struct nd_port *port;
    uint32_t id, gen;
};
struct nd_port_kick nd_port_kick_of(struct nd_port *port, uint32_t id);
/* Have the source's signal function run soon, on a thread that waits on the port or
 * polls its kick descriptor. Any thread, any locks held: it only takes the source lock. */
void nd_port_kick(const struct nd_port_kick *k);
/* Readable while kicked sources wait to run (-1 if nothing was ever kickable). */
int nd_port_kick_fd(struct nd_port *port);
/* Run the kicked sources' signal functions now (no object locks held). */
void nd_port_run_kicked(struct nd_port *port, struct nd_ovbatch *batch);
void nd_port_ref(struct nd_port *port);
void nd_port_unref(struct nd_port *port);
bool nd_port_valid(const struct nd_port *port);
/* Something on this port waits for time to pass (a held send): waits tick every 10 ms. */
void nd_port_timed(struct nd_port *port, int delta);

/* ---- adapter (adapter.c) ---- */

struct nd_mtab_entry;
struct nd_lock;
struct nd_qp;

/*
 * An object that touches registered memory under its lock: a queue pair (its posts and its
 * transport's progress) or a CQ (a receive's scatter). Deregister waits for each to be
 * outside its lock once, and asks a queue pair's transport to let go of the range too
 * (mem_barrier.c). Listed on the adapter from creation to close.
 */
struct nd_mem_user {
    struct nd_mem_user *prev, *next;
    struct nd_lock *lock;
    struct nd_qp *qp;               /* NULL: a CQ */
};

#define ND_SPARE_PORTS 4u

/* The transports' slots in an adapter (transport.c lists the transports themselves). */
enum nd_transport_slot { ND_SLOT_SHM, ND_SLOT_IWARP, ND_TRANSPORT_SLOTS };

struct nd_adapter {
    uint32_t magic;
    atomic_uint refs;               /* 1 for the handle + 1 per child object */
    bool closed;
    uint64_t id;
    unsigned ifindex;
    pthread_mutex_t lock;           /* arm slots and token table allocation */
    /* The last address found on our interface, and when: Bind checks it without a netlink
     * dump for a second (bind() itself still refuses an address that went away). */
    struct sockaddr_storage local_seen;
    uint64_t local_seen_ns;
    int shm_fd;                     /* memfd: arm words, then the token table */
    uint8_t *shm;
    size_t shm_size;
    _Atomic uint32_t *arm_area;     /* ND_MAX_CQS_PER_ADAPTER words, 64 bytes apart */
    uint8_t *arm_used;              /* private: which arm slots are taken */
    uint32_t arm_hint;              /* where the next free slot search starts */
    struct nd_mtab_entry *mtab;     /* ND_MTAB_ENTRIES, read by peers */
    uint32_t *mtab_free;            /* private free list of indices */
    uint32_t mtab_nfree;
    uint8_t *mtab_key;              /* private: next key per index */
    _Atomic uint32_t mtab_gen;      /* bumped before any entry changes (nd_mtab_memo) */
    int ro_fd;                      /* our region re-opened read-only, for peers; -1 until needed */
    struct nd_fd_ref ro_ref;        /* ro_fd as peers name it */
    /* Each transport's own state for the adapter (its slot, enum nd_transport_slot: iwarp's
     * progress engine, shm's held-send sweeper), started when first needed and ended by
     * its adapter_close. The core never looks inside. */
    void *transport_state[ND_TRANSPORT_SLOTS];
    struct nd_huge_worker *huge_worker; /* hugepages.c: started with the first registration that can use it */
    struct nd_arena *arena;         /* queue pair regions, ours and peers'; peers' adapter regions (arena.c) */
    /* Queue pairs and CQs (mem_barrier.c); users_lock is taken with no object lock held. */
    pthread_mutex_t users_lock;
    struct nd_mem_user users;       /* list head */
    uint32_t nqp_users;
    /* Ports connectors reserved and no longer need, kept bound for the next connector
     * (a reservation is three system calls and a close): under lock. */
    struct nd_spare_port { int fd; struct sockaddr_storage bound; } spare_ports[ND_SPARE_PORTS];
    uint32_t nspare_ports;
};

bool nd_adapter_valid(const struct nd_adapter *a);
void nd_adapter_ref(struct nd_adapter *a);
void nd_adapter_unref(struct nd_adapter *a);
int nd_adapter_arm_alloc(struct nd_adapter *a, uint32_t *slot);
void nd_adapter_arm_free(struct nd_adapter *a, uint32_t slot);
/* A read-only descriptor of the adapter's shared region, for a peer (caller closes it). */
int nd_adapter_export_ro_fd(struct nd_adapter *a);
/* The same, opened once and kept by the adapter (do not close). -1 on failure. */
int nd_adapter_ro_fd(struct nd_adapter *a);
/* Our region's read-only descriptor as a peer names it (false on failure). */
bool nd_adapter_ro_ref(struct nd_adapter *a, struct nd_fd_ref *ref);
/* Peer @pid's adapter region (@ref), mapped read-only once per peer adapter and kept
 * until this adapter goes (arena.c keeps it with the peers' chunks). NULL if it is not a
 * sealed memfd of at least the region's size. */
const uint8_t *nd_adapter_map_peer(struct nd_adapter *a, pid_t pid, const struct nd_fd_ref *ref);

void nd_mem_user_add(struct nd_adapter *a, struct nd_mem_user *u, struct nd_lock *lock, struct nd_qp *qp);
void nd_mem_user_remove(struct nd_adapter *a, struct nd_mem_user *u);
/* The registration of [addr, addr+len) was revoked: return once nothing of this process, nor
 * any same-host peer through our queue pairs, can still be touching the range through it. */
void nd_mem_barrier(struct nd_adapter *a, uint64_t addr, uint64_t len);

/* ---- queue pair regions (arena.c) ---- */

struct nd_arena_chunk;
struct nd_area {
    struct nd_arena_chunk *chunk;   /* NULL: none */
    uint32_t index;
    uint8_t *map;
    struct nd_fd_ref ref;           /* the chunk's memfd, as peers name it; the arena's */
    uint64_t off;                   /* of the area in the chunk */
};

/* An area of @bytes (a page multiple) for a queue pair's region, its first @zero bytes
 * zeroed. */
int nd_area_get(struct nd_adapter *a, size_t bytes, size_t zero, struct nd_area *area);
/* The queue pair is gone. @shared: a peer had the region (@peer its process, 0 if unknown);
 * the area waits until that peer lets go. */
void nd_area_put(struct nd_adapter *a, struct nd_area *area, bool shared, pid_t peer);
/* Peer @pid's region: [@off, @off + @bytes) of its chunk @ref, the chunk mapped once and
 * kept while used (and a while after). NULL if @ref is no sealed memfd of @pid holding that
 * range. */
uint8_t *nd_peer_area_map(struct nd_adapter *a, pid_t pid, const struct nd_fd_ref *ref, uint64_t off, size_t bytes);
void nd_peer_area_unmap(struct nd_adapter *a, uint8_t *region);
void nd_arena_destroy(struct nd_adapter *a);
/* Our chunks (tests). */
uint32_t nd_arena_chunk_count(struct nd_adapter *a);

/* ---- address discovery (addr.c) ---- */

uint64_t nd_adapter_id_for_ifindex(unsigned ifindex);
/* An adapter on interface @ifindex; 0: on every interface of the network namespace (the
 * verbs front end's one device), whose addresses its listeners and connectors may use. */
int nd_adapter_create(unsigned ifindex, struct nd_adapter **out);
int nd_addr_list(unsigned ifindex_filter, nd_address_list *list, uint32_t *size);
int nd_addr_resolve(const struct sockaddr *addr, uint32_t len, unsigned *ifindex);
/* Same family and address (ports aside; an IPv6 scope of 0 matches any). */
bool nd_sockaddr_same_host(const struct sockaddr *a, const struct sockaddr *b);
bool nd_ifindex_exists(unsigned ifindex);

/* ---- small helpers ---- */
/* @arr (of *@cap elements of @size, @n used) with room for one more: itself, a larger
 * copy (*@cap updated), or NULL when out of memory (@arr left as it was). */
void *nd_with_room(void *arr, uint32_t *cap, uint32_t n, size_t size);
int nd_futex_wait(uint32_t *word, uint32_t expect, int timeout_ms);
int nd_futex_wake(uint32_t *word, int n);
uint64_t nd_now_ns(void);
/* The same clock at tick resolution (a few ms), for deadlines of a second or so: a fifth
 * the cost of nd_now_ns, which counts on the data path. Compare only with its own kind. */
uint64_t nd_coarse_ns(void);
/* May this thread spin while it waits? Not when half the CPUs (one of two) already have a
 * spinner of this process: with more waiting threads than that, spinners would take the
 * CPU from the peers they wait for. A true answer must be paired with nd_spin_leave. */
bool nd_spin_enter(void);
void nd_spin_leave(void);
int nd_memfd_sealed(const char *name, size_t size);
/* A thread of the library: every signal blocked (the application's handlers never run on
 * it), named @name for ps and debuggers. pthread_create's result. */
int nd_thread_start(pthread_t *thread, void *(*fn)(void *), void *arg, const char *name);
/* A random number drawn once per process (after fork, the child draws its own). */
uint64_t nd_process_nonce(void);
struct stat;
bool nd_memfd_mappable(int fd, size_t size, struct stat *st);


/* @fd's identity into @ref, and @fd published for same-host peers to fetch
 * (nd_fd_publish); false if fstat fails. */
bool nd_fd_ref_of(int fd, struct nd_fd_ref *ref);
/* Our own descriptor for @ref's file in process @pid, checked to be that file; -1 if it
 * cannot be had (gone, not allowed: the same ptrace check as cross-memory attach) or is
 * another file (the peer closed it and the number was reused). The caller closes it. */
int nd_fd_fetch(pid_t pid, const struct nd_fd_ref *ref);
/* Whether pidfd_getfd works here (else peers hand descriptors over, fd_share.c). */
bool nd_fd_fetch_available(void);
/* The same for an eventfd (no identity to check but its kind). */
int nd_fd_fetch_eventfd(pid_t pid, int32_t fd);
/* fd_share.c: descriptors over a unix socket where pidfd_getfd is refused. A descriptor
 * peers may fetch is published (its number, device and inode) until it is unpublished;
 * nd_fd_serve starts answering peers' requests (once per process). */
void nd_fd_publish(const struct nd_fd_ref *ref);
void nd_fd_unpublish(int fd);
int nd_fd_serve(void);
int nd_fd_fetch_passed(pid_t pid, const struct nd_fd_ref *ref);
/* A request's @len bytes as a peer sent them: the descriptor to hand over, or -1 (the
 * caller has checked the sender's uid). */
int nd_fd_request_grant(const void *bytes, size_t len);

#include "door.h"

#endif
