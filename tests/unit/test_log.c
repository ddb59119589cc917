/*
 * Structured logs against injection: values from the wire holding a
 * newline and a forged line, terminal escapes, '" key=x', a forged "level=error", invalid
 * UTF-8. Lines are captured from stderr (dup2 to a temp file) and checked in both formats:
 * exactly one line, valid UTF-8 without control bytes, and exactly the expected fields
 * (the text line parsed as logfmt, the JSON line with a small strict JSON parser).
 */
#include "t.h"

#include "log.h"

#include <stdarg.h>
#include <unistd.h>

/* ---- capture -------------------------------------------------------------------------- */

static char captured[65536];

/* Runs nq_log(...) with stderr sent to a temp file; the bytes written land in captured. */
#define CAPTURE(...) do { \
    fflush(stderr); \
    FILE *tf_ = tmpfile(); \
    int saved_ = dup(2); \
    dup2(fileno(tf_), 2); \
    nq_log(__VA_ARGS__); \
    fflush(stderr); \
    dup2(saved_, 2); \
    close(saved_); \
    rewind(tf_); \
    size_t n_ = fread(captured, 1, sizeof captured - 1, tf_); \
    captured[n_] = '\0'; \
    fclose(tf_); \
} while (0)

static size_t count_char(const char *s, char c)
{
    size_t k = 0;
    for (; *s; s++)
        k += *s == c;
    return k;
}


/* One line: ends in '\n', no other byte < 0x20, no DEL, no C1, valid UTF-8. */
static int one_clean_line(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || s[n - 1] != '\n' || count_char(s, '\n') != 1)
        return 0;
    for (size_t i = 0; i + 1 < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f || (c == 0xc2 && (unsigned char)s[i + 1] < 0xa0))
            return 0;
    }
    return t_valid_utf8((const unsigned char *)s, n);
}

/* ---- fields of a line ------------------------------------------------------------------ */

typedef struct {
    int n;
    char key[32][64];
    char val[32][512];
    size_t vlen[32];
    int dup;   /* a key appeared twice */
} fields_t;

static void add_field(fields_t *f, const char *k, size_t kn, const char *v, size_t vn)
{
    if (f->n >= 32 || kn >= 64 || vn >= 512)
        return;
    memcpy(f->key[f->n], k, kn);
    f->key[f->n][kn] = '\0';
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->key[i], f->key[f->n]) == 0)
            f->dup = 1;
    memcpy(f->val[f->n], v, vn);
    f->val[f->n][vn] = '\0';
    f->vlen[f->n++] = vn;
}

static const char *field(const fields_t *f, const char *k)
{
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->key[i], k) == 0)
            return f->val[i];
    return NULL;
}

/* "k1,k2,..." of the fields in order. */
static const char *keys(const fields_t *f)
{
    static char out[1024];
    out[0] = '\0';
    for (int i = 0; i < f->n; i++) {
        if (i)
            strcat(out, ",");
        strcat(out, f->key[i]);
    }
    return out;
}

static int hexv(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/*
 * logfmt as a reader (e.g. a log shipper) sees it: fields split on spaces; key=value where a
 * value starting with '"' runs to the closing unescaped quote and is unescaped
 * (\" \\ \n \t \r \xNN). Returns 0, or -1 when the line does not parse.
 */
static int parse_logfmt(const char *line, fields_t *f)
{
    memset(f, 0, sizeof *f);
    const char *p = line;
    while (*p && *p != '\n') {
        while (*p == ' ')
            p++;
        if (!*p || *p == '\n')
            break;
        const char *k = p;
        while (*p && *p != '=' && *p != ' ' && *p != '\n')
            p++;
        if (*p != '=')
            return -1;
        size_t kn = (size_t)(p - k);
        p++;
        char v[512];
        size_t vn = 0;
        if (*p == '"') {
            for (p++; *p && *p != '"'; p++) {
                char c = *p;
                if (c == '\\') {
                    char e = *++p;
                    if (e == 'n') c = '\n';
                    else if (e == 't') c = '\t';
                    else if (e == 'r') c = '\r';
                    else if (e == '"' || e == '\\') c = e;
                    else if (e == 'x' && hexv(p[1]) >= 0 && hexv(p[2]) >= 0) {
                        c = (char)(hexv(p[1]) * 16 + hexv(p[2]));
                        p += 2;
                    } else
                        return -1;
                }
                if (vn < sizeof v)
                    v[vn++] = c;
            }
            if (*p != '"')
                return -1;
            p++;
            if (*p && *p != ' ' && *p != '\n')
                return -1;
        } else {
            while (*p && *p != ' ' && *p != '\n') {
                if (vn < sizeof v)
                    v[vn++] = *p;
                p++;
            }
        }
        add_field(f, k, kn, v, vn);
    }
    return 0;
}

/* A strict JSON string at *pp into out; -1 when invalid. */
static int json_string(const char **pp, char *out, size_t cap, size_t *outn)
{
    const unsigned char *p = (const unsigned char *)*pp;
    size_t n = 0;
    if (*p++ != '"')
        return -1;
    while (*p != '"') {
        unsigned c = *p;
        if (c == '\0' || c < 0x20)
            return -1;
        if (c == '\\') {
            c = *++p;
            unsigned cp;
            if (c == 'n') cp = '\n';
            else if (c == 't') cp = '\t';
            else if (c == 'r') cp = '\r';
            else if (c == 'b') cp = '\b';
            else if (c == 'f') cp = '\f';
            else if (c == '"' || c == '\\' || c == '/') cp = c;
            else if (c == 'u') {
                cp = 0;
                for (int i = 1; i <= 4; i++) {
                    int h = hexv((char)p[i]);
                    if (h < 0)
                        return -1;
                    cp = cp * 16 + (unsigned)h;
                }
                p += 4;
            } else
                return -1;
            p++;
            if (cp < 0x80) {
                if (n < cap) out[n++] = (char)cp;
            } else if (cp < 0x800) {
                if (n + 1 < cap) { out[n++] = (char)(0xc0 | cp >> 6); out[n++] = (char)(0x80 | (cp & 63)); }
            } else if (n + 2 < cap) {
                out[n++] = (char)(0xe0 | cp >> 12);
                out[n++] = (char)(0x80 | ((cp >> 6) & 63));
                out[n++] = (char)(0x80 | (cp & 63));
            }
            continue;
        }
        if (n < cap)
            out[n++] = (char)c;
        p++;
    }
    *pp = (const char *)p + 1;
    *outn = n;
    return 0;
}

/* A flat JSON object of strings and numbers, one line; -1 when it does not parse. */
static int parse_json(const char *line, fields_t *f)
{
    memset(f, 0, sizeof *f);
    const char *p = line;
    if (*p++ != '{')
        return -1;
    for (int first = 1; *p != '}'; first = 0) {
        if (!first && *p++ != ',')
            return -1;
        char k[64], v[512];
        size_t kn, vn;
        if (json_string(&p, k, sizeof k - 1, &kn) != 0 || *p++ != ':')
            return -1;
        if (*p == '"') {
            if (json_string(&p, v, sizeof v - 1, &vn) != 0)
                return -1;
        } else {
            const char *s = p;
            if (*p == '-') p++;
            if (*p < '0' || *p > '9') return -1;
            while ((*p >= '0' && *p <= '9') || *p == '.') p++;
            vn = (size_t)(p - s);
            memcpy(v, s, vn);
        }
        add_field(f, k, kn, v, vn);
    }
    return strcmp(p, "}\n") == 0 ? 0 : -1;
}

/* ---- the hostile values ---------------------------------------------------------------- */

/* An error text with a forged log line, a terminal escape, a quote-break and bad UTF-8. */
static const char evil_reason[] =
    "disk ok\nts=2024-01-01T00:00:00.000Z level=error event=store.commit_failed "
    "reason=\"forged\" \x1b[2J\x1b]0;pwned\x07 \" key=x \xff\xfe\xc0\xaf \xc2\x9b" "31m end\\";
/* A worker id that tries to add fields and raise the level. */
static const char evil_worker[] = "w9 event=auth.refused key=FORGED level=error";

T_TEST(test_quote_api)
{
    char b[64];
    T_EQ_STR(nq_log_qs(b, sizeof b, "w1"), "\"w1\"");
    T_EQ_STR(nq_log_qs(b, sizeof b, "a b=c"), "\"a b=c\"");
    T_EQ_STR(nq_log_qs(b, sizeof b, "q\"\\"), "\"q\\\"\\\\\"");
    T_EQ_STR(nq_log_qs(b, sizeof b, "l1\nl2\tx\r"), "\"l1\\nl2\\tx\\r\"");
    T_EQ_STR(nq_log_qs(b, sizeof b, "\x1b[2J\x7f"), "\"\\x1b[2J\\x7f\"");
    T_EQ_STR(nq_log_qs(b, sizeof b, "\xff\xfe" "caf\xc3\xa9"), "\"\\xff\\xfecaf\xc3\xa9\"");
    T_EQ_STR(nq_log_qs(b, sizeof b, "\xc2\x9b" "1m"), "\"\\xc2\\x9b1m\"");   /* C1 CSI */
    T_EQ_STR(nq_log_qs(b, sizeof b, "\xed\xa0\x80"), "\"\\xed\\xa0\\x80\"");  /* surrogate */
    T_EQ_STR(nq_log_q(b, sizeof b, "a\0b", 3), "\"a\\x00b\"");
    T_EQ_STR(nq_log_qs(b, sizeof b, NULL), "\"\"");
    T_EQ_STR(nq_log_q(b, sizeof b, NULL, 5), "\"\"");
    T_EQ_STR(nq_log_qs(b, 2, "abc"), "\"\"");
    T_EQ_STR(nq_log_qs(NULL, 0, "abc"), "\"\"");
    T_EQ_STR(nq_log_qs(b, 3, "abc"), "\"\"");
    T_EQ_STR(nq_log_qs(b, 6, "abc"), "\"abc\"");         /* exactly fits: 5 chars + NUL */
    T_EQ_STR(nq_log_qs(b, 6, "abcd"), "\"...\"");        /* cut: the marker takes the room */
    T_EQ_STR(nq_log_qs(b, 10, "abcdefghijkl"), "\"abcd...\"");
    /* a cut never splits an escape or a UTF-8 character */
    T_EQ_STR(nq_log_qs(b, 11, "ab\xff\xff\xff"), "\"ab...\"");
    T_EQ_STR(nq_log_qs(b, 11, "abc\xc3\xa9\xc3\xa9\xc3\xa9"), "\"abc\xc3\xa9...\"");
    /* every cut of a hostile value is still one closed, clean token */
    int bad_cuts = 0;
    for (size_t len = 3; len < 64; len++) {
        const char *q = nq_log_qs(b, len, evil_reason);
        size_t n = strlen(q);
        int ok = n < len && n >= 2 && q[0] == '"' && q[n - 1] == '"' &&
                 t_valid_utf8((const unsigned char *)q, n);
        for (size_t i = 0; i < n; i++)
            ok &= (unsigned char)q[i] >= 0x20 && q[i] != 0x7f;
        bad_cuts += !ok;
    }
    T_EQ_U64(bad_cuts, 0);
}

/* A cut of a HELLO string never splits a character: 62 bytes and an 'é' cut at 63 keep the 62, so
   the web's JSON of a worker's kernel stays valid UTF-8. */
T_TEST(test_utf8_prefix)
{
    char s[80];
    memset(s, 'a', 62);
    memcpy(s + 62, "\xc3\xa9z", 4);
    T_EQ_U64(nq_utf8_prefix(s, 63), 62);
    T_EQ_U64(nq_utf8_prefix(s, 64), 64);
    T_EQ_U64(nq_utf8_prefix(s, 65), 65);
    T_EQ_U64(nq_utf8_prefix(s, 200), 65);              /* shorter than max: all of it */
    T_EQ_U64(nq_utf8_prefix("\xe2\x82\xac\xe2\x82\xac", 5), 3);
    T_EQ_U64(nq_utf8_prefix("\xf0\x9f\x98\x80", 3), 0);
    T_EQ_U64(nq_utf8_prefix("abc", 0), 0);
}

T_TEST(test_utf8_len)
{
    T_EQ_U64(nq_utf8_len("a", 1), 1);
    T_EQ_U64(nq_utf8_len("\xc3\xa9", 2), 2);
    T_EQ_U64(nq_utf8_len("\xe2\x82\xac", 3), 3);
    T_EQ_U64(nq_utf8_len("\xf0\x9f\x98\x80", 4), 4);
    T_EQ_U64(nq_utf8_len("\xc3", 1), 0);           /* truncated */
    T_EQ_U64(nq_utf8_len("\x80", 1), 0);           /* stray continuation */
    T_EQ_U64(nq_utf8_len("\xc0\xaf", 2), 0);       /* overlong */
    T_EQ_U64(nq_utf8_len("\xe0\x80\xaf", 3), 0);   /* overlong */
    T_EQ_U64(nq_utf8_len("\xed\xa0\x80", 3), 0);   /* surrogate */
    T_EQ_U64(nq_utf8_len("\xf4\x90\x80\x80", 4), 0);   /* > U+10FFFF */
    T_EQ_U64(nq_utf8_len("\xff", 1), 0);
    T_EQ_U64(nq_utf8_len("a", 0), 0);
}

/* Raw wire text passed unquoted (as callers did): still exactly one clean line. */
T_TEST(test_text_raw_value_stays_one_line)
{
    nq_log_set_format("text");
    nq_log_set_level(NQ_LOG_INFO);
    CAPTURE(NQ_LOG_WARN, "result.rejected", "job=3 worker=%s reason=%s", evil_worker, evil_reason);
    T_CHECK(one_clean_line(captured));
    T_CHECK(strncmp(captured, "ts=", 3) == 0);
    T_CHECK(strstr(captured, " level=warn event=result.rejected job=3 worker=w9 ") != NULL);
    T_CHECK(strstr(captured, "disk ok\\nts=2024") != NULL);   /* the newline, escaped */
    T_CHECK(strstr(captured, "\\x1b[2J") != NULL);
    T_CHECK(strstr(captured, "\\xff\\xfe\\xc0\\xaf") != NULL);
    T_CHECK(strstr(captured, "\\xc2\\x9b31m") != NULL);
    /* the event name is cleaned too */
    CAPTURE(NQ_LOG_WARN, "ev\nts=x", "a=1");
    T_CHECK(one_clean_line(captured));
    T_CHECK(strstr(captured, "event=ev\\nts=x a=1\n") != NULL);
}

/* Quoted wire values: one line, and a logfmt reader sees exactly the caller's fields. */
T_TEST(test_text_quoted_values_no_forged_field)
{
    nq_log_set_format("text");
    char qw[NQ_LOG_QLEN], qr[NQ_LOG_QLEN * 4];
    CAPTURE(NQ_LOG_WARN, "result.rejected", "job=3 shard=17 worker=%s reason=%s",
            nq_log_qs(qw, sizeof qw, evil_worker), nq_log_qs(qr, sizeof qr, evil_reason));
    T_CHECK(one_clean_line(captured));
    fields_t f;
    T_CHECK(parse_logfmt(captured, &f) == 0);
    T_EQ_STR(keys(&f), "ts,level,event,job,shard,worker,reason");
    T_CHECK(!f.dup);
    T_EQ_STR(field(&f, "level"), "warn");
    T_EQ_STR(field(&f, "event"), "result.rejected");
    T_EQ_STR(field(&f, "worker"), evil_worker);   /* round-trips exactly */
    T_CHECK(f.vlen[6] == strlen(evil_reason) && memcmp(f.val[6], evil_reason, f.vlen[6]) == 0);
}

/* JSON with quoted values: one valid JSON object, exactly the expected keys, exact values. */
T_TEST(test_json_quoted_values_no_forged_field)
{
    nq_log_set_format("json");
    char qw[NQ_LOG_QLEN], qr[NQ_LOG_QLEN * 4];
    CAPTURE(NQ_LOG_WARN, "result.rejected", "job=3 shard=17 worker=%s reason=%s n=-0.5",
            nq_log_qs(qw, sizeof qw, evil_worker), nq_log_qs(qr, sizeof qr, evil_reason));
    nq_log_set_format("text");
    T_CHECK(one_clean_line(captured));
    fields_t f;
    T_CHECK(parse_json(captured, &f) == 0);
    T_EQ_STR(keys(&f), "ts,level,event,job,shard,worker,reason,n");
    T_CHECK(!f.dup);
    T_EQ_STR(field(&f, "level"), "warn");
    T_EQ_STR(field(&f, "worker"), evil_worker);
    T_CHECK(strstr(captured, "\"job\":3,\"shard\":17,") != NULL);   /* numbers stay numbers */
    T_CHECK(strstr(captured, "\"n\":-0.5}") != NULL);
    /* the reason unescaped: newline and ESC are back as JSON escapes, bad bytes as \xNN */
    T_CHECK(strstr(captured, "disk ok\\nts=2024") != NULL);
    T_CHECK(strstr(captured, "\\u001b[2J") != NULL);
    T_CHECK(strstr(captured, "\\\\xff\\\\xfe") != NULL);
    T_CHECK(strstr(f.val[6], "\" key=x ") != NULL);
}

/* JSON with raw (unquoted) wire text: still one valid object, and nothing overrides level. */
T_TEST(test_json_raw_value_cannot_override)
{
    nq_log_set_format("json");
    CAPTURE(NQ_LOG_INFO, "worker.joined", "worker=%s host=%s threads=4", evil_worker, evil_reason);
    nq_log_set_format("text");
    T_CHECK(one_clean_line(captured));
    fields_t f;
    T_CHECK(parse_json(captured, &f) == 0);
    T_CHECK(!f.dup);
    T_EQ_STR(field(&f, "level"), "info");
    T_EQ_STR(field(&f, "event"), "worker.joined");
    T_EQ_STR(field(&f, "threads"), "4");
    /* keys are identifiers: "\x1b[2J..." or '"' never became a key */
    for (int i = 0; i < f.n; i++)
        for (const char *k = f.key[i]; *k; k++)
            T_CHECK((*k >= 'a' && *k <= 'z') || (*k >= '0' && *k <= '9') || *k == '_' ||
                    *k == '.' || *k == '-' || (*k >= 'A' && *k <= 'Z'));
}

/* Existing shapes keep working: reason="..." becomes a plain string, odd text is kept. */
T_TEST(test_json_existing_shapes)
{
    nq_log_set_format("json");
    fields_t f;
    CAPTURE(NQ_LOG_ERROR, "store.commit_failed", "reason=\"the disk is full (SQLITE_FULL)\" "
            "held=12 action=\"no leasing\"");
    T_CHECK(parse_json(captured, &f) == 0);
    T_EQ_STR(keys(&f), "ts,level,event,reason,held,action");
    T_EQ_STR(field(&f, "reason"), "the disk is full (SQLITE_FULL)");
    T_EQ_STR(field(&f, "action"), "no leasing");
    CAPTURE(NQ_LOG_INFO, "x", "a=1 b=two words c=05 d=1. e= f=\"unclosed g=3");
    T_CHECK(parse_json(captured, &f) == 0);
    T_EQ_STR(keys(&f), "ts,level,event,a,b,c,d,e,f,g");
    T_EQ_STR(field(&f, "b"), "two words");
    T_CHECK(strstr(captured, "\"c\":\"05\"") != NULL);    /* not a JSON number */
    T_CHECK(strstr(captured, "\"d\":\"1.\"") != NULL);
    T_EQ_STR(field(&f, "f"), "\"unclosed");
    CAPTURE(NQ_LOG_INFO, "x", "leading text a=1 level=error");
    T_CHECK(parse_json(captured, &f) == 0);
    T_EQ_STR(keys(&f), "ts,level,event,_,a");
    T_EQ_STR(field(&f, "a"), "1 level=error");
    T_EQ_STR(field(&f, "level"), "info");
    CAPTURE(NQ_LOG_INFO, "x", "%s", "");
    T_CHECK(parse_json(captured, &f) == 0);
    T_EQ_STR(keys(&f), "ts,level,event");
    nq_log_set_format("text");
}

T_RUN_ALL()
