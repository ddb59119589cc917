/* Rendering documents: JSON text, export pages (CSV and streamed JSON), human views. */
#include "t.h"

#include <math.h>

#include "query.h"
#include "render.h"

/* A packed document, unpacked for rendering. */
typedef struct {
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_unpacked up;
} doc_t;

static void doc_init(doc_t *d)
{
    msgpack_sbuffer_init(&d->sb);
    msgpack_packer_init(&d->pk, &d->sb, msgpack_sbuffer_write);
    msgpack_unpacked_init(&d->up);
}

static const msgpack_object *doc_obj(doc_t *d)
{
    size_t off = 0;
    T_CHECK(msgpack_unpack_next(&d->up, d->sb.data, d->sb.size, &off) == MSGPACK_UNPACK_SUCCESS);
    return &d->up.data;
}

static void doc_free(doc_t *d)
{
    msgpack_unpacked_destroy(&d->up);
    msgpack_sbuffer_destroy(&d->sb);
}

static void key(msgpack_packer *pk, const char *s)
{
    msgpack_pack_str_with_body(pk, s, strlen(s));
}

/* What a renderer prints, as a malloc'd string. */
typedef struct {
    char *text;
    size_t len;
    FILE *f;
} capture_t;

static FILE *cap_open(capture_t *c)
{
    c->text = NULL;
    c->len = 0;
    c->f = open_memstream(&c->text, &c->len);
    T_CHECK(c->f != NULL);
    return c->f;
}

static const char *cap_text(capture_t *c)
{
    fclose(c->f);
    return c->text;
}

static int starts_with(const char *s, const char *prefix)
{
    return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

T_TEST(test_json_values)
{
    doc_t d;
    capture_t c;
    doc_init(&d);
    msgpack_pack_map(&d.pk, 8);
    key(&d.pk, "a");
    msgpack_pack_array(&d.pk, 6);
    msgpack_pack_uint64(&d.pk, 1);
    msgpack_pack_int64(&d.pk, -2);
    msgpack_pack_str_with_body(&d.pk, "x\"y\\z\n\t\x01\x7f", 10);
    msgpack_pack_nil(&d.pk);
    msgpack_pack_true(&d.pk);
    msgpack_pack_false(&d.pk);
    key(&d.pk, "b");
    msgpack_pack_map(&d.pk, 1);
    key(&d.pk, "c");
    msgpack_pack_array(&d.pk, 0);
    key(&d.pk, "big");
    query_pack_u128(&d.pk, ((unsigned __int128)1 << 64) + 5);
    key(&d.pk, "max");
    query_pack_u128(&d.pk, ~(unsigned __int128)0);
    key(&d.pk, "f");
    msgpack_pack_double(&d.pk, 0.1);
    key(&d.pk, "inf");
    msgpack_pack_double(&d.pk, INFINITY);
    key(&d.pk, "bin");
    msgpack_pack_bin_with_body(&d.pk, "\x00\xff", 2);
    msgpack_pack_int(&d.pk, 7);   /* a key that is not a string */
    msgpack_pack_float(&d.pk, 1.5f);
    render_json(cap_open(&c), doc_obj(&d));
    T_EQ_STR(cap_text(&c),
             "{\"a\":[1,-2,\"x\\\"y\\\\z\\n\\t\\u0001\\u007f\\u0000\",null,true,false],\"b\":{\"c\":[]},"
             "\"big\":18446744073709551621,\"max\":340282366920938463463374607431768211455,"
             "\"f\":0.1,\"inf\":null,\"bin\":\"00ff\",\"7\":1.5}\n");
    free(c.text);
    doc_free(&d);
}

/* Floats print so they read back as the same double. */
T_TEST(test_json_floats)
{
    double vals[6] = { 1.0 / 3, 2.0 / 3, 1e-300, 123456789.123456789, -0.0, 5e22 };
    for (int i = 0; i < 6; i++) {
        doc_t d;
        capture_t c;
        doc_init(&d);
        msgpack_pack_double(&d.pk, vals[i]);
        render_json(cap_open(&c), doc_obj(&d));
        const char *t = cap_text(&c);
        char *end = NULL;
        double back = strtod(t, &end);
        T_CHECK(back == vals[i] && signbit(back) == signbit(vals[i]));
        T_EQ_STR(end, "\n");
        free(c.text);
        doc_free(&d);
    }
}

T_TEST(test_u128_and_get)
{
    doc_t d;
    unsigned __int128 v = 0;
    doc_init(&d);
    msgpack_pack_array(&d.pk, 7);
    msgpack_pack_uint64(&d.pk, 42);
    msgpack_pack_ext(&d.pk, 8, 1);                  /* wrong size */
    msgpack_pack_ext_body(&d.pk, "12345678", 8);
    msgpack_pack_ext(&d.pk, 16, 2);                 /* wrong type */
    msgpack_pack_ext_body(&d.pk, "0123456789abcdef", 16);
    msgpack_pack_int64(&d.pk, -1);
    msgpack_pack_str_with_body(&d.pk, "5", 1);
    msgpack_pack_map(&d.pk, 3);
    msgpack_pack_int(&d.pk, 1); msgpack_pack_int(&d.pk, 10);
    key(&d.pk, "ab"); msgpack_pack_int(&d.pk, 20);
    key(&d.pk, "a"); msgpack_pack_int(&d.pk, 30);
    msgpack_pack_double(&d.pk, 3.0);
    const msgpack_object *a = doc_obj(&d), *e = a->via.array.ptr;
    T_CHECK(render_u128(&e[0], &v) == 0 && v == 42);
    for (int i = 1; i <= 4; i++)
        T_CHECK(render_u128(&e[i], &v) == -1);
    T_CHECK(render_u128(&e[6], &v) == -1);
    T_CHECK(render_u128(NULL, &v) == -1);
    T_CHECK(render_get(&e[5], "a") && render_get(&e[5], "a")->via.u64 == 30);
    T_CHECK(render_get(&e[5], "ab") && render_get(&e[5], "ab")->via.u64 == 20);
    T_CHECK(render_get(&e[5], "b") == NULL);
    T_CHECK(render_get(a, "a") == NULL);            /* not a map */
    T_CHECK(render_get(NULL, "a") == NULL);
    doc_free(&d);
}

/* An export page {columns, rows, next}; rows given as (idx, text, cols or nil). */
static void pack_page(doc_t *d, int first_idx, int nrows, int more)
{
    static const char *const texts[3] = { "plain", "a,b", "say \"hi\"\nbye" };
    msgpack_pack_map(&d->pk, 3);
    key(&d->pk, "columns");
    msgpack_pack_array(&d->pk, 3);
    key(&d->pk, "idx"); key(&d->pk, "worker"); key(&d->pk, "cols");
    key(&d->pk, "rows");
    msgpack_pack_array(&d->pk, (size_t)nrows);
    for (int i = 0; i < nrows; i++) {
        int idx = first_idx + i;
        msgpack_pack_array(&d->pk, 3);
        msgpack_pack_int(&d->pk, idx);
        key(&d->pk, texts[idx % 3]);
        if (idx % 2) {
            msgpack_pack_nil(&d->pk);
        } else {
            msgpack_pack_array(&d->pk, 4);
            for (int k = 0; k < 4; k++) msgpack_pack_int(&d->pk, (k * 2 + 1) % 5);
        }
    }
    key(&d->pk, "next");
    if (more) msgpack_pack_uint64(&d->pk, (uint64_t)(first_idx + nrows));
    else msgpack_pack_nil(&d->pk);
}

T_TEST(test_export_csv)
{
    doc_t p1, p2;
    capture_t c;
    doc_init(&p1);
    doc_init(&p2);
    pack_page(&p1, 0, 2, 1);
    pack_page(&p2, 2, 2, 0);
    FILE *f = cap_open(&c);
    T_CHECK(render_export(f, doc_obj(&p1), 1, 1, 0) == 2);
    T_CHECK(render_export(f, doc_obj(&p2), 1, 0, 1) == 2);
    T_EQ_STR(cap_text(&c),
             "idx,worker,row0,row1,row2,row3\n"   /* a solution's columns, one CSV column each */
             "0,plain,1,3,0,2\n"
             "1,\"a,b\",\n"
             "2,\"say \"\"hi\"\"\nbye\",1,3,0,2\n"
             "3,plain,\n");
    free(c.text);
    doc_free(&p1);
    doc_free(&p2);
}

T_TEST(test_export_json)
{
    doc_t p1, p2, p3;
    capture_t c;
    doc_init(&p1);
    doc_init(&p2);
    doc_init(&p3);
    pack_page(&p1, 0, 1, 1);
    pack_page(&p2, 1, 1, 1);
    pack_page(&p3, 2, 0, 0);   /* an empty last page still closes the array */
    FILE *f = cap_open(&c);
    T_CHECK(render_export(f, doc_obj(&p1), 0, 1, 0) == 1);
    T_CHECK(render_export(f, doc_obj(&p2), 0, 0, 0) == 1);
    T_CHECK(render_export(f, doc_obj(&p3), 0, 0, 1) == 0);
    T_EQ_STR(cap_text(&c),
             "[\n{\"idx\":0,\"worker\":\"plain\",\"cols\":[1,3,0,2]},\n"
             "{\"idx\":1,\"worker\":\"a,b\",\"cols\":null}\n]\n");
    free(c.text);

    /* A job with no rows at all: an empty array. */
    f = cap_open(&c);
    T_CHECK(render_export(f, doc_obj(&p3), 0, 1, 1) == 0);
    T_EQ_STR(cap_text(&c), "[\n]\n");
    free(c.text);
    doc_free(&p1);
    doc_free(&p2);
    doc_free(&p3);
}

/* A page that is not {columns: [str], rows: [[ncolumns]]} prints nothing and says -1. */
T_TEST(test_export_malformed)
{
    doc_t d;
    capture_t c;
    doc_init(&d);
    msgpack_pack_array(&d.pk, 4);
    msgpack_pack_nil(&d.pk);                          /* not a map */
    msgpack_pack_map(&d.pk, 1);                       /* no rows */
    key(&d.pk, "columns"); msgpack_pack_array(&d.pk, 0);
    msgpack_pack_map(&d.pk, 2);                       /* a row of the wrong width */
    key(&d.pk, "columns"); msgpack_pack_array(&d.pk, 1); key(&d.pk, "x");
    key(&d.pk, "rows"); msgpack_pack_array(&d.pk, 2);
    msgpack_pack_array(&d.pk, 1); msgpack_pack_int(&d.pk, 1);
    msgpack_pack_array(&d.pk, 2); msgpack_pack_int(&d.pk, 1); msgpack_pack_int(&d.pk, 2);
    msgpack_pack_map(&d.pk, 2);                       /* a column name that is not a string */
    key(&d.pk, "columns"); msgpack_pack_array(&d.pk, 1); msgpack_pack_int(&d.pk, 3);
    key(&d.pk, "rows"); msgpack_pack_array(&d.pk, 0);
    const msgpack_object *a = doc_obj(&d);
    FILE *f = cap_open(&c);
    for (uint32_t i = 0; i < 4; i++) {
        T_CHECK(render_export(f, &a->via.array.ptr[i], 1, 1, 1) == -1);
        T_CHECK(render_export(f, &a->via.array.ptr[i], 0, 1, 1) == -1);
    }
    T_EQ_STR(cap_text(&c), "");
    free(c.text);
    doc_free(&d);
}

/* A count result with a 128-bit total: the answer comes first, in digits. */
T_TEST(test_human_result)
{
    doc_t d;
    capture_t c;
    doc_init(&d);
    msgpack_pack_map(&d.pk, 10);
    key(&d.pk, "id"); msgpack_pack_int(&d.pk, 3);
    key(&d.pk, "kind"); key(&d.pk, "count");
    key(&d.pk, "n"); msgpack_pack_int(&d.pk, 28);
    key(&d.pk, "state"); key(&d.pk, "done");
    key(&d.pk, "total"); query_pack_u128(&d.pk, (unsigned __int128)UINT64_MAX * 10);
    key(&d.pk, "unique"); msgpack_pack_int(&d.pk, 12);
    key(&d.pk, "final"); msgpack_pack_true(&d.pk);
    key(&d.pk, "shards_done"); msgpack_pack_int(&d.pk, 4);
    key(&d.pk, "shards_total"); msgpack_pack_int(&d.pk, 4);
    key(&d.pk, "residues_ok"); msgpack_pack_false(&d.pk);
    render_result(cap_open(&c), doc_obj(&d));
    const char *t = cap_text(&c);
    T_CHECK(starts_with(t, "N=28: 184,467,440,737,095,516,150 solutions, 12 unique\n"));   /* for people */
    T_CHECK(strstr(t, "DISAGREES") != NULL && strstr(t, "nq check") != NULL);
    T_CHECK(strstr(t, "4/4 done (100.0%)") != NULL);
    free(c.text);
    doc_free(&d);

    /* A solve study: the table shows the interval; the answer line says how many seeds solved it
       (many seeds can find one solution: 5 distinct from 8 solved seeds). */
    doc_init(&d);
    msgpack_pack_map(&d.pk, 4);
    key(&d.pk, "kind"); key(&d.pk, "solve");
    key(&d.pk, "n"); msgpack_pack_int(&d.pk, 1000);
    key(&d.pk, "solutions_found"); msgpack_pack_int(&d.pk, 5);
    key(&d.pk, "study"); msgpack_pack_array(&d.pk, 1);
    msgpack_pack_map(&d.pk, 5);
    key(&d.pk, "algo"); key(&d.pk, "qs4");
    key(&d.pk, "seeds"); msgpack_pack_int(&d.pk, 10);
    key(&d.pk, "solved"); msgpack_pack_int(&d.pk, 8);
    key(&d.pk, "ci_low"); msgpack_pack_double(&d.pk, 0.49016);
    key(&d.pk, "ci_high"); msgpack_pack_double(&d.pk, 0.94332);
    render_result(cap_open(&c), doc_obj(&d));
    t = cap_text(&c);
    T_CHECK(starts_with(t, "N=1,000: 5 distinct solution(s) found by 8 solved seeds"));
    T_CHECK(strstr(t, "qs4") != NULL && strstr(t, "0.490..0.943") != NULL);
    free(c.text);
    doc_free(&d);
}

/* Documents from an older or newer broker: missing keys, wrong types, no crash, "-" shown. */
T_TEST(test_human_missing_keys)
{
    doc_t d;
    capture_t c;
    doc_init(&d);
    msgpack_pack_array(&d.pk, 5);
    msgpack_pack_map(&d.pk, 0);
    msgpack_pack_nil(&d.pk);
    msgpack_pack_map(&d.pk, 6);                       /* everything of the wrong type */
    key(&d.pk, "kind"); msgpack_pack_int(&d.pk, 1);
    key(&d.pk, "n"); key(&d.pk, "eight");
    key(&d.pk, "shards_total"); msgpack_pack_int(&d.pk, 0);
    key(&d.pk, "study"); msgpack_pack_array(&d.pk, 1); msgpack_pack_int(&d.pk, 5);
    key(&d.pk, "solutions"); msgpack_pack_map(&d.pk, 0);
    key(&d.pk, "created_at"); msgpack_pack_double(&d.pk, NAN);
    msgpack_pack_array(&d.pk, 2);                     /* a list of non-maps */
    msgpack_pack_int(&d.pk, 1); msgpack_pack_nil(&d.pk);
    msgpack_pack_map(&d.pk, 2);                       /* a solve result with odd rows */
    key(&d.pk, "kind"); key(&d.pk, "solve");
    key(&d.pk, "solutions"); msgpack_pack_array(&d.pk, 1); msgpack_pack_nil(&d.pk);
    const msgpack_object *a = doc_obj(&d);
    FILE *f = cap_open(&c);
    for (uint32_t i = 0; i < a->via.array.size; i++) {
        const msgpack_object *o = &a->via.array.ptr[i];
        render_job(f, o);
        render_result(f, o);
        render_list(f, o);
        render_workers(f, o);
        render_json(f, o);
    }
    render_job(f, NULL);
    render_list(f, NULL);
    const char *t = cap_text(&c);
    T_CHECK(strstr(t, "job -: - N=-, - (priority -)") != NULL);
    T_CHECK(strstr(t, "ID  KIND") != NULL);
    free(c.text);
    doc_free(&d);
}

/* The list and worker tables, one line per entry under a header. */
T_TEST(test_human_tables)
{
    doc_t d;
    capture_t c;
    doc_init(&d);
    msgpack_pack_array(&d.pk, 1);
    msgpack_pack_map(&d.pk, 7);
    key(&d.pk, "id"); msgpack_pack_int(&d.pk, 12);
    key(&d.pk, "kind"); key(&d.pk, "count");
    key(&d.pk, "n"); msgpack_pack_int(&d.pk, 16);
    key(&d.pk, "state"); key(&d.pk, "running");
    key(&d.pk, "shards_done"); msgpack_pack_int(&d.pk, 3);
    key(&d.pk, "shards_total"); msgpack_pack_int(&d.pk, 40);
    key(&d.pk, "total"); msgpack_pack_int(&d.pk, 1000);
    render_list(cap_open(&c), doc_obj(&d));
    const char *t = cap_text(&c);
    T_CHECK(strstr(t, "\n    12  count") != NULL && strstr(t, "3/40") != NULL && strstr(t, "1,000 (so far)") != NULL);
    free(c.text);
    doc_free(&d);

    doc_init(&d);
    msgpack_pack_array(&d.pk, 1);
    msgpack_pack_map(&d.pk, 7);
    key(&d.pk, "id"); key(&d.pk, "host1:42:beef");
    key(&d.pk, "alive"); msgpack_pack_true(&d.pk);
    key(&d.pk, "leases"); msgpack_pack_int(&d.pk, 2);
    key(&d.pk, "nodes_per_s"); msgpack_pack_double(&d.pk, 1.5e9);
    key(&d.pk, "flagged"); msgpack_pack_true(&d.pk);
    key(&d.pk, "pubkey"); key(&d.pk, "rq:rM>}U?@Lns47E%QT8h]m?VHk3&k=S]4Q}^#RN");
    key(&d.pk, "kernel"); key(&d.pk, "nq-0.1.0 avx512");
    render_workers(cap_open(&c), doc_obj(&d));
    t = cap_text(&c);
    T_CHECK(strstr(t, "host1:42:beef") != NULL && strstr(t, "1,500,000,000") != NULL && strstr(t, "FLAGGED") != NULL);
    T_CHECK(strstr(t, "KEY") != NULL && strstr(t, " rq:rM>}U?@Ln... ") != NULL);   /* the key's start */
    T_CHECK(strstr(t, "nq-0.1.0 avx512") != NULL);
    T_CHECK(strstr(t, "yes") != NULL);
    free(c.text);
    doc_free(&d);
}

/* Counts grouped by three, rates with a decimal or two at most: "130.625 shards/s" read as
   130,625 to many; JSON stays plain. */
T_TEST(test_human_numbers_grouped)
{
    static const struct { double rate; const char *shown; } rates[] = {
        { 130.625, " 130.6 shards/s" }, { 0.126, " 0.13 shards/s" }, { 7.5, " 7.50 shards/s" },
        { 12345.6, " 12,346 shards/s" }, { 999.96, " 1,000.0 shards/s" },
    };
    for (size_t i = 0; i < sizeof rates / sizeof rates[0]; i++) {
        doc_t d;
        capture_t c;
        doc_init(&d);
        msgpack_pack_map(&d.pk, 6);
        key(&d.pk, "kind"); key(&d.pk, "count");
        key(&d.pk, "rate"); msgpack_pack_double(&d.pk, rates[i].rate);
        key(&d.pk, "total"); msgpack_pack_uint64(&d.pk, 4968057848ull);
        key(&d.pk, "nodes"); msgpack_pack_uint64(&d.pk, 999);
        key(&d.pk, "shards_done"); msgpack_pack_uint64(&d.pk, 1000000);
        key(&d.pk, "shards_total"); msgpack_pack_uint64(&d.pk, 17500000);
        FILE *f = cap_open(&c);
        render_job(f, doc_obj(&d));
        render_json(f, doc_obj(&d));
        const char *t = cap_text(&c);
        T_CHECK(strstr(t, rates[i].shown) != NULL);
        T_CHECK(strstr(t, "total     4,968,057,848, unique -, nodes 999") != NULL);
        T_CHECK(strstr(t, "1,000,000/17,500,000 done") != NULL);
        T_CHECK(strstr(t, "\"total\":4968057848") != NULL);   /* JSON: plain */
        free(c.text);
        doc_free(&d);
    }
}

T_RUN_ALL()
