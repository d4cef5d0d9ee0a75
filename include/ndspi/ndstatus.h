/* SPDX-License-Identifier: MIT */
/* ND's status codes (ND_SUCCESS, ND_PENDING, ...): NTSTATUS values used as HRESULTs. */
#ifndef NDSPI_NDSTATUS_H
#define NDSPI_NDSTATUS_H

#include <ndspi/win32.h>
#include <netdirect/status.h>

#endif
