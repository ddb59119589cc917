/*
 * Structured logs to stderr: one line per event, key=value (default) or JSON
 * (--log-format json), with a level filter. The event name is the first key.
 *
 *   nq_log(NQ_LOG_INFO, "lease.expired", "job=%llu shard=%llu worker=%s", ...);
 *
 * In text form the line is "ts=... level=info event=lease.expired job=1 ...";
 * in JSON form the same keys become fields (values that parse as numbers stay numbers).
 *
 * Values that come from the wire (worker ids, hosts, error texts) must go through
 * nq_log_q()/nq_log_qs(), which make them ONE quoted token:
 *
 *   char qw[NQ_LOG_QLEN];
 *   nq_log(NQ_LOG_WARN, "auth.refused", "worker=%s", nq_log_qs(qw, sizeof qw, id));
 *
 * Whatever a line holds, nq_log() itself guarantees: the text line has no raw control
 * byte (< 0x20, 0x7f, C1) and no invalid UTF-8 (they are written as \n, \t, \r, \xNN),
 * so a value cannot start a new line; a JSON line is one valid JSON object whose keys are
 * the formatter's keys (a key is [A-Za-z0-9_.-]+; "ts", "level", "event" and keys seen
 * earlier in the line never start a new field, so an unquoted value cannot override them).
 * Only quoting keeps a space + "key=" inside a value from starting a new field.
 */
#ifndef NQ_LOG_H
#define NQ_LOG_H

#include <stddef.h>

typedef enum { NQ_LOG_DEBUG = 0, NQ_LOG_INFO, NQ_LOG_WARN, NQ_LOG_ERROR, NQ_LOG_OFF } nq_log_level_t;

void nq_log_set_level(nq_log_level_t lvl);
int nq_log_set_level_name(const char *name);   /* debug|info|warn|error|off; -1 if unknown */
int nq_log_set_format(const char *name);       /* text|json; -1 if unknown */
int nq_log_enabled(nq_log_level_t lvl);

void nq_log(nq_log_level_t lvl, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A buffer size for nq_log_q that holds a 60-byte value even if every byte is escaped. */
#define NQ_LOG_QLEN 256

/*
 * Quotes the N bytes at S (any bytes: NUL, controls, invalid UTF-8) into BUF as one
 * logfmt token: '"' ... '"' with \" \\ \n \t \r and \xNN (other bytes < 0x20, 0x7f,
 * the two bytes of a C1 control, every byte that is not part of valid UTF-8) escaped;
 * valid UTF-8 is kept as is. The result is always NUL-terminated, quoted and closed:
 * when it does not fit in LEN bytes it is cut at a character/escape boundary and ends
 * in ..." instead. Returns BUF, or the static string "\"\"" when LEN < 3 or BUF is NULL;
 * S may be NULL when N is 0. The JSON format unescapes such a token into a JSON string.
 */
const char *nq_log_q(char *buf, size_t len, const void *s, size_t n);
/* The same for a NUL-terminated string; NULL gives "". */
const char *nq_log_qs(char *buf, size_t len, const char *s);

/* A value a user gave (a path, an endpoint): as it is when it is one plain token ([A-Za-z0-9._/:@+,*-]),
   else quoted as nq_log_qs does, so `--db "c db.db"` logs db="c db.db", not a stray key. */
const char *nq_log_v(char *buf, size_t len, const char *s);

/*
 * Length (1..4) of the valid UTF-8 character starting at S (N bytes available), or 0
 * when S does not start one (stray continuation, overlong form, surrogate, > U+10FFFF,
 * truncated sequence, or N == 0). Shared with the metrics renderer.
 */
size_t nq_utf8_len(const void *s, size_t n);
/* The bytes of the longest prefix of valid UTF-8 text s (NUL-terminated) that fits in max
   bytes and ends on a character boundary: a cut there never splits a character. */
size_t nq_utf8_prefix(const char *s, size_t max);

#endif
