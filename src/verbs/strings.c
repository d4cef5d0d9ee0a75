// SPDX-License-Identifier: MIT
/* The names verbs programs print. */
#include "verbs_int.h"

VB_API const char *ibv_wc_status_str(enum ibv_wc_status status)
{
    static const char *const names[] = {
        [IBV_WC_SUCCESS] = "success",
        [IBV_WC_LOC_LEN_ERR] = "local length error",
        [IBV_WC_LOC_QP_OP_ERR] = "local QP operation error",
        [IBV_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
        [IBV_WC_LOC_PROT_ERR] = "local protection error",
        [IBV_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
        [IBV_WC_MW_BIND_ERR] = "memory management operation error",
        [IBV_WC_BAD_RESP_ERR] = "bad response error",
        [IBV_WC_LOC_ACCESS_ERR] = "local access error",
        [IBV_WC_REM_INV_REQ_ERR] = "remote invalid request error",
        [IBV_WC_REM_ACCESS_ERR] = "remote access error",
        [IBV_WC_REM_OP_ERR] = "remote operation error",
        [IBV_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
        [IBV_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
        [IBV_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
        [IBV_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
        [IBV_WC_REM_ABORT_ERR] = "aborted error",
        [IBV_WC_INV_EECN_ERR] = "invalid EE context number",
        [IBV_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
        [IBV_WC_FATAL_ERR] = "fatal error",
        [IBV_WC_RESP_TIMEOUT_ERR] = "response timeout error",
        [IBV_WC_GENERAL_ERR] = "general error",
        [IBV_WC_TM_ERR] = "TM error",
        [IBV_WC_TM_RNDV_INCOMPLETE] = "TM software rendezvous",
    };

    return (unsigned)status < sizeof(names) / sizeof(names[0]) && names[status] ? names[status] : "unknown";
}

VB_API const char *ibv_node_type_str(enum ibv_node_type type)
{
    switch (type) {
    case IBV_NODE_CA: return "InfiniBand channel adapter";
    case IBV_NODE_SWITCH: return "InfiniBand switch";
    case IBV_NODE_ROUTER: return "InfiniBand router";
    case IBV_NODE_RNIC: return "iWARP NIC";
    case IBV_NODE_USNIC: return "usNIC";
    case IBV_NODE_USNIC_UDP: return "usNIC UDP";
    case IBV_NODE_UNSPECIFIED: return "unspecified";
    default: return "unknown";
    }
}

VB_API const char *ibv_port_state_str(enum ibv_port_state state)
{
    switch (state) {
    case IBV_PORT_NOP: return "PORT_NOP";
    case IBV_PORT_DOWN: return "PORT_DOWN";
    case IBV_PORT_INIT: return "PORT_INIT";
    case IBV_PORT_ARMED: return "PORT_ARMED";
    case IBV_PORT_ACTIVE: return "PORT_ACTIVE";
    case IBV_PORT_ACTIVE_DEFER: return "PORT_ACTIVE_DEFER";
    default: return "invalid state";
    }
}

VB_API const char *ibv_event_type_str(enum ibv_event_type event)
{
    switch (event) {
    case IBV_EVENT_CQ_ERR: return "CQ error";
    case IBV_EVENT_QP_FATAL: return "local work queue catastrophic error";
    case IBV_EVENT_QP_REQ_ERR: return "invalid request local work queue error";
    case IBV_EVENT_QP_ACCESS_ERR: return "local access violation work queue error";
    case IBV_EVENT_COMM_EST: return "communication established";
    case IBV_EVENT_SQ_DRAINED: return "send queue drained";
    case IBV_EVENT_PATH_MIG: return "path migrated";
    case IBV_EVENT_PATH_MIG_ERR: return "path migration request error";
    case IBV_EVENT_DEVICE_FATAL: return "local catastrophic error";
    case IBV_EVENT_PORT_ACTIVE: return "port active";
    case IBV_EVENT_PORT_ERR: return "port error";
    case IBV_EVENT_LID_CHANGE: return "LID change";
    case IBV_EVENT_PKEY_CHANGE: return "P_Key change";
    case IBV_EVENT_SM_CHANGE: return "SM change";
    case IBV_EVENT_SRQ_ERR: return "SRQ catastrophic error";
    case IBV_EVENT_SRQ_LIMIT_REACHED: return "SRQ limit reached";
    case IBV_EVENT_QP_LAST_WQE_REACHED: return "last WQE reached";
    case IBV_EVENT_CLIENT_REREGISTER: return "client reregistration";
    case IBV_EVENT_GID_CHANGE: return "GID table change";
    case IBV_EVENT_WQ_FATAL: return "WQ fatal";
    default: return "unknown";
    }
}
