// SPDX-License-Identifier: MIT
/*
 * Over shm, a peer that sends a connection message rings the receiver's doorbell (the
 * cm_bell word of the receiving queue pair's control block) once it can reach it: the
 * server after its REP, the client after its RTU and its DISC. Connector waits spin on
 * that word before they sleep. A transport with no doorbell (iwarp) leaves it at 0.
 */
#include "t_conn.h"
#include <netdirect/netdirect.h>
#include "core/qp_int.h"

#include <stdlib.h>

static bool shm(void)
{
    const char *t = getenv("ND_TRANSPORT");

    return !t || strcmp(t, "iwarp") != 0;
}

/* The bell of @qp reaches @want within 5 s (it is rung just after the message is sent,
 * so the message may be handled first). */
static void expect_bell(nd_qp *qp, uint32_t want)
{
    const _Atomic uint32_t *bell = &((struct nd_qp *)qp)->ctl->cm_bell;
    uint64_t end = t_now_ms() + 5000;

    if (!shm())
        want = 0;
    while (atomic_load(bell) != want && t_now_ms() < end)
        sched_yield();
    if (atomic_load(bell) != want) {
        fprintf(stderr, "cm_bell %u, expected %u\n", atomic_load(bell), want);
        exit(1);
    }
}

static void serve(int port_pipe)
{
    struct t_side s;
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };

    t_serve_open(&s, port_pipe);
    t_accept(&s, 0, NULL, 0);
    expect_bell(s.qp, 1);               /* the client's RTU */
    CHECK(write(port_pipe, "r", 1) == 1);   /* now the client may disconnect */
    CHECK_ST(t_wait(nd_connector_notify_disconnect(s.c, &ov), &ov), ND_SUCCESS);
    expect_bell(s.qp, 2);               /* and its DISC */
    CHECK_ST(nd_connector_disconnect(s.c, &ov), ND_SUCCESS);
    t_side_close(&s);
}

int main(void)
{
    struct t_side s;
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    struct sockaddr_in local = t_ipv4(t_my_ip(), 0), dest;
    uint16_t port;
    int rd;
    pid_t server = t_fork_server(serve, &rd);

    CHECK(read(rd, &port, sizeof(port)) == sizeof(port));
    t_side_open(&s, 4096, 4, 1);
    dest = t_ipv4(t_peer_ip(), port);
    CHECK(atomic_load(&((struct nd_qp *)s.qp)->ctl->cm_bell) == 0);
    CHECK_ST(nd_connector_bind(s.c, (struct sockaddr *)&local, sizeof(local)), ND_SUCCESS);
    CHECK_ST(t_wait(nd_connector_connect(s.c, s.qp, (struct sockaddr *)&dest, sizeof(dest), 0, 0, NULL, 0, &ov), &ov),
             ND_SUCCESS);
    expect_bell(s.qp, 1);               /* the server's REP */
    CHECK_ST(t_wait(nd_connector_complete_connect(s.c, &ov), &ov), ND_SUCCESS);
    char go;
    CHECK(read(rd, &go, 1) == 1);
    CHECK_ST(nd_connector_disconnect(s.c, &ov), ND_SUCCESS);
    t_expect_child_ok(server);
    t_side_close(&s);
    return 0;
}
