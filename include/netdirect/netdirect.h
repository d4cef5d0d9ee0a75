/* SPDX-License-Identifier: MIT */
/* netdirect: Network Direct (ND v2) for Linux. The umbrella header. */
#ifndef NETDIRECT_NETDIRECT_H
#define NETDIRECT_NETDIRECT_H

#include <netdirect/status.h>
#include <netdirect/types.h>
#include <netdirect/config.h>
#include <netdirect/provider.h>
#include <netdirect/port.h>
#include <netdirect/adapter.h>
#include <netdirect/cq.h>
#include <netdirect/srq.h>
#include <netdirect/mr.h>
#include <netdirect/mw.h>
#include <netdirect/qp.h>
#include <netdirect/connector.h>
#include <netdirect/listener.h>

#endif
