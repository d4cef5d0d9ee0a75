/* SPDX-License-Identifier: MIT */
/* Leveled, per-subsystem logging to stderr or ND_LOG_FILE; never to stdout. */
#ifndef ND_LOG_H
#define ND_LOG_H

enum nd_log_level { ND_LOG_NONE, ND_LOG_ERROR, ND_LOG_WARN, ND_LOG_INFO, ND_LOG_DEBUG, ND_LOG_TRACE };
enum nd_log_subsys { ND_SUB_CORE, ND_SUB_PORT, ND_SUB_CQ, ND_SUB_MEM, ND_SUB_SRQ, ND_SUB_ADDR,
                     ND_SUB_SHM, ND_SUB_IWARP, ND_SUB_CM, ND_SUB_VERBS, ND_SUB_UDP, ND_SUB_COUNT };

extern int nd_log_levels[ND_SUB_COUNT];
void nd_log_init(void);
void nd_log_write(enum nd_log_level level, enum nd_log_subsys sub, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The level check is inline so a disabled message costs one load and a branch. */
#define nd_log(level, sub, ...)                                   \
    do {                                                          \
        nd_log_init();                                            \
        if ((int)(level) <= nd_log_levels[(sub)])                 \
            nd_log_write((level), (sub), __VA_ARGS__);            \
    } while (0)

/* Data-path logging exists only in builds configured with -DND_DATAPATH_LOG. */
#ifdef ND_DATAPATH_LOG
#define nd_log_data(sub, ...) nd_log(ND_LOG_TRACE, sub, __VA_ARGS__)
#else
#define nd_log_data(sub, ...) do { } while (0)
#endif

#endif
