// SPDX-License-Identifier: MIT
/*
 * A completion channel between two processes, as event-driven programs use one: the
 * client arms its CQ and sleeps in poll() on the channel's descriptor, then takes the event
 * with ibv_get_cq_event; ROUNDS messages, each sent by the server only once the client has
 * armed. Then, with nothing coming, a signal ends a blocking ibv_get_cq_event with EINTR
 * (qperf ends its timed runs so); a non-blocking descriptor says EAGAIN; and a CQ destroyed
 * with its event still untaken takes the event with it (the channel then goes too). Runs
 * on the transport ND_TRANSPORT picks.
 */
#include "cm_test.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/time.h>

#define ROUNDS 200
#define LEN 32

static int armed_pipe[2];

static void server(struct sockaddr_in *addr, int ready)
{
    struct rdma_event_channel *ch = rdma_create_event_channel();
    static char buf[LEN] = "event";
    struct rdma_cm_id *l, *c;
    struct ibv_cq *cq = cm_server_start(ch, addr, ready, &l, &c);
    struct ibv_mr *mr = ibv_reg_mr(c->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
    char word;

    CHECK(mr && rdma_accept(c, NULL) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ESTABLISHED)) == 0);
    /* One Send per word from the client: ROUNDS, then one more it leaves untaken. */
    for (int i = 0; i < ROUNDS + 1; i++) {
        struct ibv_sge sge = { (uintptr_t)buf, LEN, mr->lkey };
        struct ibv_send_wr wr = { .wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                                  .send_flags = IBV_SEND_SIGNALED }, *bad;

        CHECK(read(armed_pipe[0], &word, 1) == 1);
        CHECK(ibv_post_send(c->qp, &wr, &bad) == 0);
        struct ibv_wc wc = cm_poll_one(cq);
        CHECK(wc.status == IBV_WC_SUCCESS);
    }
    CHECK(read(armed_pipe[0], &word, 1) == 1);      /* the client is done */
    rdma_disconnect(c);
    exit(0);
}

static void on_alarm(int sig)
{
    (void)sig;
}

/* Arm, tell the server, sleep in poll() on the descriptor, take the event. */
static void one_round(struct ibv_comp_channel *ch, struct ibv_cq *cq, struct ibv_qp *qp, struct ibv_mr *mr, char *buf)
{
    struct ibv_sge sge = { (uintptr_t)buf, LEN, mr->lkey };
    struct ibv_recv_wr rw = { .sg_list = &sge, .num_sge = 1 }, *bad;
    struct pollfd p = { .fd = ch->fd, .events = POLLIN };
    struct ibv_cq *evcq;
    struct ibv_wc wc;
    void *evctx;

    CHECK(ibv_post_recv(qp, &rw, &bad) == 0);
    CHECK(ibv_req_notify_cq(cq, 0) == 0);
    CHECK(ibv_poll_cq(cq, 1, &wc) == 0);
    CHECK(write(armed_pipe[1], "a", 1) == 1);
    CHECK(poll(&p, 1, 5000) == 1 && (p.revents & POLLIN));
    CHECK(ibv_get_cq_event(ch, &evcq, &evctx) == 0 && evcq == cq && evctx == (void *)0x5a);
    ibv_ack_cq_events(cq, 1);
    CHECK(ibv_poll_cq(cq, 1, &wc) == 1 && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV);
    CHECK(strcmp(buf, "event") == 0);
}

int main(void)
{
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct rdma_event_channel *cm;
    static char buf[LEN];
    struct ibv_cq *evcq;
    void *evctx;
    int st;

    CHECK(pipe(armed_pipe) == 0);
    pid_t pid = fork_server(server, &addr);
    struct rdma_cm_id *id = cm_client_resolved(&cm, &addr);
    struct ibv_comp_channel *ch = ibv_create_comp_channel(id->verbs);
    struct ibv_cq *cq = ch ? ibv_create_cq(id->verbs, 8, (void *)0x5a, ch, 0) : NULL;
    struct ibv_qp_init_attr qa = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
                                   .cap = { .max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1 } };

    CHECK(cq && rdma_create_qp(id, NULL, &qa) == 0);
    struct ibv_mr *mr = ibv_reg_mr(id->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
    CHECK(mr && rdma_connect(id, NULL) == 0);
    CHECK(rdma_ack_cm_event(expect(cm, RDMA_CM_EVENT_ESTABLISHED)) == 0);
    for (int i = 0; i < ROUNDS; i++)
        one_round(ch, cq, id->qp, mr, buf);

    /* Nothing comes: a signal ends the wait, as it ends rdma-core's read of the descriptor. */
    struct sigaction sa = { .sa_handler = on_alarm };
    struct itimerval it = { .it_value = { 0, 50000 } };
    CHECK(sigaction(SIGALRM, &sa, NULL) == 0);
    CHECK(ibv_req_notify_cq(cq, 0) == 0);
    CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0);
    CHECK(ibv_get_cq_event(ch, &evcq, &evctx) == -1 && errno == EINTR);
    CHECK(fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK) == 0);
    CHECK(ibv_get_cq_event(ch, &evcq, &evctx) == -1 && errno == EAGAIN);

    /* One more message, its event left untaken: the CQ's destroy takes it out. */
    struct ibv_sge sge = { (uintptr_t)buf, LEN, mr->lkey };
    struct ibv_recv_wr rw = { .sg_list = &sge, .num_sge = 1 }, *bad;
    struct pollfd p = { .fd = ch->fd, .events = POLLIN };
    CHECK(ibv_post_recv(id->qp, &rw, &bad) == 0);
    CHECK(write(armed_pipe[1], "a", 1) == 1);
    CHECK(poll(&p, 1, 5000) == 1);
    CHECK(write(armed_pipe[1], "d", 1) == 1);
    CHECK(rdma_ack_cm_event(expect(cm, RDMA_CM_EVENT_DISCONNECTED)) == 0);
    rdma_destroy_qp(id);
    CHECK(ibv_destroy_cq(cq) == 0);
    CHECK(ibv_destroy_comp_channel(ch) == 0);
    CHECK(ibv_dereg_mr(mr) == 0 && rdma_destroy_id(id) == 0);
    rdma_destroy_event_channel(cm);
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    printf("%d events through poll() and ibv_get_cq_event; EINTR, EAGAIN; an untaken event went with its CQ\n",
           ROUNDS);
    return 0;
}
