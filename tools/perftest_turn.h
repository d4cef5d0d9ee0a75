// SPDX-License-Identifier: MIT
/*
 * What perftest's ib_send_lat does each turn besides its verbs calls, between a message's
 * completion and its own Send: it stores a time stamp in an array of one per turn, and tests
 * CQ moderation by dividing the turn count by a value read at run time. nd_pingpong and
 * bench/sw_verbs_pingpong do the same with -T, so that a program compared with ib_send_lat
 * can carry its work too and the comparison is of the libraries underneath alone.
 * No library headers: it serves the ND tools and the verbs benchmark alike.
 */
#ifndef ND_PERFTEST_TURN_H
#define ND_PERFTEST_TURN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

struct perftest_turn {
    uint64_t *stamps;           /* one per turn; NULL: no work */
    uint32_t turns;
};

/* perftest reads its moderation from a structure in memory on every turn. */
static volatile uint32_t perftest_cq_moderation = 1;

/* Room for @turns turns; false when there is none. */
static inline bool perftest_turn_init(struct perftest_turn *t, uint32_t turns)
{
    t->turns = turns;
    t->stamps = calloc(turns ? turns : 1, sizeof(*t->stamps));
    return t->stamps != NULL;
}

static inline void perftest_turn_fini(struct perftest_turn *t)
{
    free(t->stamps);
    t->stamps = NULL;
}

/* Turn @turn's work; true when perftest would signal this turn's Send. */
static inline bool perftest_turn_work(struct perftest_turn *t, uint32_t turn)
{
    if (!t->stamps || turn >= t->turns)
        return false;
#if defined(__x86_64__)
    t->stamps[turn] = __builtin_ia32_rdtsc();
#else
    t->stamps[turn] = turn;
#endif
    return (turn + 1) % perftest_cq_moderation == 0;
}

#endif
