/* SPDX-License-Identifier: MIT */
/*
 * The core's door: the calls every front end makes. Each takes core objects and returns
 * the core's status (core.h: 0, -errno, ND_EARG). src/nd gives ND's programs each one as
 * the nd_* entry point of the same name, in NTSTATUS; verbs and rdma_cm call them as they
 * are. The objects are ND's handles (include/netdirect/types.h), which the core defines.
 */
#ifndef ND_CORE_DOOR_H
#define ND_CORE_DOOR_H

/* adapter.c */
int ndc_open_adapter(uint64_t adapter_id, nd_adapter **out);
int ndc_open_adapter_by_address(const struct sockaddr *addr, uint32_t addr_len, nd_adapter **adapter);
int ndc_adapter_close(nd_adapter *a);

/* adapter_create.c */
int ndc_adapter_query(nd_adapter *a, nd_adapter_info *info, uint32_t *size);
int ndc_adapter_query_address_list(nd_adapter *a, nd_address_list *list, uint32_t *size);
int ndc_adapter_create_overlapped_file(nd_adapter *a, nd_port **port);
int ndc_adapter_create_completion_queue(nd_adapter *a, nd_port *port, uint32_t depth, uint16_t group,
                                        uintptr_t affinity, nd_cq **cq);
int ndc_adapter_create_queue_pair(nd_adapter *a, nd_cq *rcq, nd_cq *icq, void *context, uint32_t rq_depth,
                                  uint32_t iq_depth, uint32_t rq_sge, uint32_t iq_sge, uint32_t inline_size,
                                  nd_qp **qp);
int ndc_adapter_create_queue_pair_with_srq(nd_adapter *a, nd_cq *rcq, nd_cq *icq, nd_srq *srq, void *context,
                                           uint32_t iq_depth, uint32_t iq_sge, uint32_t inline_size,
                                           nd_qp **qp);

/* addr.c */
int ndc_query_address_list(nd_address_list *list, uint32_t *size);
int ndc_resolve_address(const struct sockaddr *addr, uint32_t addr_len, uint64_t *adapter_id);

/* cm.c */
int ndc_adapter_create_connector(nd_adapter *a, nd_port *port, nd_connector **out);
int ndc_connector_bind(nd_connector *c, const struct sockaddr *addr, uint32_t len);
int ndc_connector_connect(nd_connector *c, nd_qp *qp, const struct sockaddr *dest, uint32_t dest_len,
                          uint32_t ird, uint32_t ord, const void *pdata, uint32_t plen, nd_overlapped *ov);
int ndc_connector_complete_connect(nd_connector *c, nd_overlapped *ov);
int ndc_connector_accept(nd_connector *c, nd_qp *qp, uint32_t ird, uint32_t ord, const void *pdata,
                         uint32_t plen, nd_overlapped *ov);
int ndc_connector_reject(nd_connector *c, const void *pdata, uint32_t plen);
int ndc_connector_notify_disconnect(nd_connector *c, nd_overlapped *ov);
int ndc_connector_disconnect(nd_connector *c, nd_overlapped *ov);
int ndc_connector_cancel_overlapped_requests(nd_connector *c);
int ndc_connector_get_overlapped_result(nd_connector *c, nd_overlapped *ov, int wait);
int ndc_connector_close(nd_connector *c);

/* cm_query.c */
int ndc_connector_get_read_limits(nd_connector *c, uint32_t *inbound, uint32_t *outbound);
int ndc_connector_get_private_data(nd_connector *c, void *buf, uint32_t *len);
int ndc_connector_get_local_address(nd_connector *c, struct sockaddr *addr, uint32_t *len);
int ndc_connector_get_peer_address(nd_connector *c, struct sockaddr *addr, uint32_t *len);

/* cq.c */
/* A failed result's status reads as the front end shows it (nd_status_shown). */
uint32_t ndc_cq_get_results(nd_cq *cq, nd_result *results, uint32_t max);
int ndc_cq_notify(nd_cq *cq, uint32_t type, nd_overlapped *ov);
int ndc_cq_cancel_overlapped_requests(nd_cq *cq);
int ndc_cq_get_overlapped_result(nd_cq *cq, nd_overlapped *ov, int wait);
int ndc_cq_resize(nd_cq *cq, uint32_t depth);
int ndc_cq_get_notify_affinity(nd_cq *cq, uint16_t *group, uintptr_t *affinity);
int ndc_cq_close(nd_cq *cq);

/* env.c */
uint32_t ndc_config_count(void);
int ndc_config_get(uint32_t index, nd_config_knob *knob);

/* listener.c */
int ndc_adapter_create_listener(nd_adapter *a, nd_port *port, nd_listener **out);
int ndc_listener_bind(nd_listener *l, const struct sockaddr *addr, uint32_t len);
int ndc_listener_listen(nd_listener *l, uint32_t backlog);
int ndc_listener_get_local_address(nd_listener *l, struct sockaddr *addr, uint32_t *len);
int ndc_listener_get_connection_request(nd_listener *l, nd_connector *c, nd_overlapped *ov);
void ndc_listener_notify_requests(nd_listener *l, nd_request_fn fn, void *ctx);
int ndc_listener_take_request(nd_listener *l, nd_connector **out);
int ndc_listener_cancel_overlapped_requests(nd_listener *l);
int ndc_listener_get_overlapped_result(nd_listener *l, nd_overlapped *ov, int wait);
int ndc_listener_close(nd_listener *l);

/* mem.c */
int ndc_adapter_create_memory_region(nd_adapter *a, nd_port *port, nd_mr **out);
/* Registration and deregistration complete before they return: no request. */
int ndc_mr_register(nd_mr *mr, const void *buf, size_t len, uint32_t flags);
int ndc_mr_deregister(nd_mr *mr);
uint32_t ndc_mr_get_local_token(nd_mr *mr);
uint32_t ndc_mr_get_remote_token(nd_mr *mr);
int ndc_mr_cancel_overlapped_requests(nd_mr *mr);
int ndc_mr_get_overlapped_result(nd_mr *mr, nd_overlapped *ov, int wait);
int ndc_mr_close(nd_mr *mr);
int ndc_adapter_create_memory_window(nd_adapter *a, nd_mw **out);
uint32_t ndc_mw_get_remote_token(nd_mw *mw);
int ndc_mw_close(nd_mw *mw);

/* ov.c */
int ndc_get_overlapped_result(nd_overlapped *ov, int wait);

/* port.c */
int ndc_port_create(nd_port **out);
int ndc_port_close(nd_port *port);
int ndc_port_fd(const nd_port *cport);
int ndc_port_wait(nd_port *port, int timeout_ms, nd_overlapped **out);
int ndc_port_post(nd_port *port, nd_overlapped *ov, int status, uint64_t bytes);

/* qp.c */
int ndc_qp_close(nd_qp *qp);
int ndc_qp_flush(nd_qp *qp);

/* qp_post.c */
int ndc_qp_read(nd_qp *qp, void *ctx, const nd_sge *sge, uint32_t nsge, uint64_t raddr, uint32_t rtoken,
                uint32_t flags);
int ndc_qp_write(nd_qp *qp, void *ctx, const nd_sge *sge, uint32_t nsge, uint64_t raddr, uint32_t rtoken,
                 uint32_t flags);
int ndc_qp_send(nd_qp *qp, void *ctx, const nd_sge *sge, uint32_t nsge, uint32_t flags);
int ndc_qp_receive(nd_qp *qp, void *ctx, const nd_sge *sge, uint32_t nsge);
int ndc_qp_bind(nd_qp *qp, void *ctx, nd_mr *mr, nd_mw *mw, const void *buf, size_t len, uint32_t flags);
int ndc_qp_invalidate(nd_qp *qp, void *ctx, nd_mw *mw, uint32_t flags);

/* sharemem.c */
int ndc_alloc_memory(size_t size, void **out);
int ndc_free_memory(void *p);

/* srq.c */
int ndc_adapter_create_shared_receive_queue(nd_adapter *a, nd_port *port, uint32_t depth,
                                            uint32_t max_request_sge, uint32_t notify_threshold,
                                            uint16_t group, uintptr_t affinity, nd_srq **out);
int ndc_srq_cancel_overlapped_requests(nd_srq *s);
int ndc_srq_close(nd_srq *s);
int ndc_srq_get_notify_affinity(nd_srq *s, uint16_t *group, uintptr_t *affinity);
int ndc_srq_modify(nd_srq *s, uint32_t depth, uint32_t notify_threshold);
int ndc_srq_notify(nd_srq *s, nd_overlapped *ov);
int ndc_srq_receive(nd_srq *s, void *ctx, const nd_sge *sge, uint32_t nsge);
int ndc_srq_get_overlapped_result(nd_srq *s, nd_overlapped *ov, int wait);

#endif
