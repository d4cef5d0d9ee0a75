// SPDX-License-Identifier: MIT
/*
 * A completion thread waits on the port (GetQueuedCompletionStatus style) while the main
 * thread disconnects and closes connectors and listeners whose sockets the port is
 * reporting at that very moment: the peer disconnects too, so both threads go for the
 * same connector. Neither may wait for the other (a close that waits for a dispatcher
 * blocked on the object's lock would hang here), nothing may be used after it is freed
 * (ASan), and every connection still carries its message. Runs on every transport.
 */
#include "t_conn.h"

#include <pthread.h>
#include <stdatomic.h>

#define ROUNDS 400

static atomic_bool stop;

static void *completion_thread(void *arg)
{
    nd_port *port = arg;

    while (!atomic_load(&stop)) {
        nd_overlapped *ov;

        nd_port_wait(port, 5, &ov);     /* dispatches sources; nothing is queued to it */
    }
    return NULL;
}

/* The server: accept, take one message, disconnect at once, round after round. */
static void server(int port_pipe)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    struct t_side s;

    t_side_open(&s, 4096, 4, 1);
    uint16_t port = t_listen(&s);
    CHECK(write(port_pipe, &port, sizeof(port)) == sizeof(port));
    CHECK_ST(nd_connector_close(s.c), ND_SUCCESS);
    s.c = NULL;
    for (int i = 0; i < ROUNDS; i++) {
        nd_connector *c;
        nd_qp *qp;

        CHECK_ST(nd_adapter_create_queue_pair(s.a, s.cq, s.cq, NULL, 4, 4, 1, 1, 0, &qp), ND_SUCCESS);
        CHECK_ST(nd_adapter_create_connector(s.a, s.port, &c), ND_SUCCESS);
        CHECK_ST(nd_qp_receive(qp, NULL, &(nd_sge){ s.buf, 64, s.token }, 1), ND_SUCCESS);
        CHECK_ST(t_wait(nd_listener_get_connection_request(s.l, c, &ov), &ov), ND_SUCCESS);
        CHECK_ST(t_wait(nd_connector_accept(c, qp, 0, 0, NULL, 0, &ov), &ov), ND_SUCCESS);
        nd_result r = t_poll_one(s.cq, 10000);
        CHECK(r.status == ND_SUCCESS && r.bytes_transferred == 4 && !memcmp(s.buf, &i, 4));
        CHECK_ST(t_wait(nd_connector_disconnect(c, &ov), &ov), ND_SUCCESS);
        CHECK_ST(nd_connector_close(c), ND_SUCCESS);
        CHECK_ST(nd_qp_close(qp), ND_SUCCESS);
    }
    t_side_close(&s);
}

int main(void)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    struct t_side s;
    pthread_t th;
    uint16_t port;
    int rd;

    pid_t pid = t_fork_server(server, &rd);
    CHECK(read(rd, &port, sizeof(port)) == sizeof(port));
    t_side_open(&s, 4096, 4, 1);
    CHECK_ST(nd_connector_close(s.c), ND_SUCCESS);
    s.c = NULL;
    CHECK(pthread_create(&th, NULL, completion_thread, s.port) == 0);
    for (int i = 0; i < ROUNDS; i++) {
        struct t_side c = s;

        CHECK_ST(nd_adapter_create_queue_pair(s.a, s.cq, s.cq, NULL, 4, 4, 1, 1, 0, &c.qp), ND_SUCCESS);
        CHECK_ST(nd_adapter_create_connector(s.a, s.port, &c.c), ND_SUCCESS);
        t_connect(&c, port, NULL, NULL);
        memcpy(s.buf, &i, 4);
        CHECK_ST(nd_qp_send(c.qp, NULL, &(nd_sge){ s.buf, 4, s.token }, 1, 0), ND_SUCCESS);
        CHECK_ST(t_poll_one(s.cq, 10000).status, ND_SUCCESS);
        /* The server's disconnect is on its way: the completion thread may be reporting
         * it while we close. Alternate between disconnecting first and closing outright. */
        if (i & 1)
            nd_connector_disconnect(c.c, &ov) == ND_PENDING ? (void)nd_get_overlapped_result(&ov, 1) : (void)0;
        CHECK_ST(nd_connector_close(c.c), ND_SUCCESS);
        CHECK_ST(nd_qp_close(c.qp), ND_SUCCESS);
        while (nd_cq_get_results(s.cq, &(nd_result){ 0 }, 1))
            ;                           /* flushed receives of closed QPs, if any */
    }
    atomic_store(&stop, true);
    CHECK(pthread_join(th, NULL) == 0);
    t_expect_child_ok(pid);
    t_side_close(&s);
    printf("%d connections closed while a completion thread dispatched their sockets\n", ROUNDS);
    return 0;
}
