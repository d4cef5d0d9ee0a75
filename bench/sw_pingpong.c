// SPDX-License-Identifier: MIT
/*
 * sw_pingpong: what the library itself costs per message, with no cross-CPU traffic. One
 * thread, two queue pairs of one process connected to each other (shm, or iwarp with
 * ND_TRANSPORT=iwarp), 8-byte ping-pong: each half round trip is one side's receive post,
 * inline Send, and the polls for its Send's and the peer's Receive's completions, all on
 * one CPU, so the time is the software path alone (a cross-process ping-pong adds the
 * cache-line moves, or loopback TCP, on top). Also the cost of one poll of an empty CQ.
 *   sw_pingpong [-i iterations] [-p port (0: any)] [--json]
 */
#include "nd_tool.h"

struct side {
    nd_cq *cq;
    nd_qp *qp;
    nd_connector *conn;
    nd_sge send, recv;
};

static nd_result next(nd_cq *cq)
{
    nd_result r;

    while (nd_cq_get_results(cq, &r, 1) != 1)
        ;
    if (r.status != ND_SUCCESS)
        TOOL_DIE("completion failed: %s", nd_strerror(r.status));
    return r;
}

/* The next Receive completion; Send completions met on the way are taken too. */
static void next_receive(nd_cq *cq)
{
    while (next(cq).request_type != ND_REQUEST_TYPE_RECEIVE)
        ;
}

/* Port 0 in @addr: the listener's own pick (filled in). */
static void connect_pair(nd_adapter *a, nd_port *port, struct side s[2], struct sockaddr_in *addr)
{
    nd_overlapped gov = { .flags = ND_OV_FLAG_NO_PORT }, cov = { .flags = ND_OV_FLAG_NO_PORT };
    nd_overlapped aov = { .flags = ND_OV_FLAG_NO_PORT }, ccov = { .flags = ND_OV_FLAG_NO_PORT };
    struct sockaddr_in local = *addr;
    uint32_t len = sizeof(*addr);
    nd_listener *l;

    local.sin_port = 0;
    TOOL_CHECK(nd_adapter_create_listener(a, port, &l));
    TOOL_CHECK(nd_listener_bind(l, (const struct sockaddr *)addr, sizeof(*addr)));
    TOOL_CHECK(nd_listener_listen(l, 0));
    TOOL_CHECK(nd_listener_get_local_address(l, (struct sockaddr *)addr, &len));
    nd_status get = nd_listener_get_connection_request(l, s[1].conn, &gov);
    TOOL_CHECK(nd_connector_bind(s[0].conn, (struct sockaddr *)&local, sizeof(local)));
    nd_status conn = nd_connector_connect(s[0].conn, s[0].qp, (const struct sockaddr *)addr, sizeof(*addr), 0, 0,
                                          NULL, 0, &cov);
    TOOL_CHECK(tool_wait(get, &gov));
    nd_status acc = nd_connector_accept(s[1].conn, s[1].qp, 0, 0, NULL, 0, &aov);
    TOOL_CHECK(tool_wait(conn, &cov));
    TOOL_CHECK(tool_wait(nd_connector_complete_connect(s[0].conn, &ccov), &ccov));
    TOOL_CHECK(tool_wait(acc, &aov));
    TOOL_CHECK(nd_listener_close(l));
}

int main(int argc, char **argv)
{
    uint32_t iters = 1000000, port_no = 28990;
    bool json = false;
    static char buf[8192];
    struct side s[2];
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    nd_adapter *a;
    nd_port *port;
    nd_mr *mr;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-i") && i + 1 < argc)
            iters = (uint32_t)strtoul(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "-p") && i + 1 < argc)
            port_no = (uint32_t)strtoul(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--json"))
            json = true;
        else
            TOOL_DIE("usage: sw_pingpong [-i iterations] [-p port] [--json]");
    }
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port_no),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

    TOOL_CHECK(nd_open_adapter_by_address((struct sockaddr *)&addr, sizeof(addr), &a));
    TOOL_CHECK(nd_port_create(&port));
    TOOL_CHECK(nd_adapter_create_memory_region(a, port, &mr));
    TOOL_CHECK(tool_wait(nd_mr_register(mr, buf, sizeof(buf), ND_MR_FLAG_ALLOW_LOCAL_WRITE, &ov), &ov));
    for (int i = 0; i < 2; i++) {
        TOOL_CHECK(nd_adapter_create_completion_queue(a, port, 256, 0, 0, &s[i].cq));
        TOOL_CHECK(nd_adapter_create_queue_pair(a, s[i].cq, s[i].cq, NULL, 64, 64, 1, 1, 64, &s[i].qp));
        TOOL_CHECK(nd_adapter_create_connector(a, port, &s[i].conn));
        s[i].send = (nd_sge){ buf + 64 * i, 8, nd_mr_get_local_token(mr) };
        s[i].recv = (nd_sge){ buf + 1024 + 1024 * i, 1024, nd_mr_get_local_token(mr) };
    }
    connect_pair(a, port, s, &addr);
    /* One receive ahead on each side: each turn posts the one its peer's next Send takes. */
    for (int k = 0; k < 2; k++)
        TOOL_CHECK(nd_qp_receive(s[k].qp, NULL, &s[k].recv, 1));
    double t0 = 0;
    for (int64_t i = -10000; i < (int64_t)iters; i++) {
        if (i == 0)
            t0 = tool_now_us() * 1e3;
        for (int k = 0; k < 2; k++) {
            TOOL_CHECK(nd_qp_receive(s[k].qp, NULL, &s[k].recv, 1));
            TOOL_CHECK(nd_qp_send(s[k].qp, NULL, &s[k].send, 1, ND_OP_FLAG_INLINE));
            next_receive(s[!k].cq);     /* takes the peer's own Send completion too */
        }
    }
    double half = (tool_now_us() * 1e3 - t0) / iters / 2;
    nd_result r;
    while (nd_cq_get_results(s[0].cq, &r, 1) == 1)
        ;
    t0 = tool_now_us() * 1e3;
    for (uint32_t i = 0; i < iters; i++)
        if (nd_cq_get_results(s[0].cq, &r, 1))
            TOOL_DIE("a result from an idle CQ");
    double empty = (tool_now_us() * 1e3 - t0) / iters;
    if (json)
        printf("{\"iterations\":%u,\"half_roundtrip_ns\":%.1f,\"empty_poll_ns\":%.1f}\n", iters, half, empty);
    else
        printf("one thread, 8 B: %.1f ns of software per half round trip; empty poll %.1f ns\n", half, empty);
    for (int i = 0; i < 2; i++) {
        TOOL_CHECK(nd_connector_close(s[i].conn));
        TOOL_CHECK(nd_qp_close(s[i].qp));
        TOOL_CHECK(nd_cq_close(s[i].cq));
    }
    TOOL_CHECK(nd_mr_close(mr));
    TOOL_CHECK(nd_port_close(port));
    TOOL_CHECK(nd_adapter_close(a));
    return 0;
}
