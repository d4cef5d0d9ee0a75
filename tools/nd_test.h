/* SPDX-License-Identifier: MIT */
/*
 * nd_test: ND's conformance cases (ndmemorytest, ndcq, ndmval, ndmpic, ndmw) as one Linux
 * program. The client drives: over a control connection (an ND connection of its own, on
 * the given port) it names each case, both sides run their half, and the server reports its
 * verdict back, so the client's exit status covers both processes. Test listeners take
 * ports the system picks and announce them over the control connection.
 */
#ifndef ND_TEST_H
#define ND_TEST_H

#include <netdirect/netdirect.h>

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

/* Control messages: a case number, or one of these. */
enum {
    NT_CTL_READY = 0x52454459u,     /* the server's half is ready for the client's next step */
    NT_CTL_GO = 0x474f2121u,        /* the client's side of a step is done */
    NT_CTL_QUIT = 0x51554954u,      /* no more cases */
};

/* One side of a test connection. */
struct nt_ep {
    nd_cq *cq;
    nd_qp *qp;
    nd_connector *conn;
    nd_listener *listener;
    nd_mr *mr;
    nd_mw *mw;
    uint8_t *buf;
    size_t len;
    uint32_t token;
    bool bound;                     /* client: the connector is bound (READY was heard) */
    uint16_t port;                  /* client: the port the server's test listener took */
};

struct nt {
    bool server;
    struct sockaddr_in addr;        /* the server's address and control port */
    struct in_addr peer_ip;         /* the other side's address */
    struct in_addr my_ip;
    nd_adapter *adapter;
    nd_adapter_info info;
    nd_port *port;
    struct nt_ep ctl;               /* the control connection */
    const char *name;               /* the case running */
    unsigned checks, failures;
};

/* What each side of a case runs; either may be NULL (nothing to do on that side). */
struct nt_case {
    const char *name;
    const char *what;
    void (*server)(struct nt *t);
    void (*client)(struct nt *t);
};

extern const struct nt_case nt_conn_cases[];
extern const unsigned nt_conn_case_count;
extern const struct nt_case nt_mem_cases[];
extern const unsigned nt_mem_case_count;

/* Compare a status with the expected one, print the line, count a failure. */
bool nt_expect(struct nt *t, const char *step, nd_status got, nd_status want);
/* As nt_expect for any condition (a byte count, a pattern, a context). */
bool nt_check(struct nt *t, const char *step, bool ok, const char *detail);
/* Name the step about to block: printed if the case's watchdog fires there. */
void nt_step(const char *step);

/* The control connection: a 32-bit message each way. */
void nt_ctl_send(struct nt *t, uint32_t msg);
uint32_t nt_ctl_recv(struct nt *t);
/* Tell the peer we reached this point and wait until it does (both sides call it). */
void nt_ctl_barrier(struct nt *t);

/* The server's address with @port. */
struct sockaddr_in nt_server_addr(const struct nt *t, uint16_t port);
/* A listener (on @port) at this side's address and a port the system picks; returns it. */
uint16_t nt_listen_any(struct nt *t, nd_port *port, nd_listener **l);
/* Server: tell the client a listener is up on @port. Client: wait for that; the port. */
void nt_announce(struct nt *t, uint16_t port);
uint16_t nt_await_listener(struct nt *t);

/*
 * A test endpoint: CQ (depth 4 * max(depths)), QP, connector, and a buffer of @len
 * bytes registered with @mr_flags. Failures of set-up end the case (they are not what it
 * tests).
 */
void nt_ep_open(struct nt *t, struct nt_ep *e, size_t len, uint32_t mr_flags, uint32_t rq_depth, uint32_t iq_depth);
void nt_ep_close(struct nt *t, struct nt_ep *e);
/* Server: listen (nt_listen_any) and announce it; nt_ep_get_request takes one request. */
void nt_ep_listen(struct nt *t, struct nt_ep *e);
void nt_ep_get_request(struct nt *t, struct nt_ep *e);
/* Both: listen, announce, take one request. */
void nt_ep_take(struct nt *t, struct nt_ep *e);
/* A 4 KiB endpoint with local write, one receive and one initiator slot. */
void nt_ep_open_small(struct nt *t, struct nt_ep *e);
/* Accept (read limits 1/1, no private data) and wait for the client's CompleteConnect. */
nd_status nt_ep_accept(struct nt *t, struct nt_ep *e);
/* Client: the first time, wait for the server's announcement and bind; then Connect to the
 * announced listener with read limits 1/1 and return the status. */
nd_status nt_ep_connect(struct nt *t, struct nt_ep *e, const void *pdata, uint32_t plen);
/* Client: nt_ep_connect + CompleteConnect, both expected to succeed. */
void nt_ep_connect_complete(struct nt *t, struct nt_ep *e);

/* Wait for an overlapped request (bounded by the case watchdog). */
nd_status nt_wait(nd_status st, nd_overlapped *ov);
/* The next completion on @cq, within @ms; a result with status ND_TIMEOUT if none came. */
nd_result nt_next(nd_cq *cq, int ms);
/* Post one receive / send of [off, off+len) of the endpoint's buffer. */
nd_status nt_post_recv(struct nt_ep *e, void *ctx, size_t off, uint32_t len);
nd_status nt_post_send(struct nt_ep *e, void *ctx, size_t off, uint32_t len, uint32_t flags);
/* Fail the case at once (set-up that must not fail did). */
_Noreturn void nt_abort(struct nt *t, const char *why, nd_status st);

#define NT_SETUP(t, expr) do { nd_status s_ = (expr); if (ND_FAILED(s_)) nt_abort((t), #expr, s_); } while (0)

/* A window descriptor sent from the memory's owner to the initiator (ndmemorytest's). */
struct nt_window {
    uint64_t base;
    uint64_t length;
    uint32_t token;
    uint32_t pad;
};

#endif
