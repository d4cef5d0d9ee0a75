// SPDX-License-Identifier: MIT
#include "transport.h"

/* Transports register here, in the order the core tries them. */
const struct nd_transport_ops *const nd_transports[] = {
    NULL,
};
