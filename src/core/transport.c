// SPDX-License-Identifier: MIT
#include "transport.h"
#include "transports/shm/shm.h"

/* Transports register here, in the order the core tries them. */
const struct nd_transport_ops *const nd_transports[] = {
    &shm_transport,
    NULL,
};
