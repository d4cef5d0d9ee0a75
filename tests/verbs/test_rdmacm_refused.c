// SPDX-License-Identifier: MIT
/*
 * rdma_connect towards a port nothing listens on: it returns 0 and REJECTED with status
 * -ECONNREFUSED follows (the kernel iWARP CM's way), after the dial has been retried for
 * ND_RDMACM_REFUSED_WAIT. A server that starts listening just after the client's
 * rdma_connect (perftest -R's race: its client connects the moment a handshake ends) is
 * reached within that window: ESTABLISHED. Runs on the transport ND_TRANSPORT picks.
 */
#include "cm_test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* A port of this host nothing listens on (bound, not listening, while it is used). */
static int unused_port(uint16_t *port)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
          getsockname(fd, (struct sockaddr *)&a, &len) == 0);
    *port = a.sin_port;
    return fd;
}

static struct rdma_cm_id *resolved(struct rdma_event_channel *ch, struct sockaddr_in *dst)
{
    struct ibv_qp_init_attr qa = { .cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
                                   .qp_type = IBV_QPT_RC };
    struct rdma_cm_id *id;

    CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0);
    cm_resolve(ch, id, dst);
    CHECK(rdma_create_qp(id, NULL, &qa) == 0);
    return id;
}

/* The late server: listens once the client says it is connecting, accepts, waits for the end. */
static void late_server(struct sockaddr_in *addr, int go, int holder)
{
    struct rdma_event_channel *ch;
    struct rdma_cm_id *l, *c;
    char b;

    CHECK(read(go, &b, 1) == 1);
    close(holder);      /* the port is free now */
    ch = rdma_create_event_channel();
    c = cm_take_request(ch, addr, -1, &l);
    struct ibv_qp_init_attr qa = { .cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
                                   .qp_type = IBV_QPT_RC };
    CHECK(rdma_create_qp(c, NULL, &qa) == 0 && rdma_accept(c, NULL) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ESTABLISHED)) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED)) == 0);
    exit(0);
}

int main(void)
{
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct rdma_event_channel *ch;
    struct rdma_cm_event *ev;
    struct rdma_cm_id *id;
    int go[2], holder, st;
    pid_t pid;

    /* The server first: the library's threads are not carried over a fork. */
    holder = unused_port(&addr.sin_port);
    CHECK(pipe(go) == 0);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0)
        late_server(&addr, go[0], holder);
    ch = rdma_create_event_channel();
    CHECK(ch);

    /* Nobody there: 0, then REJECTED (-ECONNREFUSED). The port stays bound in the child
     * until the second part, so nothing else takes it meanwhile. */
    id = resolved(ch, &addr);
    CHECK(rdma_connect(id, NULL) == 0);
    ev = expect(ch, RDMA_CM_EVENT_REJECTED);
    CHECK(ev->id == id && ev->status == -ECONNREFUSED && rdma_ack_cm_event(ev) == 0);
    rdma_destroy_qp(id);
    CHECK(rdma_destroy_id(id) == 0);

    /* The server listens just after this rdma_connect began: reached all the same. */
    close(holder);
    id = resolved(ch, &addr);
    CHECK(write(go[1], "g", 1) == 1);
    CHECK(rdma_connect(id, NULL) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ESTABLISHED)) == 0);
    CHECK(rdma_disconnect(id) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED)) == 0);
    rdma_destroy_qp(id);
    CHECK(rdma_destroy_id(id) == 0);
    rdma_destroy_event_channel(ch);
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    puts("refused connects: REJECTED after the wait, a late listener reached");
    return 0;
}
