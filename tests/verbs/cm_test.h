/* SPDX-License-Identifier: MIT */
/* Shared by the rdma_cm tests: a failed check exits 1 naming itself; expect() takes the next
 * event of a channel and exits unless it is of the wanted type. */
#ifndef ND_TESTS_CM_TEST_H
#define ND_TESTS_CM_TEST_H

#include <rdma/rdma_cma.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "%s:%d: %s (errno %d)\n", __FILE__, __LINE__, #c, errno); exit(1); } } while (0)

static inline struct rdma_cm_event *expect(struct rdma_event_channel *ch, enum rdma_cm_event_type type)
{
    struct rdma_cm_event *ev;

    CHECK(rdma_get_cm_event(ch, &ev) == 0);
    if (ev->event != type) {
        fprintf(stderr, "got %s, wanted %s\n", rdma_event_str(ev->event), rdma_event_str(type));
        exit(1);
    }
    return ev;
}

#endif
