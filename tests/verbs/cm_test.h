/* SPDX-License-Identifier: MIT */
/* Shared by the rdma_cm tests: a failed check exits 1 naming itself; expect() takes the next
 * event of a channel and exits unless it is of the wanted type. */
#ifndef ND_TESTS_CM_TEST_H
#define ND_TESTS_CM_TEST_H

#include <rdma/rdma_cma.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "%s:%d: %s (errno %d)\n", __FILE__, __LINE__, #c, errno); exit(1); } } while (0)

static inline struct rdma_cm_event *expect(struct rdma_event_channel *ch, enum rdma_cm_event_type type)
{
    struct rdma_cm_event *ev;

    CHECK(rdma_get_cm_event(ch, &ev) == 0);
    if (ev->event != type) {
        fprintf(stderr, "got %s, wanted %s\n", rdma_event_str(ev->event), rdma_event_str(type));
        exit(1);
    }
    return ev;
}

/* rdma_resolve_addr and rdma_resolve_route of @id towards @dst, their events taken. */
static inline void cm_resolve(struct rdma_event_channel *ch, struct rdma_cm_id *id, struct sockaddr_in *dst)
{
    CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)dst, 1000) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED)) == 0);
    CHECK(rdma_resolve_route(id, 1000) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED)) == 0);
}

/* A client's first steps: a new channel (in @ch) and id, resolved towards @dst. */
static inline struct rdma_cm_id *cm_client_resolved(struct rdma_event_channel **ch, struct sockaddr_in *dst)
{
    struct rdma_cm_id *id;

    *ch = rdma_create_event_channel();
    CHECK(*ch && rdma_create_id(*ch, &id, NULL, RDMA_PS_TCP) == 0);
    cm_resolve(*ch, id, dst);
    return id;
}

/* A server's first steps: listen on @addr (its port written to @ready unless -1), take one
 * connection request and return its id; the listener's id in @l. */
static inline struct rdma_cm_id *cm_take_request(struct rdma_event_channel *ch, struct sockaddr_in *addr, int ready,
                                                 struct rdma_cm_id **l)
{
    struct rdma_cm_event *ev;
    struct rdma_cm_id *c;

    CHECK(ch && rdma_create_id(ch, l, NULL, RDMA_PS_TCP) == 0);
    CHECK(rdma_bind_addr(*l, (struct sockaddr *)addr) == 0 && rdma_listen(*l, 1) == 0);
    if (ready >= 0)
        CHECK(write(ready, &((struct sockaddr_in *)rdma_get_local_addr(*l))->sin_port, 2) == 2);
    ev = expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
    c = ev->id;
    CHECK(rdma_ack_cm_event(ev) == 0);
    return c;
}

/* Forks @server (it writes its port to the descriptor it is given, then serves) before this
 * process starts the library's threads, which a fork does not carry over; returns its pid
 * with @addr's port set to the one it listens on. */
static inline pid_t fork_server(void (*server)(struct sockaddr_in *, int), struct sockaddr_in *addr)
{
    int pp[2];
    pid_t pid;

    CHECK(pipe(pp) == 0);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0)
        server(addr, pp[1]);
    CHECK(read(pp[0], &addr->sin_port, 2) == 2);
    close(pp[0]);
    close(pp[1]);
    return pid;
}

/* The next completion of @cq, whatever its status (busy-polled). */
static inline struct ibv_wc cm_poll_one(struct ibv_cq *cq)
{
    struct ibv_wc wc;
    int n;

    while ((n = ibv_poll_cq(cq, 1, &wc)) == 0)
        ;
    CHECK(n == 1);
    return wc;
}

/* A CQ of 8 entries on @id's device, and @id's QP (rdma_create_qp, the id's PD) on it. */
static inline struct ibv_cq *cm_create_qp_with_cq(struct rdma_cm_id *id, struct ibv_qp_init_attr *qa)
{
    struct ibv_cq *cq = ibv_create_cq(id->verbs, 8, NULL, NULL, 0);

    CHECK(cq);
    qa->send_cq = qa->recv_cq = cq;
    CHECK(rdma_create_qp(id, NULL, qa) == 0);
    return cq;
}

/* A server forked on loopback and a client id resolved to it, with a small RC QP (two
 * sends, one receive, one SGE each) on a CQ of its own, which is returned. */
static inline struct ibv_cq *cm_client_start(void (*server)(struct sockaddr_in *, int), struct rdma_event_channel **ch,
                                             struct rdma_cm_id **id, pid_t *pid)
{
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct ibv_qp_init_attr qa = { .cap = { .max_send_wr = 2, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
                                   .qp_type = IBV_QPT_RC };

    *pid = fork_server(server, &addr);
    *id = cm_client_resolved(ch, &addr);
    return cm_create_qp_with_cq(*id, &qa);
}

/* The server's side of cm_client_start: the request taken as @c (listener @l), with a QP of
 * two sends and two receives on a CQ of its own, which is returned. */
static inline struct ibv_cq *cm_server_start(struct rdma_event_channel *ch, struct sockaddr_in *addr, int ready,
                                             struct rdma_cm_id **l, struct rdma_cm_id **c)
{
    struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
                                   .cap = { .max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1 } };

    *c = cm_take_request(ch, addr, ready, l);
    return cm_create_qp_with_cq(*c, &qa);
}

/* The client's end after a failed request: disconnect (a QP already in error may refuse:
 * EINVAL), take DISCONNECTED, free the id's QP, the id, @cq and @ch, and reap the server
 * @pid, which must have exited 0. */
static inline void cm_client_finish(struct rdma_event_channel *ch, struct rdma_cm_id *id, struct ibv_cq *cq, pid_t pid)
{
    int st;

    CHECK(rdma_disconnect(id) == 0 || errno == EINVAL);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED)) == 0);
    rdma_destroy_qp(id);
    CHECK(rdma_destroy_id(id) == 0 && ibv_destroy_cq(cq) == 0);
    rdma_destroy_event_channel(ch);
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static inline void cm_post_recv(struct ibv_qp *qp, struct ibv_mr *mr, void *buf, uint32_t len, uint64_t id)
{
    struct ibv_sge sge = { (uintptr_t)buf, len, mr->lkey };
    struct ibv_recv_wr rw = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;

    CHECK(ibv_post_recv(qp, &rw, &bad) == 0);
}

#endif
