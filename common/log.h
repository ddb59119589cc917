/*
 * Structured logs to stderr: one line per event, key=value (default) or JSON
 * (--log-format json), with a level filter. The event name is the first key.
 *
 *   nq_log(NQ_LOG_INFO, "lease.expired", "job=%llu shard=%llu worker=%s", ...);
 *
 * In text form the line is "ts=... level=info event=lease.expired job=1 ...";
 * in JSON form the same keys become fields (values that parse as numbers stay numbers).
 */
#ifndef NQ_LOG_H
#define NQ_LOG_H

typedef enum { NQ_LOG_DEBUG = 0, NQ_LOG_INFO, NQ_LOG_WARN, NQ_LOG_ERROR, NQ_LOG_OFF } nq_log_level_t;

void nq_log_set_level(nq_log_level_t lvl);
int nq_log_set_level_name(const char *name);   /* debug|info|warn|error|off; -1 if unknown */
int nq_log_set_format(const char *name);       /* text|json; -1 if unknown */
int nq_log_enabled(nq_log_level_t lvl);

void nq_log(nq_log_level_t lvl, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
