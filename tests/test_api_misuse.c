// SPDX-License-Identifier: MIT
/*
 * API misuse, table by table: every public function with NULL handles and NULL out
 * pointers, zero and oversize counts, calls in the wrong state, and objects of another
 * adapter. Each returns the status its header documents; nothing crashes.
 */
#include "t_util.h"

/* One row: a call and the status it must return. */
struct row {
    const char *what;
    nd_status got, want;
};

static unsigned failures;

static void check_rows(const char *table, const struct row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (rows[i].got != rows[i].want) {
            fprintf(stderr, "%s: %s returned %s (0x%08x), expected %s\n", table, rows[i].what,
                    nd_strerror(rows[i].got), (unsigned)rows[i].got, nd_strerror(rows[i].want));
            failures++;
        }
    printf("%-28s %zu calls\n", table, n);
}

#define ROW(call, want) { #call, (call), (want) }
#define TABLE(name, ...) do { const struct row rows_[] = { __VA_ARGS__ }; \
        check_rows(name, rows_, sizeof(rows_) / sizeof(rows_[0])); } while (0)

static void null_handles(void)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    struct sockaddr_in sin = t_ipv4("127.0.0.1", 0);
    uint32_t u = 0, u2 = 0;
    uint16_t g = 0;
    uintptr_t aff = 0;
    nd_result r;

    TABLE("NULL handles",
        ROW(nd_adapter_close(NULL), ND_INVALID_HANDLE),
        ROW(nd_adapter_query(NULL, NULL, &u), ND_INVALID_HANDLE),
        ROW(nd_adapter_create_overlapped_file(NULL, NULL), ND_INVALID_HANDLE),
        ROW(nd_adapter_create_completion_queue(NULL, NULL, 1, 0, 0, NULL), ND_INVALID_HANDLE),
        ROW(nd_adapter_create_memory_region(NULL, NULL, NULL), ND_INVALID_HANDLE),
        ROW(nd_adapter_create_memory_window(NULL, NULL), ND_INVALID_HANDLE),
        ROW(nd_adapter_create_connector(NULL, NULL, NULL), ND_INVALID_HANDLE),
        ROW(nd_adapter_create_listener(NULL, NULL, NULL), ND_INVALID_HANDLE),
        ROW(nd_adapter_create_queue_pair(NULL, NULL, NULL, NULL, 1, 1, 1, 1, 0, NULL), ND_INVALID_HANDLE),
        ROW(nd_adapter_create_shared_receive_queue(NULL, NULL, 1, 1, 0, 0, 0, NULL), ND_INVALID_HANDLE),
        ROW(nd_cq_close(NULL), ND_INVALID_HANDLE),
        ROW(nd_cq_notify(NULL, ND_CQ_NOTIFY_ANY, &ov), ND_INVALID_HANDLE),
        ROW(nd_cq_resize(NULL, 4), ND_INVALID_HANDLE),
        ROW(nd_cq_cancel_overlapped_requests(NULL), ND_INVALID_HANDLE),
        ROW(nd_cq_get_notify_affinity(NULL, &g, &aff), ND_INVALID_HANDLE),
        ROW(nd_srq_close(NULL), ND_INVALID_HANDLE),
        ROW(nd_srq_notify(NULL, &ov), ND_INVALID_HANDLE),
        ROW(nd_srq_modify(NULL, 4, 0), ND_INVALID_HANDLE),
        ROW(nd_srq_receive(NULL, NULL, NULL, 0), ND_INVALID_HANDLE),
        ROW(nd_srq_cancel_overlapped_requests(NULL), ND_INVALID_HANDLE),
        ROW(nd_mr_close(NULL), ND_INVALID_HANDLE),
        ROW(nd_mr_register(NULL, &u, 4, 0, &ov), ND_INVALID_HANDLE),
        ROW(nd_mr_deregister(NULL, &ov), ND_INVALID_HANDLE),
        ROW(nd_mr_cancel_overlapped_requests(NULL), ND_INVALID_HANDLE),
        ROW(nd_mw_close(NULL), ND_INVALID_HANDLE),
        ROW(nd_qp_close(NULL), ND_INVALID_HANDLE),
        ROW(nd_qp_flush(NULL), ND_INVALID_HANDLE),
        ROW(nd_qp_send(NULL, NULL, NULL, 0, 0), ND_INVALID_HANDLE),
        ROW(nd_qp_receive(NULL, NULL, NULL, 0), ND_INVALID_HANDLE),
        ROW(nd_qp_read(NULL, NULL, NULL, 0, 0, 0, 0), ND_INVALID_HANDLE),
        ROW(nd_qp_write(NULL, NULL, NULL, 0, 0, 0, 0), ND_INVALID_HANDLE),
        ROW(nd_qp_bind(NULL, NULL, NULL, NULL, &u, 4, ND_OP_FLAG_ALLOW_READ), ND_INVALID_HANDLE),
        ROW(nd_qp_invalidate(NULL, NULL, NULL, 0), ND_INVALID_HANDLE),
        ROW(nd_connector_close(NULL), ND_INVALID_HANDLE),
        ROW(nd_connector_bind(NULL, (struct sockaddr *)&sin, sizeof(sin)), ND_INVALID_HANDLE),
        ROW(nd_connector_connect(NULL, NULL, (struct sockaddr *)&sin, sizeof(sin), 0, 0, NULL, 0, &ov),
            ND_INVALID_HANDLE),
        ROW(nd_connector_complete_connect(NULL, &ov), ND_INVALID_HANDLE),
        ROW(nd_connector_accept(NULL, NULL, 0, 0, NULL, 0, &ov), ND_INVALID_HANDLE),
        ROW(nd_connector_reject(NULL, NULL, 0), ND_INVALID_HANDLE),
        ROW(nd_connector_get_read_limits(NULL, &u, &u2), ND_INVALID_HANDLE),
        ROW(nd_connector_get_private_data(NULL, NULL, &u), ND_INVALID_HANDLE),
        ROW(nd_connector_get_local_address(NULL, NULL, &u), ND_INVALID_HANDLE),
        ROW(nd_connector_get_peer_address(NULL, NULL, &u), ND_INVALID_HANDLE),
        ROW(nd_connector_notify_disconnect(NULL, &ov), ND_INVALID_HANDLE),
        ROW(nd_connector_disconnect(NULL, &ov), ND_INVALID_HANDLE),
        ROW(nd_connector_cancel_overlapped_requests(NULL), ND_INVALID_HANDLE),
        ROW(nd_listener_close(NULL), ND_INVALID_HANDLE),
        ROW(nd_listener_bind(NULL, (struct sockaddr *)&sin, sizeof(sin)), ND_INVALID_HANDLE),
        ROW(nd_listener_listen(NULL, 0), ND_INVALID_HANDLE),
        ROW(nd_listener_get_local_address(NULL, NULL, &u), ND_INVALID_HANDLE),
        ROW(nd_listener_get_connection_request(NULL, NULL, &ov), ND_INVALID_HANDLE),
        ROW(nd_listener_cancel_overlapped_requests(NULL), ND_INVALID_HANDLE),
        ROW(nd_port_close(NULL), ND_INVALID_HANDLE),
        ROW(nd_port_create(NULL), ND_INVALID_PARAMETER_1),
        ROW(nd_port_wait(NULL, 0, NULL), ND_INVALID_PARAMETER_1),
        ROW(nd_port_post(NULL, &ov, ND_SUCCESS, 0), ND_INVALID_PARAMETER_1),
        ROW(nd_get_overlapped_result(NULL, 0), ND_INVALID_PARAMETER_1),
        ROW(nd_open_adapter_by_address(NULL, 0, NULL), ND_INVALID_PARAMETER_1),
    );
    /* The calls that return a value rather than a status. */
    CHECK(nd_cq_get_results(NULL, &r, 1) == 0);
    CHECK(nd_mr_get_local_token(NULL) == 0 && nd_mr_get_remote_token(NULL) == 0);
    CHECK(nd_mw_get_remote_token(NULL) == 0);
    CHECK(nd_port_fd(NULL) == -1);
    CHECK(nd_strerror((nd_status)0x12345678) != NULL);
}

/* Objects of a working adapter, misused: zero and oversize counts, NULL outputs, states. */
static void counts_and_states(nd_adapter *a, const nd_adapter_info *in)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    static uint8_t buf[4096];
    nd_port *port;
    nd_cq *cq, *tmp_cq = NULL;
    nd_qp *qp, *tmp_qp = NULL;
    nd_mr *mr;
    nd_mw *mw;
    nd_connector *c;
    nd_listener *l;
    nd_sge sge[40];
    uint32_t u = 0, u2 = 0;
    struct sockaddr_in sin = t_ipv4("127.0.0.1", 0);

    CHECK_ST(nd_adapter_create_overlapped_file(a, &port), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_completion_queue(a, port, 16, 0, 0, &cq), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_queue_pair(a, cq, cq, NULL, 2, 2, 1, 1, 0, &qp), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_memory_region(a, port, &mr), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_memory_window(a, &mw), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_connector(a, port, &c), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_listener(a, port, &l), ND_SUCCESS);
    CHECK_ST(nd_mr_register(mr, buf, sizeof(buf), ND_MR_FLAG_ALLOW_LOCAL_WRITE, &ov), ND_SUCCESS);
    for (int i = 0; i < 40; i++)
        sge[i] = (nd_sge){ buf, 1, nd_mr_get_local_token(mr) };

    TABLE("counts and outputs",
        ROW(nd_adapter_query(a, NULL, NULL), ND_INVALID_PARAMETER_2),
        ROW(nd_adapter_create_overlapped_file(a, NULL), ND_INVALID_PARAMETER_1),
        ROW(nd_adapter_create_completion_queue(a, port, 0, 0, 0, &tmp_cq), ND_INVALID_PARAMETER_3),
        ROW(nd_adapter_create_completion_queue(a, port, in->max_completion_queue_depth + 1, 0, 0, &tmp_cq),
            ND_INVALID_PARAMETER_3),
        ROW(nd_adapter_create_completion_queue(a, NULL, 4, 0, 0, &tmp_cq), ND_INVALID_PARAMETER_2),
        ROW(nd_adapter_create_queue_pair(a, cq, cq, NULL, 0, 1, 1, 1, 0, &tmp_qp), ND_INVALID_PARAMETER_5),
        ROW(nd_adapter_create_queue_pair(a, cq, cq, NULL, 1, 0, 1, 1, 0, &tmp_qp), ND_INVALID_PARAMETER_6),
        ROW(nd_adapter_create_queue_pair(a, cq, cq, NULL, 1, 1, in->max_receive_sge + 1, 1, 0, &tmp_qp),
            ND_INVALID_PARAMETER_7),
        ROW(nd_adapter_create_queue_pair(a, cq, cq, NULL, 1, 1, 1, in->max_initiator_sge + 1, 0, &tmp_qp),
            ND_INVALID_PARAMETER_8),
        ROW(nd_adapter_create_queue_pair(a, cq, cq, NULL, 1, 1, 1, 1, in->max_inline_data_size + 1, &tmp_qp),
            ND_INVALID_PARAMETER_9),
        ROW(nd_adapter_create_queue_pair(a, NULL, cq, NULL, 1, 1, 1, 1, 0, &tmp_qp), ND_INVALID_PARAMETER_2),
        ROW(nd_adapter_create_queue_pair(a, cq, NULL, NULL, 1, 1, 1, 1, 0, &tmp_qp), ND_INVALID_PARAMETER_3),
        ROW(nd_cq_resize(cq, 0), ND_INVALID_PARAMETER_1),
        ROW(nd_cq_resize(cq, in->max_completion_queue_depth + 1), ND_INVALID_PARAMETER_1),
        ROW(nd_cq_notify(cq, 7, &ov), ND_INVALID_PARAMETER_1),
        ROW(nd_cq_notify(cq, ND_CQ_NOTIFY_ANY, NULL), ND_INVALID_PARAMETER_2),
        ROW(nd_qp_receive(qp, NULL, sge, 2), ND_DATA_OVERRUN),              /* more SGEs than created with */
        ROW(nd_qp_send(qp, NULL, sge, 1, 0x4000), ND_INVALID_PARAMETER_4),
        /* Counts far past the array: refused before any entry beyond the limit is read. */
        ROW(nd_qp_send(qp, NULL, sge, 0x10000000u, 0), ND_DATA_OVERRUN),
        ROW(nd_qp_send(qp, NULL, sge, 0x10000000u, ND_OP_FLAG_INLINE), ND_DATA_OVERRUN),
        ROW(nd_qp_write(qp, NULL, sge, 0x10000000u, 0, 0, 0), ND_DATA_OVERRUN),
        ROW(nd_qp_read(qp, NULL, sge, 0x10000000u, 0, 0, 0), ND_DATA_OVERRUN),
        ROW(nd_qp_receive(qp, NULL, sge, 0x10000000u), ND_DATA_OVERRUN),
        /* A NULL SGE array is ND's parameter 2 (after the request context) everywhere. */
        ROW(nd_qp_send(qp, NULL, NULL, 1, 0), ND_INVALID_PARAMETER_2),
        ROW(nd_qp_write(qp, NULL, NULL, 1, 0, 0, 0), ND_INVALID_PARAMETER_2),
        ROW(nd_qp_read(qp, NULL, NULL, 1, 0, 0, 0), ND_INVALID_PARAMETER_2),
        ROW(nd_qp_receive(qp, NULL, NULL, 1), ND_INVALID_PARAMETER_2),
        ROW(nd_qp_send(qp, NULL, sge, 1, 0), ND_CONNECTION_INVALID),        /* not connected */
        ROW(nd_qp_write(qp, NULL, sge, 1, 0, 0, 0), ND_CONNECTION_INVALID),
        ROW(nd_qp_read(qp, NULL, sge, 1, 0, 0, 0), ND_CONNECTION_INVALID),
        ROW(nd_mr_register(mr, buf, 16, 0, &ov), ND_INVALID_DEVICE_STATE),  /* registered already */
        ROW(nd_mr_register(mr, buf, 16, 0x40000000u, &ov), ND_INVALID_PARAMETER_3),
        ROW(nd_connector_get_read_limits(c, &u, &u2), ND_INVALID_DEVICE_STATE),
        ROW(nd_connector_complete_connect(c, &ov), ND_CONNECTION_INVALID),
        ROW(nd_connector_disconnect(c, &ov), ND_CONNECTION_INVALID),
        ROW(nd_connector_connect(c, qp, (struct sockaddr *)&sin, sizeof(sin), 0, 0, NULL, 0, &ov),
            STATUS_ADDRESS_NOT_ASSOCIATED),                                    /* not bound */
        ROW(nd_connector_bind(c, NULL, 0), ND_INVALID_PARAMETER_1),
        ROW(nd_listener_listen(l, 0), ND_INVALID_DEVICE_STATE),             /* not bound */
        ROW(nd_listener_get_local_address(l, NULL, NULL), ND_INVALID_PARAMETER_2),
        ROW(nd_listener_bind(l, NULL, 0), ND_INVALID_PARAMETER_1),
        ROW(nd_port_wait(port, 0, NULL), ND_INVALID_PARAMETER_3),
        ROW(nd_port_post(port, NULL, ND_SUCCESS, 0), ND_INVALID_PARAMETER_2),
        ROW(nd_port_close(port), ND_DEVICE_BUSY),                           /* objects still on it */
    );
    CHECK(tmp_cq == NULL && tmp_qp == NULL);
    CHECK(nd_cq_get_results(cq, NULL, 0) == 0);
    CHECK_ST(nd_listener_close(l), ND_SUCCESS);
    CHECK_ST(nd_connector_close(c), ND_SUCCESS);
    CHECK_ST(nd_mw_close(mw), ND_SUCCESS);
    CHECK_ST(nd_qp_close(qp), ND_SUCCESS);
    CHECK_ST(nd_mr_close(mr), ND_SUCCESS);
    CHECK_ST(nd_cq_close(cq), ND_SUCCESS);
    CHECK_ST(nd_port_close(port), ND_SUCCESS);
}

/* Objects of one adapter handed to another (two opens of an adapter are two adapters). */
static void other_adapter(nd_adapter *a, nd_adapter *b)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    static uint8_t buf[4096];
    nd_port *port;
    nd_cq *cq_b, *tmp_cq = NULL;
    nd_qp *qp_a, *qp_b, *tmp_qp = NULL;
    nd_mr *mr_b;
    nd_mw *mw_b;
    nd_connector *c_a;
    nd_listener *l_a;

    CHECK_ST(nd_port_create(&port), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_completion_queue(b, port, 16, 0, 0, &cq_b), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_queue_pair(b, cq_b, cq_b, NULL, 2, 2, 1, 1, 0, &qp_b), ND_SUCCESS);
    nd_cq *cq_a;
    CHECK_ST(nd_adapter_create_completion_queue(a, port, 16, 0, 0, &cq_a), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_queue_pair(a, cq_a, cq_a, NULL, 2, 2, 1, 1, 0, &qp_a), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_memory_region(b, port, &mr_b), ND_SUCCESS);
    CHECK_ST(nd_mr_register(mr_b, buf, sizeof(buf), ND_MR_FLAG_ALLOW_LOCAL_WRITE, &ov), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_memory_window(b, &mw_b), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_connector(a, port, &c_a), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_listener(a, port, &l_a), ND_SUCCESS);

    TABLE("objects of another adapter",
        ROW(nd_adapter_create_queue_pair(a, cq_b, cq_a, NULL, 1, 1, 1, 1, 0, &tmp_qp), ND_INVALID_PARAMETER_2),
        ROW(nd_adapter_create_queue_pair(a, cq_a, cq_b, NULL, 1, 1, 1, 1, 0, &tmp_qp), ND_INVALID_PARAMETER_3),
        ROW(nd_qp_bind(qp_a, NULL, mr_b, mw_b, buf, 64, ND_OP_FLAG_ALLOW_READ), ND_INVALID_PARAMETER_2), /* ND numbering: context 1, region 2 */
        ROW(nd_connector_connect(c_a, qp_b, NULL, 0, 0, 0, NULL, 0, &ov), ND_INVALID_PARAMETER_1),
        ROW(nd_connector_accept(c_a, qp_b, 0, 0, NULL, 0, &ov), ND_INVALID_PARAMETER_1),
    );
    CHECK(tmp_cq == NULL && tmp_qp == NULL);
    CHECK_ST(nd_listener_close(l_a), ND_SUCCESS);
    CHECK_ST(nd_connector_close(c_a), ND_SUCCESS);
    CHECK_ST(nd_mw_close(mw_b), ND_SUCCESS);
    CHECK_ST(nd_mr_close(mr_b), ND_SUCCESS);
    CHECK_ST(nd_qp_close(qp_a), ND_SUCCESS);
    CHECK_ST(nd_qp_close(qp_b), ND_SUCCESS);
    CHECK_ST(nd_cq_close(cq_a), ND_SUCCESS);
    CHECK_ST(nd_cq_close(cq_b), ND_SUCCESS);
    CHECK_ST(nd_port_close(port), ND_SUCCESS);
}

int main(void)
{
    nd_adapter_info info = { .info_version = ND_VERSION_2 };
    uint32_t size = sizeof(info);
    nd_adapter *a = t_open_loopback(), *b = t_open_loopback();

    CHECK(a != b);
    CHECK_ST(nd_adapter_query(a, &info, &size), ND_SUCCESS);
    null_handles();
    counts_and_states(a, &info);
    other_adapter(a, b);
    CHECK_ST(nd_adapter_close(b), ND_SUCCESS);
    CHECK_ST(nd_adapter_close(a), ND_SUCCESS);
    if (failures) {
        fprintf(stderr, "%u calls returned other than documented\n", failures);
        return 1;
    }
    puts("API misuse: every call returned its documented status");
    return 0;
}
