// SPDX-License-Identifier: MIT
#include "transport.h"
#include "env.h"
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
