/* Structured logging: key=value or JSON lines on stderr. */
#include "log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static nq_log_level_t log_level = NQ_LOG_INFO;
static int log_json;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *const level_names[] = { "debug", "info", "warn", "error", "off" };

void nq_log_set_level(nq_log_level_t lvl) { log_level = lvl; }
int nq_log_enabled(nq_log_level_t lvl) { return lvl >= log_level && log_level != NQ_LOG_OFF; }

int nq_log_set_level_name(const char *name)
{
    for (int i = 0; i <= NQ_LOG_OFF; i++)
        if (strcmp(name, level_names[i]) == 0) {
            log_level = (nq_log_level_t)i;
            return 0;
        }
    return -1;
}

int nq_log_set_format(const char *name)
{
    if (strcmp(name, "text") == 0) log_json = 0;
    else if (strcmp(name, "json") == 0) log_json = 1;
    else return -1;
    return 0;
}

static int is_number(const char *s, size_t len)
{
    size_t i = (len > 0 && s[0] == '-') ? 1 : 0;
    int digits = 0, dot = 0;
    for (; i < len; i++) {
        if (s[i] >= '0' && s[i] <= '9') digits++;
        else if (s[i] == '.' && !dot) dot = 1;
        else return 0;
    }
    return digits > 0 && !(len > 1 && s[0] == '0' && s[1] != '.');
}

static void put_json_string(FILE *f, const char *s, size_t len)
{
    fputc('"', f);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

/* Turns "a=1 b=x y c=..." into JSON fields; a value runs to the next " key=". */
static void put_json_fields(FILE *f, const char *kv)
{
    const char *p = kv;
    while (*p) {
        while (*p == ' ') p++;
        const char *eq = strchr(p, '=');
        if (!eq) break;
        const char *v = eq + 1, *end = v;
        for (;;) {
            const char *sp = strchr(end, ' ');
            if (!sp) { end = v + strlen(v); break; }
            const char *nx = sp + 1;
            while (*nx && *nx != ' ' && *nx != '=') nx++;
            if (*nx == '=' && nx > sp + 1) { end = sp; break; }
            end = sp + 1;
        }
        fputc(',', f);
        put_json_string(f, p, (size_t)(eq - p));
        fputc(':', f);
        if (is_number(v, (size_t)(end - v))) fwrite(v, 1, (size_t)(end - v), f);
        else put_json_string(f, v, (size_t)(end - v));
        p = end;
    }
}

void nq_log(nq_log_level_t lvl, const char *event, const char *fmt, ...)
{
    if (!nq_log_enabled(lvl))
        return;
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char when[40];
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    pthread_mutex_lock(&log_lock);
    if (log_json) {
        fprintf(stderr, "{\"ts\":\"%s.%03ldZ\",\"level\":\"%s\",\"event\":", when, ts.tv_nsec / 1000000,
                level_names[lvl]);
        put_json_string(stderr, event, strlen(event));
        put_json_fields(stderr, msg);
        fputs("}\n", stderr);
    } else {
        fprintf(stderr, "ts=%s.%03ldZ level=%s event=%s%s%s\n", when, ts.tv_nsec / 1000000,
                level_names[lvl], event, msg[0] ? " " : "", msg);
    }
    pthread_mutex_unlock(&log_lock);
}
