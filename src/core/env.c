// SPDX-License-Identifier: MIT
#include "core.h"
#include "env.h"

#include <stdlib.h>

static const struct {
    const char *name, *default_value, *description;
} knobs[ND_KNOB_COUNT] = {
    [ND_KNOB_LOG] = { "ND_LOG", "warn",
                      "log levels: LEVEL or SUBSYS:LEVEL,... (levels none error warn info debug "
                      "trace; subsystems core port cq mem srq addr shm iwarp cm verbs)" },
    [ND_KNOB_LOG_FILE] = { "ND_LOG_FILE", "", "append log lines to this file instead of stderr" },
    [ND_KNOB_TRANSPORT] = { "ND_TRANSPORT", "auto",
                            "auto (shm for same-host peers of this uid, iwarp otherwise), shm or iwarp: "
                            "connect and listen with this transport only" },
    [ND_KNOB_IW_CRC] = { "ND_IWARP_CRC", "0", "1: ask iWARP peers for MPA CRC32c (it is on when either side asks)" },
    [ND_KNOB_IW_TIMEOUT] = { "ND_IWARP_TIMEOUT_MS", "10000",
                             "an iWARP peer that acknowledges nothing (TCP), answers no Read (placement) or stops "
                             "half-way through an FPDU for this long: the oldest request completes "
                             "-ETIMEDOUT, the rest flush" },
    [ND_KNOB_CM_TIMEOUT] = { "ND_CM_TIMEOUT_MS", "10000",
                             "a connection handshake the peer leaves unanswered this long (no reply to a "
                             "Connect, no CompleteConnect after an Accept, no request from a new connection): "
                             "Connect or Accept completes -ETIMEDOUT" },
    [ND_KNOB_IW_FPDU_MAX] = { "ND_IWARP_FPDU_MAX", "32768",
                              "the largest iWARP FPDU we send, bytes (256-65544); TCP's current MSS, when "
                              "smaller, wins" },
    [ND_KNOB_IW_P2P] = { "ND_IWARP_P2P", "0",
                         "1: a Connect asks iWARP peers for RFC 6581 peer-to-peer mode (an RTR frame after the "
                         "reply; the peer's Accept then waits for our CompleteConnect)" },
    [ND_KNOB_IW_EXT] = { "ND_IWARP_EXT", "1",
                         "1: offer netdirect peers netdirect's iWARP extensions (Sends and Writes confirmed by "
                         "zero-length Reads, Accept waiting for CompleteConnect); 0: speak plain iWARP to every "
                         "peer, as towards Linux siw or an RNIC" },
    [ND_KNOB_LOCK_BIAS] = { "ND_LOCK_BIAS", "1",
                            "0: queue pair, CQ and SRQ locks always take their mutex (1: a lock one thread "
                            "takes 128 times in a row lets that thread in without atomic instructions)" },
    [ND_KNOB_MR_HUGE_PAGES] = { "ND_MR_HUGE_PAGES", "1",
                                "1: after Register returns, a thread of the adapter turns the whole 2 MiB blocks "
                                "of ordinary memory in the region into transparent huge pages (MADV_COLLAPSE), so "
                                "a peer's cross-memory Write or Read pins one page where it pinned 512; 0: memory "
                                "is left as it is" },
    [ND_KNOB_VERBS_PERSONALITY] = { "ND_VERBS_PERSONALITY", "roce",
                                    "what the verbs front end's device (nd0) reports itself as: roce (an "
                                    "InfiniBand-transport CA on Ethernet, IPv4-mapped RoCE v2 GIDs) or iwarp (an "
                                    "iWARP RNIC, as siw); the wire is the same either way" },
    [ND_KNOB_RDMACM_REFUSED_WAIT] = { "ND_RDMACM_REFUSED_WAIT", "250",
                                      "milliseconds (0 to 10000) an rdma_connect whose dial finds no listener "
                                      "dials again before it reports REJECTED (-ECONNREFUSED): a server between "
                                      "a handshake and its rdma_listen (perftest -R) is waited for" },
    [ND_KNOB_DEVICE_TREE] = { "ND_DEVICE_TREE", "",
                              "set by netdirect-run: the directory holding nd0's /sys/class/infiniband, "
                              "/sys/class/infiniband_verbs and /dev/infiniband entries, which the program "
                              "sees at those paths (docs/verbs.md, \"The device in sysfs\")" },
};

const char *nd_env(enum nd_knob knob)
{
    const char *v = getenv(knobs[knob].name);

    return v && *v ? v : knobs[knob].default_value;
}

uint32_t nd_env_ms(enum nd_knob knob)
{
    long v = strtol(nd_env(knob), NULL, 10);

    return v >= 100 && v <= 3600000 ? (uint32_t)v : (uint32_t)strtol(knobs[knob].default_value, NULL, 10);
}

ND_DOOR uint32_t ndc_config_count(void)
{
    return ND_KNOB_COUNT;
}

ND_DOOR int ndc_config_get(uint32_t index, nd_config_knob *knob)
{
    if (index >= ND_KNOB_COUNT)
        return ND_EARG(1);
    if (!knob)
        return ND_EARG(2);
    knob->name = knobs[index].name;
    knob->default_value = knobs[index].default_value;
    knob->value = nd_env((enum nd_knob)index);
    knob->description = knobs[index].description;
    return 0;
}
