/* SPDX-License-Identifier: MIT */
/*
 * ND's front end: the nd_* entry points of include/netdirect/, each the core's door call
 * of the same name (core/door.h) with the core's status turned into ND's NTSTATUS.
 */
#ifndef ND_ND_H
#define ND_ND_H

#include "core/core.h"

#include <netdirect/netdirect.h>

/* The NTSTATUS ND names for the core's status @st; 0 stays ND_SUCCESS. */
nd_status nd_ntstatus_of(int st);
/* The core's status for an NTSTATUS (a program's own, posted to a port). */
int nd_core_status_of(nd_status st);

static inline __attribute__((always_inline)) nd_status nd_ntstatus(int st)
{
    return ND_LIKELY(st == 0) ? ND_SUCCESS : nd_ntstatus_of(st);
}

/* ND's entry point nd_@name: the door call ndc_@name, its status in NTSTATUS. */
#define ND_ENTRY(name, params, args)                    \
    ND_API nd_status nd_##name params                   \
    {                                                   \
        return nd_ntstatus(ndc_##name args);            \
    }

#endif
