/* SPDX-License-Identifier: MIT */
/*
 * What libibverbs.so.1 offers librdmacm.so.1 (version node NETDIRECT_VERBS_PRIVATE_0): the
 * core objects behind verbs ones. librdmacm reaches the core through libibverbs' copy of
 * it, so that its connectors and listeners live beside the QPs they connect.
 */
#ifndef ND_VERBS_NDV_H
#define ND_VERBS_NDV_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include "core/core.h"

#include "core/env.h"

nd_adapter *ndv_context_adapter(struct ibv_context *ctx);
nd_qp *ndv_qp_core(struct ibv_qp *qp);
/* The CM moved the connection on: @state INIT (created for the CM), RTS (established, with
 * its read limits) or ERR (ended). */
void ndv_qp_cm_state(struct ibv_qp *qp, enum ibv_qp_state state, uint32_t ird, uint32_t ord);
/* The CM is connecting the QP (@on) or has finished: meanwhile posts on it wait. */
void ndv_qp_cm_attaching(struct ibv_qp *qp, bool on);
/* The QP's RNR retry count (rdma_conn_param's): 7 waits for a receive for ever. */
void ndv_qp_rnr_retry(struct ibv_qp *qp, uint8_t rnr_retry);
/* The QP's local ACK timeout as the CM was asked for it (RDMA_OPTION_ID_ACK_TIMEOUT). */
void ndv_qp_cm_timeout(struct ibv_qp *qp, uint8_t timeout);
/* The QP numbered @qpn (an application-managed QP, rdma_conn_param's qp_num), held so that
 * its memory stays until ndv_qp_release even if the application destroys it; NULL if none. */
struct ibv_qp *ndv_qp_find(struct ibv_context *ctx, uint32_t qpn);
void ndv_qp_release(struct ibv_qp *qp);
/* ndv_qp_cm_state for a held QP: nothing once the application has begun to destroy it. */
void ndv_qp_cm_state_held(struct ibv_qp *qp, enum ibv_qp_state state, uint32_t ird, uint32_t ord);
/* Has the peer completed receives of @qp that no poll of its CQ has taken yet? */
bool ndv_qp_receives_pending(struct ibv_qp *qp);
/* A library thread (the core's nd_thread_start): every signal blocked, named @name. */
int ndv_thread_start(pthread_t *thread, void *(*fn)(void *), void *arg, const char *name);
/* The core's one status-to-errno table (nd_status_errno). */
int ndv_status_errno(int st);
/* Write nd0's device tree (devtree.c) and return its directory: netdirect-run's, before
 * the program starts. 0 or -errno. */
int ndv_devtree_publish(char *root, size_t len);
/* A knob of the one table (core/env.c), as nd_env reads it for libibverbs' core. */
const char *ndv_env(enum nd_knob knob);

#endif
