// SPDX-License-Identifier: MIT
/*
 * Application-managed QPs through rdma_cm, as rdma-core serves them: each side makes its
 * own QP with ibv_create_qp (no rdma_create_qp), moves it with the attributes
 * rdma_init_qp_attr gives, and names it by rdma_conn_param's qp_num. The server moves its
 * QP to RTS before rdma_accept. The client gets RDMA_CM_EVENT_CONNECT_RESPONSE on an
 * InfiniBand-style device (the roce personality), moves its QP, and sends the RTU with
 * rdma_establish; on an iWARP device (the iwarp personality) ESTABLISHED comes at once, as
 * from the kernel's iWARP CM. Then a Send each way, and the disconnect moves both QPs to ERR.
 * Also: qp_num naming no QP is EINVAL; rdma_establish without a response, or on an id with
 * a CM QP, is EINVAL; the application may destroy its QP before the id (the id's hold keeps
 * the memory: ASan would see a use after free).
 */
#include "cm_test.h"

#include <stdbool.h>
#include <string.h>

static void move_to_rts(struct rdma_cm_id *id, struct ibv_qp *qp)
{
    static const enum ibv_qp_state states[] = { IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS };

    for (int i = 0; i < 3; i++) {
        struct ibv_qp_attr a = { .qp_state = states[i] };
        int mask = 0;

        CHECK(rdma_init_qp_attr(id, &a, &mask) == 0 && a.qp_state == states[i] && (mask & IBV_QP_STATE));
        CHECK(!(mask & IBV_QP_AV));
        CHECK(ibv_modify_qp(qp, &a, mask) == 0);
    }
    CHECK(qp->state == IBV_QPS_RTS);
}

static struct ibv_qp *own_qp(struct rdma_cm_id *id, struct ibv_cq *cq)
{
    struct ibv_qp_init_attr qa = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
                                   .cap = { .max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1 } };
    struct ibv_qp *qp = ibv_create_qp(id->pd, &qa);

    CHECK(qp && qp->state == IBV_QPS_RESET);
    return qp;
}

static void send_one(struct ibv_qp *qp, struct ibv_mr *mr, char *buf, const char *text)
{
    struct ibv_sge sge = { (uintptr_t)buf, (uint32_t)strlen(text) + 1, mr->lkey };
    struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                              .send_flags = IBV_SEND_SIGNALED }, *bad;

    strcpy(buf, text);
    CHECK(ibv_post_send(qp, &wr, &bad) == 0);
}

static void server(struct sockaddr_in *addr, int ready)
{
    struct rdma_event_channel *ch = rdma_create_event_channel();
    struct rdma_cm_id *l, *c = cm_take_request(ch, addr, ready, &l);
    static char buf[2][64];
    struct ibv_cq *cq = ibv_create_cq(c->verbs, 8, NULL, NULL, 0);
    struct ibv_qp *qp = own_qp(c, cq);
    struct ibv_mr *mr = ibv_reg_mr(c->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
    struct rdma_conn_param p = { .qp_num = qp->qp_num, .responder_resources = 1, .initiator_depth = 1 };
    struct ibv_wc wc;

    CHECK(mr && c->qp == NULL);
    cm_post_recv(qp, mr, buf[0], 64, 1);
    move_to_rts(c, qp);
    CHECK(rdma_accept(c, &p) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ESTABLISHED)) == 0);
    wc = cm_poll_one(cq);
    CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV && wc.qp_num == qp->qp_num);
    CHECK(strcmp(buf[0], "from the client") == 0);
    send_one(qp, mr, buf[1], "from the server");
    wc = cm_poll_one(cq);
    CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED)) == 0);
    struct ibv_qp_attr qattr;
    struct ibv_qp_init_attr init;

    /* The peer's disconnect leaves an InfiniBand-style device's QP as it was (librdmacm
     * moves none of the application's); an RNIC's connection end takes its QP to ERR. */
    CHECK(ibv_query_qp(qp, &qattr, IBV_QP_STATE, &init) == 0 &&
          qattr.qp_state == (c->verbs->device->transport_type == IBV_TRANSPORT_IWARP ? IBV_QPS_ERR : IBV_QPS_RTS));
    /* The application's QP goes first; the id still holds it. */
    CHECK(ibv_destroy_qp(qp) == 0);
    CHECK(rdma_destroy_id(c) == 0 && rdma_destroy_id(l) == 0);
    CHECK(ibv_dereg_mr(mr) == 0 && ibv_destroy_cq(cq) == 0);
    rdma_destroy_event_channel(ch);
    exit(0);
}

int main(void)
{
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct rdma_event_channel *ch;
    pid_t pid = fork_server(server, &addr);
    struct rdma_cm_id *id = cm_client_resolved(&ch, &addr);
    static char buf[2][64];
    struct ibv_cq *cq = ibv_create_cq(id->verbs, 8, NULL, NULL, 0);
    struct ibv_qp *qp = own_qp(id, cq);
    struct ibv_mr *mr = ibv_reg_mr(id->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
    struct rdma_conn_param bad = { .qp_num = qp->qp_num ^ 0x55 };
    struct rdma_conn_param p = { .qp_num = qp->qp_num, .responder_resources = 1, .initiator_depth = 1,
                                 .rnr_retry_count = 7 };
    struct rdma_cm_event *ev;
    bool iwarp = id->verbs->device->transport_type == IBV_TRANSPORT_IWARP;
    struct ibv_wc wc;
    int st;

    CHECK(mr && cq);
    CHECK(rdma_connect(id, &bad) == -1 && errno == EINVAL);
    CHECK(rdma_connect(id, NULL) == -1 && errno == EINVAL);
    CHECK(rdma_establish(id) == -1 && errno == EINVAL);
    cm_post_recv(qp, mr, buf[0], 64, 1);
    CHECK(rdma_connect(id, &p) == 0);
    CHECK(rdma_get_cm_event(ch, &ev) == 0);
    if (iwarp) {
        /* The CM moved the QP itself, as iw_cm moves an iWARP QP. */
        CHECK(ev->event == RDMA_CM_EVENT_ESTABLISHED);
        CHECK(rdma_ack_cm_event(ev) == 0);
        struct ibv_qp_attr qattr;
        struct ibv_qp_init_attr init;

        CHECK(ibv_query_qp(qp, &qattr, IBV_QP_STATE, &init) == 0 && qattr.qp_state == IBV_QPS_RTS);
    } else {
        CHECK(ev->event == RDMA_CM_EVENT_CONNECT_RESPONSE);
        CHECK(rdma_ack_cm_event(ev) == 0);
        move_to_rts(id, qp);
        CHECK(rdma_establish(id) == 0);
        CHECK(rdma_establish(id) == -1 && errno == EINVAL);
    }
    send_one(qp, mr, buf[1], "from the client");
    for (int got = 0; got < 2; got++) {
        wc = cm_poll_one(cq);
        CHECK(wc.status == IBV_WC_SUCCESS && (wc.opcode == IBV_WC_SEND || wc.opcode == IBV_WC_RECV));
    }
    CHECK(strcmp(buf[0], "from the server") == 0);
    CHECK(rdma_disconnect(id) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED)) == 0);
    CHECK(qp->state == IBV_QPS_ERR);
    CHECK(ibv_destroy_qp(qp) == 0);
    CHECK(rdma_destroy_id(id) == 0);
    CHECK(ibv_dereg_mr(mr) == 0 && ibv_destroy_cq(cq) == 0);
    rdma_destroy_event_channel(ch);
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    /* rdma_establish on an id with a CM QP. */
    struct rdma_cm_id *other;
    struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC, .cap = { .max_send_wr = 1, .max_recv_wr = 1,
                                                                   .max_send_sge = 1, .max_recv_sge = 1 } };
    struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(9), .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

    CHECK(rdma_create_id(NULL, &other, NULL, RDMA_PS_TCP) == 0);
    CHECK(rdma_resolve_addr(other, NULL, (struct sockaddr *)&dst, 1000) == 0 && rdma_create_qp(other, NULL, &qa) == 0);
    CHECK(rdma_establish(other) == -1 && errno == EINVAL);
    rdma_destroy_qp(other);
    CHECK(rdma_destroy_id(other) == 0);
    printf("ok (%s)\n", iwarp ? "iWARP: ESTABLISHED at once" : "CONNECT_RESPONSE, then rdma_establish");
    return 0;
}
