// SPDX-License-Identifier: MIT
/*
 * Shared receive queues, called as a program calls them: a forked server makes an SRQ, a QP
 * on it through rdma_create_qp, posts four receives to the SRQ and accepts; the client sends
 * three messages. They complete on the server in posting order, on the QP's receive CQ with
 * its qp_num and their lengths. The QP itself takes no receives; the SRQ cannot be destroyed
 * while the QP uses it; a depth over max_srq_wr is refused, a limit at creation ignored. A
 * limit of 3 set on the four posted receives raises IBV_EVENT_SRQ_LIMIT_REACHED on the
 * context's async_fd once two are consumed, and is disarmed then. On the client, a
 * destroyed QP's flushed receive is not reported by its CQ afterwards.
 * Runs on the transport ND_TRANSPORT picks.
 */
#include "cm_test.h"

#include <arpa/inet.h>
#include <poll.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const uint32_t lens[3] = { 5, 300, 4096 };

static void srq_attrs(struct ibv_pd *pd)
{
    struct ibv_device_attr da;
    struct ibv_srq_init_attr bad = { .attr = { .max_wr = 4, .max_sge = 1, .srq_limit = 2 } };
    struct ibv_srq_attr q;
    struct ibv_srq *s;

    CHECK(ibv_query_device(pd->context, &da) == 0 && da.max_srq > 0);
    s = ibv_create_srq(pd, &bad);
    CHECK(s && ibv_query_srq(s, &q) == 0 && q.srq_limit == 0 && ibv_destroy_srq(s) == 0);
    /* A limit armed above what is posted fires at once; one still armed when the SRQ goes
     * is cancelled, never reported. */
    static char rb[64];
    struct ibv_mr *mr = ibv_reg_mr(pd, rb, sizeof(rb), IBV_ACCESS_LOCAL_WRITE);
    struct ibv_sge sge = { (uintptr_t)rb, sizeof(rb), mr ? mr->lkey : 0 };
    struct ibv_recv_wr rw = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 }, *rbad;
    struct ibv_async_event aev;
    struct ibv_srq_attr lim = { .srq_limit = 1 };
    struct pollfd pfd = { .fd = pd->context->async_fd, .events = POLLIN };
    s = ibv_create_srq(pd, &bad);
    CHECK(mr && s && ibv_modify_srq(s, &lim, IBV_SRQ_LIMIT) == 0);
    CHECK(poll(&pfd, 1, 5000) == 1 && ibv_get_async_event(pd->context, &aev) == 0);
    CHECK(aev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED && aev.element.srq == s);
    ibv_ack_async_event(&aev);
    CHECK(ibv_post_srq_recv(s, &rw, &rbad) == 0 && ibv_post_srq_recv(s, &rw, &rbad) == 0);
    CHECK(ibv_modify_srq(s, &lim, IBV_SRQ_LIMIT) == 0 && ibv_destroy_srq(s) == 0);
    CHECK(poll(&pfd, 1, 0) == 0 && ibv_dereg_mr(mr) == 0);
    bad.attr.srq_limit = 0;
    bad.attr.max_wr = (uint32_t)da.max_srq_wr + 1;
    CHECK(!ibv_create_srq(pd, &bad) && errno == EINVAL);
}

static void server(struct sockaddr_in *addr, int ready)
{
    struct rdma_event_channel *ch = rdma_create_event_channel();
    static char buf[4][8192];
    struct rdma_cm_id *l, *c = cm_take_request(ch, addr, ready, &l);
    struct ibv_wc wc;

    struct ibv_pd *pd = ibv_alloc_pd(c->verbs);
    CHECK(pd);
    srq_attrs(pd);
    struct ibv_srq_init_attr sa = { .attr = { .max_wr = 8, .max_sge = 1 } };
    struct ibv_srq *srq = ibv_create_srq(pd, &sa);
    CHECK(srq && srq->pd == pd);
    struct ibv_srq_attr q;
    CHECK(ibv_query_srq(srq, &q) == 0 && q.max_wr == 8 && q.max_sge == 1 && q.srq_limit == 0);
    struct ibv_cq *cq = ibv_create_cq(c->verbs, 16, NULL, NULL, 0);
    struct ibv_qp_init_attr qa = { .send_cq = cq, .recv_cq = cq, .srq = srq, .qp_type = IBV_QPT_RC,
                                   .cap = { .max_send_wr = 4, .max_send_sge = 1 } };
    CHECK(cq && rdma_create_qp(c, pd, &qa) == 0 && c->qp->srq == srq);
    struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
    CHECK(mr);
    for (int i = 0; i < 4; i++) {
        struct ibv_sge sge = { (uintptr_t)buf[i], sizeof(buf[i]), mr->lkey };
        struct ibv_recv_wr rw = { .wr_id = 100 + (uint64_t)i, .sg_list = &sge, .num_sge = 1 }, *bad;
        CHECK(ibv_post_srq_recv(srq, &rw, &bad) == 0);
    }
    struct ibv_sge sge = { (uintptr_t)buf[0], 8, mr->lkey };
    struct ibv_recv_wr own = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 }, *bad;
    CHECK(ibv_post_recv(c->qp, &own, &bad) != 0 && bad == &own);      /* its receives are the SRQ's */
    struct ibv_srq_attr lim = { .srq_limit = 9 };
    CHECK(ibv_modify_srq(srq, &lim, IBV_SRQ_LIMIT) == EINVAL);          /* over max_wr */
    lim.srq_limit = 3;
    CHECK(ibv_modify_srq(srq, &lim, IBV_SRQ_LIMIT) == 0);
    CHECK(ibv_query_srq(srq, &q) == 0 && q.srq_limit == 3);
    CHECK(rdma_accept(c, NULL) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ESTABLISHED)) == 0);
    for (int i = 0; i < 3; i++) {
        while (ibv_poll_cq(cq, 1, &wc) == 0)
            ;
        CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV && wc.wr_id == 100 + (uint64_t)i &&
              wc.byte_len == lens[i] && wc.qp_num == c->qp->qp_num && buf[i][0] == 'a' + i);
    }
    /* Two of four consumed: fewer than 3 posted, the limit event is there (or comes). */
    struct pollfd pfd = { .fd = c->verbs->async_fd, .events = POLLIN };
    struct ibv_async_event aev;
    CHECK(poll(&pfd, 1, 5000) == 1 && ibv_get_async_event(c->verbs, &aev) == 0);
    CHECK(aev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED && aev.element.srq == srq);
    CHECK(ibv_query_srq(srq, &q) == 0 && q.srq_limit == 0);            /* disarmed */
    ibv_ack_async_event(&aev);
    CHECK(poll(&pfd, 1, 0) == 0);                                       /* reported once */
    CHECK(ibv_destroy_srq(srq) == EBUSY);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED)) == 0);
    rdma_destroy_qp(c);
    CHECK(ibv_destroy_srq(srq) == 0);
    CHECK(ibv_dereg_mr(mr) == 0 && ibv_destroy_cq(cq) == 0 && rdma_destroy_id(c) == 0 && ibv_dealloc_pd(pd) == 0);
    CHECK(rdma_destroy_id(l) == 0);
    rdma_destroy_event_channel(ch);
    exit(0);
}

int main(void)
{
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct ibv_qp_init_attr qa = { .cap = { .max_send_wr = 4, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
                                   .qp_type = IBV_QPT_RC, .sq_sig_all = 1 };
    struct rdma_event_channel *ch;
    struct rdma_cm_id *id;
    static char msg[3][4096];
    int st;
    pid_t pid;

    pid = fork_server(server, &addr);
    id = cm_client_resolved(&ch, &addr);
    /* The client's own CQ: after the QP is destroyed, its flushed receives are not reported. */
    struct ibv_cq *ccq = ibv_create_cq(id->verbs, 8, NULL, NULL, 0);
    CHECK(ccq);
    qa.send_cq = qa.recv_cq = ccq;
    CHECK(rdma_create_qp(id, NULL, &qa) == 0);
    static char rbuf[64];
    struct ibv_mr *rmr = ibv_reg_mr(id->pd, rbuf, sizeof(rbuf), IBV_ACCESS_LOCAL_WRITE);
    struct ibv_sge rsge = { (uintptr_t)rbuf, sizeof(rbuf), rmr ? rmr->lkey : 0 };
    struct ibv_recv_wr rw = { .wr_id = 77, .sg_list = &rsge, .num_sge = 1 }, *rbad;
    CHECK(rmr && ibv_post_recv(id->qp, &rw, &rbad) == 0);
    CHECK(rdma_connect(id, NULL) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ESTABLISHED)) == 0);
    struct ibv_mr *mr = ibv_reg_mr(id->pd, msg, sizeof(msg), IBV_ACCESS_LOCAL_WRITE);
    CHECK(mr);
    for (int i = 0; i < 3; i++) {
        struct ibv_sge sge = { (uintptr_t)msg[i], lens[i], mr->lkey };
        struct ibv_send_wr wr = { .wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND }, *bad;
        struct ibv_wc wc;

        msg[i][0] = (char)('a' + i);
        CHECK(ibv_post_send(id->qp, &wr, &bad) == 0);
        while (ibv_poll_cq(ccq, 1, &wc) == 0)
            ;
        CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == (uint64_t)i);
    }
    CHECK(rdma_disconnect(id) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED)) == 0);
    /* Receive 77 was flushed by the disconnect, not polled: gone with its QP. */
    rdma_destroy_qp(id);
    struct ibv_wc left[4];
    CHECK(ibv_poll_cq(ccq, 4, left) == 0);
    CHECK(ibv_destroy_cq(ccq) == 0 && ibv_dereg_mr(rmr) == 0);
    CHECK(ibv_dereg_mr(mr) == 0 && rdma_destroy_id(id) == 0);
    rdma_destroy_event_channel(ch);
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    puts("shared receive queues ok");
    return 0;
}
