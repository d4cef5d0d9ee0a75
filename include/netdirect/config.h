/* SPDX-License-Identifier: MIT */
/* The environment knobs the library reads, for nd_info and for users. */
#ifndef NETDIRECT_CONFIG_H
#define NETDIRECT_CONFIG_H

#include <netdirect/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nd_config_knob {
    const char *name;         /* environment variable, e.g. "ND_LOG" */
    const char *default_value;
    const char *value;        /* the value in effect (the environment's, or the default) */
    const char *description;
} nd_config_knob;

/* Number of knobs; index them 0..count-1 with nd_config_get. */
uint32_t nd_config_count(void);

/*
 * nd_config_get - describe knob @index. Returns ND_SUCCESS; ND_INVALID_PARAMETER_1 for an
 * index out of range; ND_INVALID_PARAMETER_2 for a NULL @knob. The strings are static.
 */
nd_status nd_config_get(uint32_t index, nd_config_knob *knob);

#ifdef __cplusplus
}
#endif
#endif
