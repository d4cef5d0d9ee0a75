// SPDX-License-Identifier: MIT
/*
 * Crossing connects as MS-MPI makes them (ndmpic): two processes each listen, each
 * Connect to the other and each GetConnectionRequest at once. The request's private data
 * names the caller's rank; the higher rank keeps its active connection and Rejects the
 * crossing request; the lower rank sees its own Connect refused and Accepts the higher
 * rank's request. Both end with one working connection, verified with a Send each way.
 */
#include "t_conn.h"

static int sync_pipe[2][2];

static void rank_main(uint32_t rank, uint16_t my_port, uint16_t peer_port)
{
    struct t_side s;
    nd_connector *in_conn;
    nd_listener *l;
    nd_overlapped cov = { .flags = ND_OV_FLAG_NO_PORT }, gov = { .flags = ND_OV_FLAG_NO_PORT };
    nd_overlapped aov = { .flags = ND_OV_FLAG_NO_PORT };
    struct sockaddr_in me = t_ipv4(t_my_ip(), my_port), peer = t_ipv4(t_peer_ip(), peer_port);
    struct sockaddr_in local = t_ipv4(t_my_ip(), 0);
    uint32_t peer_rank = 0, len = sizeof(peer_rank);
    nd_qp *in_qp;
    char c;

    t_side_open(&s, 4096, 4, 1);
    CHECK_ST(nd_adapter_create_listener(s.a, s.port, &l), ND_SUCCESS);
    CHECK_ST(nd_listener_bind(l, (struct sockaddr *)&me, sizeof(me)), ND_SUCCESS);
    CHECK_ST(nd_listener_listen(l, 0), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_connector(s.a, s.port, &in_conn), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_queue_pair(s.a, s.cq, s.cq, NULL, 4, 4, 1, 1, 0, &in_qp), ND_SUCCESS);
    CHECK_ST(nd_listener_get_connection_request(l, in_conn, &gov), ND_PENDING);
    /* Both listen before either connects. */
    CHECK(write(sync_pipe[rank][1], "r", 1) == 1);
    CHECK(read(sync_pipe[!rank][0], &c, 1) == 1);
    CHECK_ST(nd_connector_bind(s.c, (struct sockaddr *)&local, sizeof(local)), ND_SUCCESS);
    CHECK_ST(nd_connector_connect(s.c, s.qp, (struct sockaddr *)&peer, sizeof(peer), 0, 0, &rank, sizeof(rank), &cov),
             ND_PENDING);
    CHECK_ST(nd_get_overlapped_result(&gov, 1), ND_SUCCESS);     /* the crossing request */
    CHECK_ST(nd_connector_get_private_data(in_conn, &peer_rank, &len), ND_SUCCESS);
    CHECK(len == sizeof(peer_rank) && peer_rank == !rank);
    nd_qp *qp;
    if (rank > peer_rank) {
        /* Higher rank: keep our active side, reject theirs. */
        CHECK_ST(nd_connector_reject(in_conn, NULL, 0), ND_SUCCESS);
        CHECK_ST(nd_get_overlapped_result(&cov, 1), ND_SUCCESS);
        CHECK_ST(nd_connector_complete_connect(s.c, &aov), ND_SUCCESS);
        qp = s.qp;
    } else {
        /* Lower rank: our Connect is refused; accept the higher rank's request. */
        CHECK_ST(nd_connector_accept(in_conn, in_qp, 0, 0, NULL, 0, &aov), ND_PENDING);
        CHECK_ST(nd_get_overlapped_result(&cov, 1), ND_CONNECTION_REFUSED);
        CHECK_ST(nd_get_overlapped_result(&aov, 1), ND_SUCCESS);
        qp = in_qp;
    }
    /* One message each way on the surviving connection. */
    nd_sge rs = { s.buf + 2048, 64, s.token }, ss = { s.buf, 4, s.token };
    memcpy(s.buf, &rank, sizeof(rank));
    CHECK_ST(nd_qp_receive(qp, (void *)1, &rs, 1), ND_SUCCESS);
    if (rank > peer_rank)
        CHECK_ST(nd_qp_send(qp, (void *)2, &ss, 1, 0), ND_SUCCESS);   /* the active side speaks first */
    for (int got = 0; got < 2;) {
        nd_result r = t_poll_one(s.cq, 5000);

        CHECK(r.status == ND_SUCCESS);
        if (r.request_type == ND_REQUEST_TYPE_RECEIVE) {
            uint32_t from;

            memcpy(&from, s.buf + 2048, sizeof(from));
            CHECK(from == peer_rank && r.bytes_transferred == 4);
            if (rank < peer_rank)
                CHECK_ST(nd_qp_send(qp, (void *)2, &ss, 1, 0), ND_SUCCESS);
        }
        got++;
    }
    CHECK(write(sync_pipe[rank][1], "d", 1) == 1);     /* done before anyone tears down */
    CHECK(read(sync_pipe[!rank][0], &c, 1) == 1);
    CHECK_ST(nd_connector_close(in_conn), ND_SUCCESS);
    CHECK_ST(nd_qp_close(in_qp), ND_SUCCESS);
    CHECK_ST(nd_listener_close(l), ND_SUCCESS);
    t_side_close(&s);
}

/* Two free ports: reserve them with listeners of our own, note them, release them. */
static uint16_t free_port(void)
{
    struct t_side s;
    uint16_t p;

    t_side_open(&s, 4096, 2, 1);
    p = t_listen(&s);
    t_side_close(&s);
    return p;
}

int main(void)
{
    uint16_t p0 = free_port(), p1 = free_port();
    pid_t pid;

    CHECK(pipe(sync_pipe[0]) == 0 && pipe(sync_pipe[1]) == 0);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        t_become_child_side();
        rank_main(1, p1, p0);
        _exit(0);
    }
    rank_main(0, p0, p1);
    t_expect_child_ok(pid);
    puts("crossing connects: one connection survives, both directions verified");
    return 0;
}
