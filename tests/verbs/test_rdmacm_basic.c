// SPDX-License-Identifier: MIT
/*
 * The rdma_cm entry points, called as a program calls them (Debian's headers): a forked
 * server rejects the first connection with private data and accepts the second; the client
 * sees REJECTED carrying that data, then ESTABLISHED with the accept's, a Send across, and
 * DISCONNECTED with its posted receive flushed. Also rdma_getaddrinfo from addresses only
 * (libfabric's way), from nothing at all, and by name with the hints' source kept; a
 * non-blocking channel (EAGAIN); an id of an unknown port space.
 * Runs on the transport ND_TRANSPORT picks.
 */
#include "cm_test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void make_qp(struct rdma_cm_id *id)
{
    struct ibv_qp_init_attr a = { .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
                                  .qp_type = IBV_QPT_RC, .sq_sig_all = 1 };

    CHECK(rdma_create_qp(id, NULL, &a) == 0 && id->qp && id->send_cq && id->recv_cq && id->pd);
}

static void server(struct sockaddr_in *addr, int ready)
{
    struct rdma_event_channel *ch = rdma_create_event_channel();
    struct rdma_cm_id *l, *c;
    struct rdma_cm_event *ev;
    static char buf[64];
    struct ibv_mr *mr;
    struct ibv_wc wc;

    CHECK(ch && rdma_create_id(ch, &l, NULL, RDMA_PS_TCP) == 0);
    CHECK(rdma_bind_addr(l, (struct sockaddr *)addr) == 0 && rdma_listen(l, 4) == 0);
    CHECK(write(ready, &((struct sockaddr_in *)rdma_get_local_addr(l))->sin_port, 2) == 2);
    ev = expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
    c = ev->id;
    CHECK(ev->listen_id == l && ev->param.conn.private_data_len >= 3 && !memcmp(ev->param.conn.private_data, "hi1", 3));
    CHECK(rdma_ack_cm_event(ev) == 0);
    CHECK(rdma_reject(c, "no", 3) == 0 && rdma_destroy_id(c) == 0);
    ev = expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
    c = ev->id;
    CHECK(rdma_ack_cm_event(ev) == 0);
    make_qp(c);
    mr = ibv_reg_mr(c->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
    struct ibv_sge sge = { (uintptr_t)buf, sizeof(buf), mr->lkey };
    struct ibv_recv_wr rw = { .wr_id = 7, .sg_list = &sge, .num_sge = 1 }, *bad;
    CHECK(ibv_post_recv(c->qp, &rw, &bad) == 0);
    struct rdma_conn_param p = { .private_data = "yes", .private_data_len = 4 };
    CHECK(rdma_accept(c, &p) == 0);
    ev = expect(ch, RDMA_CM_EVENT_ESTABLISHED);
    /* RTS, or already ERR: the client may have sent and disconnected by now. */
    struct ibv_qp_attr qa;
    struct ibv_qp_init_attr qi;
    CHECK(rdma_ack_cm_event(ev) == 0 && ibv_query_qp(c->qp, &qa, IBV_QP_STATE, &qi) == 0 &&
          (qa.qp_state == IBV_QPS_RTS || qa.qp_state == IBV_QPS_ERR));
    while (ibv_poll_cq(c->recv_cq, 1, &wc) == 0)
        ;
    CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 7 && wc.opcode == IBV_WC_RECV && wc.byte_len == 6 &&
          wc.qp_num == c->qp->qp_num && !strcmp(buf, "hello"));
    ev = expect(ch, RDMA_CM_EVENT_DISCONNECTED);
    CHECK(rdma_ack_cm_event(ev) == 0);
    rdma_destroy_qp(c);
    CHECK(ibv_dereg_mr(mr) == 0 && rdma_destroy_id(c) == 0 && rdma_destroy_id(l) == 0);
    rdma_destroy_event_channel(ch);
    exit(0);
}

static struct rdma_cm_id *connect_to(struct rdma_event_channel *ch, struct sockaddr_in *dst, const char *pd)
{
    struct rdma_cm_id *id;
    struct rdma_cm_event *ev;

    CHECK(rdma_create_id(ch, &id, (void *)0x5, RDMA_PS_TCP) == 0);
    CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)dst, 1000) == 0);
    ev = expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
    CHECK(ev->id == id && id->context == (void *)0x5 && id->verbs && rdma_ack_cm_event(ev) == 0);
    CHECK(rdma_resolve_route(id, 1000) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED)) == 0);
    make_qp(id);
    struct rdma_conn_param p = { .private_data = pd, .private_data_len = 4, .responder_resources = 1,
                                 .initiator_depth = 1 };
    CHECK(rdma_connect(id, &p) == 0);
    return id;
}

int main(void)
{
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE, .ai_src_addr = (struct sockaddr *)&addr,
                                   .ai_src_len = sizeof(addr) }, *res;
    struct rdma_event_channel *ch;
    struct rdma_cm_event *ev;
    struct rdma_cm_id *id;
    int st;
    pid_t pid;

    pid = fork_server(server, &addr);
    ch = rdma_create_event_channel();
    CHECK(ch);
    /* Addresses only, no name: the hints are the answer. */
    CHECK(rdma_getaddrinfo(NULL, NULL, &hints, &res) == 0 && res->ai_src_len == sizeof(addr) &&
          ((struct sockaddr_in *)res->ai_src_addr)->sin_addr.s_addr == addr.sin_addr.s_addr);
    rdma_freeaddrinfo(res);
    /* No name, no addresses: an answer without addresses (rdma-core's); a name with a source
     * in the hints: the destination resolved and the hints' source kept. */
    struct rdma_addrinfo bare = { .ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_TCP };
    CHECK(rdma_getaddrinfo(NULL, NULL, &bare, &res) == 0 && !res->ai_src_addr && !res->ai_dst_addr &&
          res->ai_flags == RAI_PASSIVE && res->ai_port_space == RDMA_PS_TCP);
    rdma_freeaddrinfo(res);
    struct rdma_addrinfo with_src = { .ai_src_addr = (struct sockaddr *)&addr, .ai_src_len = sizeof(addr),
                                      .ai_port_space = RDMA_PS_TCP };
    CHECK(rdma_getaddrinfo("127.0.0.1", "7", &with_src, &res) == 0 && res->ai_dst_addr &&
          res->ai_src_len == sizeof(addr) &&
          ((struct sockaddr_in *)res->ai_src_addr)->sin_port == addr.sin_port);
    rdma_freeaddrinfo(res);
    /* UD ids are offered (cma_ud.c); InfiniBand's own port space is not. */
    CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_UDP) == 0 && id->qp_type == IBV_QPT_UD && rdma_destroy_id(id) == 0);
    CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_IB) == -1 && errno == EOPNOTSUPP);
    /* Nothing happened: a non-blocking channel says EAGAIN. */
    CHECK(fcntl(ch->fd, F_SETFL, O_NONBLOCK) == 0);
    CHECK(rdma_get_cm_event(ch, &ev) == -1 && errno == EAGAIN);
    CHECK(fcntl(ch->fd, F_SETFL, 0) == 0);

    id = connect_to(ch, &addr, "hi1");
    ev = expect(ch, RDMA_CM_EVENT_REJECTED);
    CHECK(ev->id == id && ev->status != 0 && ev->param.conn.private_data_len >= 3 &&
          !memcmp(ev->param.conn.private_data, "no", 3));
    CHECK(rdma_ack_cm_event(ev) == 0);
    rdma_destroy_qp(id);
    CHECK(rdma_destroy_id(id) == 0);

    id = connect_to(ch, &addr, "hi2");
    ev = expect(ch, RDMA_CM_EVENT_ESTABLISHED);
    CHECK(ev->param.conn.private_data_len >= 4 && !memcmp(ev->param.conn.private_data, "yes", 4));
    struct ibv_qp_attr qa;
    struct ibv_qp_init_attr qi;
    CHECK(rdma_ack_cm_event(ev) == 0 && ibv_query_qp(id->qp, &qa, IBV_QP_STATE, &qi) == 0 &&
          qa.qp_state == IBV_QPS_RTS && qi.cap.max_send_wr >= 4);
    static char msg[64] = "hello", rbuf[64];
    struct ibv_mr *mr = ibv_reg_mr(id->pd, msg, sizeof(msg), IBV_ACCESS_LOCAL_WRITE);
    struct ibv_mr *rmr = ibv_reg_mr(id->pd, rbuf, sizeof(rbuf), IBV_ACCESS_LOCAL_WRITE);
    struct ibv_sge sge = { (uintptr_t)msg, 6, mr->lkey }, rsge = { (uintptr_t)rbuf, sizeof(rbuf), rmr->lkey };
    struct ibv_send_wr wr = { .wr_id = 9, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND }, *bad;
    struct ibv_recv_wr rw = { .wr_id = 11, .sg_list = &rsge, .num_sge = 1 }, *rbad;
    struct ibv_wc wc;
    CHECK(ibv_post_recv(id->qp, &rw, &rbad) == 0);
    CHECK(ibv_post_send(id->qp, &wr, &bad) == 0);
    while (ibv_poll_cq(id->send_cq, 1, &wc) == 0)
        ;
    CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 9 && wc.opcode == IBV_WC_SEND);
    CHECK(rdma_disconnect(id) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED)) == 0);
    /* The receive still posted is flushed. */
    while (ibv_poll_cq(id->recv_cq, 1, &wc) == 0)
        ;
    CHECK(wc.status == IBV_WC_WR_FLUSH_ERR && wc.wr_id == 11);
    rdma_destroy_qp(id);
    CHECK(ibv_dereg_mr(mr) == 0 && ibv_dereg_mr(rmr) == 0 && rdma_destroy_id(id) == 0);
    rdma_destroy_event_channel(ch);
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    puts("rdma_cm basics ok");
    return 0;
}
