// SPDX-License-Identifier: MIT
/*
 * A shared receive queue over shm, fed by three client processes at once: messages of
 * 8, 100, 300 and 5000 bytes land in the SRQ's buffers with their own queue pair's
 * context, in order per queue pair, byte for byte; an empty SRQ holds senders back
 * without breaking their connections; the SRQ's limit notify fires when the posted count
 * falls below its threshold.
 */
#include "t_conn.h"

#include <sys/prctl.h>

#define CLIENTS 3
#define MSGS 200
#define SLOTS 16
#define SLOT_BYTES 8192

static const uint32_t sizes[] = { 8, 100, 300, 5000 };

static void client(uint32_t id, uint16_t port)
{
    struct t_side s;
    nd_overlapped ov = { 0 };

    t_side_open(&s, 1 << 16, 8, 1);
    t_connect(&s, port, NULL, NULL);
    for (uint32_t m = 0; m < MSGS; m++) {
        uint32_t n = sizes[m % 4];
        nd_sge sge = { s.buf, n, s.token };

        t_fill(s.buf, n, id * 1000 + m);
        memcpy(s.buf, &m, sizeof(m));
        memcpy(s.buf + 4, &id, sizeof(id));   /* connections are accepted in any order */
        CHECK_ST(nd_qp_send(s.qp, (void *)(uintptr_t)m, &sge, 1, 0), ND_SUCCESS);
        nd_result r = t_poll_one(s.cq, 10000);   /* waits while the server's SRQ is empty */
        CHECK(r.status == ND_SUCCESS && r.request_context == (void *)(uintptr_t)m);
    }
    CHECK_ST(t_wait(nd_connector_notify_disconnect(s.c, &ov), &ov), ND_SUCCESS);
    t_side_close(&s);
}

int main(void)
{
    nd_adapter *a = t_open_loopback();
    nd_port *port;
    nd_cq *cq;
    nd_srq *srq;
    nd_listener *l;
    nd_mr *mr;
    nd_qp *qp[CLIENTS];
    nd_connector *c[CLIENTS];
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT }, limit = { 0 }, *got;
    pid_t pids[CLIENTS];
    uint32_t next[CLIENTS] = { 0 }, client_of[CLIENTS] = { 0 }, received = 0, limit_events = 0;
    uint8_t *buf = mmap(NULL, SLOTS * SLOT_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct sockaddr_in sin = t_ipv4(t_my_ip(), 0);
    uint32_t len = sizeof(sin);

    CHECK_ST(nd_port_create(&port), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_completion_queue(a, port, 256, 0, 0, &cq), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_shared_receive_queue(a, port, SLOTS, 1, 4, 0, 0, &srq), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_memory_region(a, port, &mr), ND_SUCCESS);
    CHECK_ST(nd_mr_register(mr, buf, SLOTS * SLOT_BYTES, ND_MR_FLAG_ALLOW_LOCAL_WRITE, &ov), ND_SUCCESS);
    /* Six receives to start with: the senders soon run the SRQ below its threshold of 4. */
    for (uintptr_t i = 0; i < 6; i++) {
        nd_sge sge = { buf + i * SLOT_BYTES, SLOT_BYTES, nd_mr_get_local_token(mr) };
        CHECK_ST(nd_srq_receive(srq, (void *)i, &sge, 1), ND_SUCCESS);
    }
    CHECK_ST(nd_srq_notify(srq, &limit), ND_PENDING);
    CHECK_ST(nd_adapter_create_listener(a, port, &l), ND_SUCCESS);
    CHECK_ST(nd_listener_bind(l, (struct sockaddr *)&sin, sizeof(sin)), ND_SUCCESS);
    CHECK_ST(nd_listener_listen(l, 0), ND_SUCCESS);
    CHECK_ST(nd_listener_get_local_address(l, (struct sockaddr *)&sin, &len), ND_SUCCESS);
    for (uint32_t i = 0; i < CLIENTS; i++) {
        pids[i] = fork();
        CHECK(pids[i] >= 0);
        if (pids[i] == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            t_become_child_side();
            client(i, ntohs(sin.sin_port));
            _exit(0);
        }
    }
    for (uint32_t i = 0; i < CLIENTS; i++) {
        CHECK_ST(nd_adapter_create_queue_pair_with_srq(a, cq, cq, srq, &next[i], 8, 1, 0, &qp[i]), ND_SUCCESS);
        CHECK_ST(nd_adapter_create_connector(a, port, &c[i]), ND_SUCCESS);
        CHECK_ST(t_wait(nd_listener_get_connection_request(l, c[i], &ov), &ov), ND_SUCCESS);
        CHECK_ST(t_wait(nd_connector_accept(c[i], qp[i], 0, 0, NULL, 0, &ov), &ov), ND_SUCCESS);
    }
    CHECK_ST(nd_qp_receive(qp[0], NULL, NULL, 0), ND_INVALID_DEVICE_REQUEST);   /* receives are the SRQ's */
    while (received < CLIENTS * MSGS) {
        nd_result r = t_poll_one(cq, 10000);
        uint32_t who = (uint32_t)((uint32_t *)r.qp_context - next), m;
        uintptr_t slot = (uintptr_t)r.request_context;
        uint8_t *p = buf + slot * SLOT_BYTES, want[SLOT_BYTES];

        CHECK(r.status == ND_SUCCESS && r.request_type == ND_REQUEST_TYPE_RECEIVE && who < CLIENTS && slot < SLOTS);
        uint32_t id;
        memcpy(&m, p, sizeof(m));
        memcpy(&id, p + 4, sizeof(id));
        CHECK(m == next[who]);                          /* in order per queue pair */
        CHECK(id < CLIENTS && (m == 0 ? (client_of[who] = id) : client_of[who]) == id);
        CHECK(r.bytes_transferred == sizes[m % 4]);
        t_fill(want, r.bytes_transferred, id * 1000 + m);
        memcpy(want, &m, sizeof(m));
        memcpy(want + 4, &id, sizeof(id));
        if (memcmp(p, want, r.bytes_transferred)) {
            uint32_t off = 0;
            while (p[off] == want[off])
                off++;
            fprintf(stderr, "client %u message %u (%u bytes) differs at %u\n", who, m, r.bytes_transferred, off);
            exit(1);
        }
        next[who]++;
        received++;
        if (nd_port_wait(port, 0, &got) == ND_SUCCESS) {
            CHECK(got == &limit && limit.status == ND_SUCCESS);
            limit_events++;
            /* Stock up the rest of the slots once. */
            for (uintptr_t i = 6; i < SLOTS; i++) {
                nd_sge sge = { buf + i * SLOT_BYTES, SLOT_BYTES, nd_mr_get_local_token(mr) };
                CHECK_ST(nd_srq_receive(srq, (void *)i, &sge, 1), ND_SUCCESS);
            }
        }
        nd_sge sge = { p, SLOT_BYTES, nd_mr_get_local_token(mr) };
        CHECK_ST(nd_srq_receive(srq, (void *)slot, &sge, 1), ND_SUCCESS);
    }
    CHECK(limit_events == 1);
    /* Connections were accepted in any order: disconnect them all, then reap the clients. */
    for (uint32_t i = 0; i < CLIENTS; i++)
        CHECK_ST(nd_connector_disconnect(c[i], &ov), ND_SUCCESS);
    for (uint32_t i = 0; i < CLIENTS; i++) {
        t_expect_child_ok(pids[i]);
        CHECK_ST(nd_connector_close(c[i]), ND_SUCCESS);
        CHECK_ST(nd_qp_close(qp[i]), ND_SUCCESS);
    }
    CHECK_ST(nd_listener_close(l), ND_SUCCESS);
    CHECK_ST(nd_srq_close(srq), ND_SUCCESS);
    CHECK_ST(nd_mr_close(mr), ND_SUCCESS);
    CHECK_ST(nd_cq_close(cq), ND_SUCCESS);
    CHECK_ST(nd_port_close(port), ND_SUCCESS);
    CHECK_ST(nd_adapter_close(a), ND_SUCCESS);
    printf("SRQ shared by %d queue pairs: %u messages verified, limit event fired once\n", CLIENTS, received);
    return 0;
}
