/* SPDX-License-Identifier: MIT */
/* Every environment knob the library reads is declared once, in env.c's table. */
#ifndef ND_ENV_H
#define ND_ENV_H

#include <stdint.h>

enum nd_knob { ND_KNOB_LOG, ND_KNOB_LOG_FILE, ND_KNOB_TRANSPORT, ND_KNOB_IW_CRC, ND_KNOB_IW_TIMEOUT, ND_KNOB_CM_TIMEOUT,
                ND_KNOB_IW_FPDU_MAX, ND_KNOB_IW_P2P, ND_KNOB_IW_EXT, ND_KNOB_LOCK_BIAS, ND_KNOB_MR_HUGE_PAGES,
                ND_KNOB_VERBS_PERSONALITY, ND_KNOB_RDMACM_REFUSED_WAIT, ND_KNOB_DEVICE_TREE, ND_KNOB_COUNT };

/* The knob's value: the environment's if set and non-empty, else its default. */
const char *nd_env(enum nd_knob knob);
/* A knob in milliseconds, 100 ms to an hour; anything else reads as its default. */
uint32_t nd_env_ms(enum nd_knob knob);

#endif
