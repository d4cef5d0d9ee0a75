// SPDX-License-Identifier: MIT
#include "transport.h"
#include "env.h"
#include "log.h"
#include "transports/shm/shm.h"
#include "transports/iwarp/iwarp.h"

#include <string.h>

/* Transports register here, in the order the core tries them: shm serves what it can. */
const struct nd_transport_ops *const nd_transports[] = {
    &shm_transport,
    &iwarp_transport,
    NULL,
};

uint32_t nd_lend_wanted;

void nd_transport_note_path(const struct nd_transport_ops *wire, pid_t peer)
{
    static _Atomic uint32_t said;   /* a bit per transport, by its place in nd_transports */
    uint32_t bit = 1;

    for (const struct nd_transport_ops *const *t = nd_transports; *t && *t != wire; t++)
        bit <<= 1;
    if (!(atomic_fetch_or(&said, bit) & bit))
        nd_log(ND_LOG_INFO, ND_SUB_CM, "connections of this process take %s%s%.0d%s", wire->name,
               peer > 0 ? " (the first: peer pid " : "", peer > 0 ? (int)peer : 0, peer > 0 ? ")" : "");
}

void nd_transports_lend(void)
{
    for (const struct nd_transport_ops *const *t = nd_transports; *t; t++)
        if ((*t)->lend)
            (*t)->lend();
}

bool nd_transport_enabled(const struct nd_transport_ops *t)
{
    const char *want = nd_env(ND_KNOB_TRANSPORT);

    return !strcmp(want, "auto") || !strcmp(want, t->name);
}
