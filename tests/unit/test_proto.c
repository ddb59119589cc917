/*
 * The wire protocol: every message round-trips, every validation rule is hit
 * by a crafted frame, mutated frames never crash the decoder, and the fuzz
 * corpus and regressions replay cleanly.
 */
#include "t.h"
#include "proto.h"
#include "log.h"
#include "rng.h"

#include <dirent.h>
#include <sys/stat.h>

/* ---------------------------------------------------------------------------
 * Sample messages: one or more per type, with values that exercise the fields
 * ------------------------------------------------------------------------- */

static const uint8_t spec8[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
static const uint8_t perm16[16] = { 1, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0 };
static const uint8_t sols[6] = { 0x12, 0x30, 0x21, 0x03, 0xff, 0x00 };
static nq_hb_item_t hb3[3] = { { 11, 0 }, { 12, 123456789 }, { UINT64_MAX, UINT64_MAX } };
static msgpack_sbuffer doc_sb;   /* the CTL_REP sample document, packed once */

static void doc_build(void)
{
    if (doc_sb.size)
        return;
    msgpack_sbuffer_init(&doc_sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &doc_sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 4);
    msgpack_pack_str_with_body(&pk, "job", 3); msgpack_pack_uint64(&pk, 7);
    msgpack_pack_str_with_body(&pk, "state", 5); msgpack_pack_str_with_body(&pk, "done", 4);
    msgpack_pack_str_with_body(&pk, "total", 5); msgpack_pack_int64(&pk, -12345678901LL);
    msgpack_pack_str_with_body(&pk, "mixed", 5);
    msgpack_pack_array(&pk, 5);
    msgpack_pack_double(&pk, 2.5); msgpack_pack_nil(&pk); msgpack_pack_true(&pk);
    msgpack_pack_bin_with_body(&pk, "\0\1", 2); msgpack_pack_ext_with_body(&pk, "xy", 2, 5);
}

static const char *const sample_names[] = {
    "hello", "welcome", "credit", "task-count", "task-solve", "heartbeat", "heartbeat-empty",
    "result-count", "result-enumerate", "solpart", "ack", "cancel", "bye", "ctl-req", "ctl-rep",
    "ctl-rep-nil",
};
#define NSAMPLES ((int)(sizeof sample_names / sizeof sample_names[0]))

static void sample_task(nq_msg_t *m, int solve)
{
    nq_task_t *t = &m->u.task;
    m->type = NQ_MSG_TASK;
    t->job = 7; t->shard = 123456; t->lease = 99; t->attempt = 2;
    t->kind = solve ? NQ_KIND_SOLVE : NQ_KIND_COUNT;
    t->n = solve ? 1000000000 : 18;
    t->spec = solve ? NULL : spec8; t->spec_len = solve ? 0 : sizeof spec8;
    t->seed = solve ? 42 : 0;
    strcpy(t->algo, solve ? "qs4" : "");
    t->max_steps = solve ? 1000000 : 0;
    t->proof = 0x0123456789abcdefULL;
}

static void sample_result(nq_msg_t *m, int enumerate)
{
    nq_result_t *r = &m->u.result;
    m->type = NQ_MSG_RESULT;
    r->job = 7; r->shard = 5; r->lease = 1ULL << 40;
    r->kind = enumerate ? NQ_KIND_ENUMERATE : NQ_KIND_COUNT;
    r->status = NQ_RES_OK;
    r->total = enumerate ? 3 : 0x123456789abULL; r->unique = enumerate ? 1 : 0x2468ace;
    r->nodes = UINT64_MAX; r->res13 = 12; r->res15 = 14; r->elapsed_us = 1500000;
    r->sol_n = 0; r->proof = 0xfedcba9876543210ULL;
    r->payload = enumerate ? sols : NULL; r->payload_len = enumerate ? sizeof sols : 0;
}

static void sample_ctl_req(nq_msg_t *m)
{
    m->type = NQ_MSG_CTL_REQ;
    strcpy(m->u.ctl_req.op, "submit");
    proto_param_add_str(&m->u.ctl_req, "kind", "count");
    proto_param_add_u64(&m->u.ctl_req, "n", 18);
    proto_param_add_u64(&m->u.ctl_req, "quorum", 2);
    proto_param_add_str(&m->u.ctl_req, "note", "");
}

/* Fills *m with sample i (0 <= i < NSAMPLES). */
static void sample(int i, nq_msg_t *m)
{
    memset(m, 0, sizeof *m);
    const char *s = sample_names[i];
    if (!strcmp(s, "hello")) {
        m->type = NQ_MSG_HELLO;
        strcpy(m->u.hello.worker_id, "host-a:1234:1700000000");
        m->u.hello.nonce = 0x0123456789abcdefULL;
        strcpy(m->u.hello.host, "host-a");
        m->u.hello.threads = 8;
        strcpy(m->u.hello.build, "nq 0.1.0 gcc");
    } else if (!strcmp(s, "welcome")) {
        m->type = NQ_MSG_WELCOME;
        m->u.welcome = (nq_welcome_t){ 2500, 4, 0xfeedface12345678ULL };
    } else if (!strcmp(s, "credit")) {
        m->type = NQ_MSG_CREDIT; m->u.credit.credit = 16;
    } else if (!strncmp(s, "task", 4)) {
        sample_task(m, !strcmp(s, "task-solve"));
    } else if (!strncmp(s, "heartbeat", 9)) {
        m->type = NQ_MSG_HEARTBEAT;
        m->u.heartbeat.count = strcmp(s, "heartbeat") ? 0 : 3;
        m->u.heartbeat.items = m->u.heartbeat.count ? hb3 : NULL;
        if (m->u.heartbeat.count) {     /* a GPU worker's two devices, the second failed */
            m->u.heartbeat.ndevices = 2;
            m->u.heartbeat.devices[0] = (nq_hb_device_t){ "NVIDIA H100 80GB HBM3", NQ_DEVICE_OK, 1400, 52000, 261500 };
            m->u.heartbeat.devices[1] = (nq_hb_device_t){ "NVIDIA H100 80GB HBM3", NQ_DEVICE_FAILED, 0, 310, 0 };
        }
    } else if (!strncmp(s, "result", 6)) {
        sample_result(m, !strcmp(s, "result-enumerate"));
    } else if (!strcmp(s, "solpart")) {
        m->type = NQ_MSG_SOLPART;
        m->u.solpart = (nq_solpart_t){ 7, 0, 3, 1000, perm16, sizeof perm16, 0x1122334455667788ULL };
    } else if (!strcmp(s, "ack")) {
        m->type = NQ_MSG_ACK; m->u.ack = (nq_ack_t){ 7, 5, 1ULL << 40 };
    } else if (!strcmp(s, "cancel")) {
        m->type = NQ_MSG_CANCEL; m->u.cancel.job = 7;
    } else if (!strcmp(s, "bye")) {
        m->type = NQ_MSG_BYE;
    } else if (!strcmp(s, "ctl-req")) {
        sample_ctl_req(m);
    } else {
        m->type = NQ_MSG_CTL_REP;
        m->u.ctl_rep.code = strcmp(s, "ctl-rep") ? 2 : 0;
        strcpy(m->u.ctl_rep.error, strcmp(s, "ctl-rep") ? "nq submit: N must be 1..1e9" : "");
        doc_build();
        if (!strcmp(s, "ctl-rep")) {
            m->u.ctl_rep.doc_bytes = doc_sb.data;
            m->u.ctl_rep.doc_len = doc_sb.size;
        }
    }
}

/* ---------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------- */

static int bytes_eq(const void *a, size_t al, const void *b, size_t bl)
{
    return al == bl && (al == 0 || memcmp(a, b, al) == 0);
}

static int params_eq(const nq_ctl_req_t *a, const nq_ctl_req_t *b)
{
    if (strcmp(a->op, b->op) || a->job != b->job || a->nparams != b->nparams)
        return 0;
    for (uint32_t i = 0; i < a->nparams; i++) {
        const nq_param_t *p = &a->params[i], *q = &b->params[i];
        if (strcmp(p->key, q->key) || p->is_str != q->is_str ||
            (p->is_str ? strcmp(p->str, q->str) != 0 : p->u != q->u))
            return 0;
    }
    return 1;
}

/* Field-by-field equality of two messages of the same type. */
static int msg_eq(const nq_msg_t *a, const nq_msg_t *b)
{
    if (a->type != b->type)
        return 0;
    switch (a->type) {
    case NQ_MSG_HELLO: {
        const nq_hello_t *x = &a->u.hello, *y = &b->u.hello;
        return !strcmp(x->worker_id, y->worker_id) && x->nonce == y->nonce &&
               !strcmp(x->host, y->host) && x->threads == y->threads && !strcmp(x->build, y->build);
    }
    case NQ_MSG_WELCOME:
        return !memcmp(&a->u.welcome, &b->u.welcome, sizeof a->u.welcome);  /* no padding */
    case NQ_MSG_CREDIT:
        return a->u.credit.credit == b->u.credit.credit;
    case NQ_MSG_TASK: {
        const nq_task_t *x = &a->u.task, *y = &b->u.task;
        return x->job == y->job && x->shard == y->shard && x->lease == y->lease &&
               x->attempt == y->attempt && x->kind == y->kind && x->n == y->n &&
               bytes_eq(x->spec, x->spec_len, y->spec, y->spec_len) && x->seed == y->seed &&
               !strcmp(x->algo, y->algo) && x->max_steps == y->max_steps;
    }
    case NQ_MSG_HEARTBEAT:
        if (a->u.heartbeat.ndevices != b->u.heartbeat.ndevices)
            return 0;
        for (uint32_t i = 0; i < a->u.heartbeat.ndevices; i++) {
            const nq_hb_device_t *x = &a->u.heartbeat.devices[i], *y = &b->u.heartbeat.devices[i];
            if (strcmp(x->name, y->name) || x->state != y->state || x->queued != y->queued ||
                x->shards != y->shards || x->rate_milli != y->rate_milli)
                return 0;
        }
        return bytes_eq(a->u.heartbeat.items, a->u.heartbeat.count * sizeof(nq_hb_item_t),
                        b->u.heartbeat.items, b->u.heartbeat.count * sizeof(nq_hb_item_t));
    case NQ_MSG_RESULT: {
        const nq_result_t *x = &a->u.result, *y = &b->u.result;
        return x->job == y->job && x->shard == y->shard && x->lease == y->lease &&
               x->kind == y->kind && x->status == y->status && x->total == y->total &&
               x->unique == y->unique && x->nodes == y->nodes && x->res13 == y->res13 &&
               x->res15 == y->res15 && x->elapsed_us == y->elapsed_us && x->sol_n == y->sol_n &&
               bytes_eq(x->payload, x->payload_len, y->payload, y->payload_len);
    }
    case NQ_MSG_SOLPART: {
        const nq_solpart_t *x = &a->u.solpart, *y = &b->u.solpart;
        return x->job == y->job && x->shard == y->shard && x->lease == y->lease &&
               x->offset == y->offset && bytes_eq(x->data, x->data_len, y->data, y->data_len);
    }
    case NQ_MSG_ACK:
        return !memcmp(&a->u.ack, &b->u.ack, sizeof a->u.ack);
    case NQ_MSG_CANCEL:
        return a->u.cancel.job == b->u.cancel.job;
    case NQ_MSG_BYE:
        return 1;
    case NQ_MSG_CTL_REQ:
        return params_eq(&a->u.ctl_req, &b->u.ctl_req);
    case NQ_MSG_CTL_REP:
        return a->u.ctl_rep.code == b->u.ctl_rep.code && !strcmp(a->u.ctl_rep.error, b->u.ctl_rep.error) &&
               bytes_eq(a->u.ctl_rep.doc_bytes, a->u.ctl_rep.doc_len, b->u.ctl_rep.doc_bytes,
                        b->u.ctl_rep.doc_len);
    default:
        return 0;
    }
}

static void encode_sample(int i, msgpack_sbuffer *sb)
{
    nq_msg_t m;
    sample(i, &m);
    msgpack_sbuffer_init(sb);
    T_CHECK(proto_encode(&m, sb) == 0);
}

/* Decoding must fail, leave m.type 0 (nothing to free), and say something containing `why`. */
#define T_REJECT(buf, len, why) t_reject(__LINE__, buf, len, why)
static void t_reject(int line, const void *buf, size_t len, const char *why)
{
    nq_msg_t m;
    char err[256] = "";
    m.type = NQ_MSG_HELLO;
    int rc = proto_decode(buf, len, &m, err, sizeof err);
    if (rc >= 0 || !strstr(err, why) || m.type != 0) {
        fprintf(stderr, "  line %d: expected rejection containing '%s', got rc=%d err='%s'\n",
                line, why, rc, err);
        if (rc == 0)
            proto_msg_free(&m);
    }
    T_CHECK(rc < 0 && strstr(err, why) != NULL && m.type == 0);
}

/* Decodes a frame that must be accepted; caller frees *m. */
static int t_accept(const void *buf, size_t len, nq_msg_t *m)
{
    char err[256] = "";
    int rc = proto_decode(buf, len, m, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "  unexpected rejection: %s\n", err);
    return rc;
}

/* ---------------------------------------------------------------------------
 * Frame surgery: re-pack a valid frame with one element replaced, removed or added
 * ------------------------------------------------------------------------- */

/* Element idx of the top-level array (0 = version, 1 = type, 2.. = fields)
   becomes *sub; sub == NULL removes it; idx == size appends *sub. */
static void frame_edit(const msgpack_sbuffer *in, uint32_t idx, const msgpack_object *sub,
                       msgpack_sbuffer *out)
{
    msgpack_zone z;
    msgpack_zone_init(&z, 2048);
    msgpack_object o;
    size_t off = 0;
    T_CHECK(msgpack_unpack(in->data, in->size, &off, &z, &o) == MSGPACK_UNPACK_SUCCESS);
    msgpack_sbuffer_init(out);
    msgpack_packer pk;
    msgpack_packer_init(&pk, out, msgpack_sbuffer_write);
    uint32_t n = o.via.array.size;
    msgpack_pack_array(&pk, n + (idx == n) - (sub == NULL));
    for (uint32_t i = 0; i < n; i++) {
        if (i != idx)
            msgpack_pack_object(&pk, o.via.array.ptr[i]);
        else if (sub)
            msgpack_pack_object(&pk, *sub);
    }
    if (idx == n && sub)
        msgpack_pack_object(&pk, *sub);
    msgpack_zone_destroy(&z);
}

static msgpack_object obj_uint(uint64_t v)
{
    msgpack_object o = { .type = MSGPACK_OBJECT_POSITIVE_INTEGER };
    o.via.u64 = v;
    return o;
}

static msgpack_object obj_str(const char *s, size_t len)
{
    msgpack_object o = { .type = MSGPACK_OBJECT_STR };
    o.via.str.ptr = s; o.via.str.size = (uint32_t)len;
    return o;
}

/* Sample i with field f (0-based, after version and type) replaced by v: must be rejected. */
static void reject_field(int i, uint32_t f, msgpack_object v, const char *why)
{
    msgpack_sbuffer sb, bad;
    encode_sample(i, &sb);
    frame_edit(&sb, f + 2, &v, &bad);
    T_REJECT(bad.data, bad.size, why);
    msgpack_sbuffer_destroy(&sb);
    msgpack_sbuffer_destroy(&bad);
}

/* ... and with v it must be accepted. */
static void accept_field(int i, uint32_t f, msgpack_object v)
{
    msgpack_sbuffer sb, ok;
    nq_msg_t m;
    encode_sample(i, &sb);
    frame_edit(&sb, f + 2, &v, &ok);
    T_CHECK(t_accept(ok.data, ok.size, &m) == 0);
    proto_msg_free(&m);
    msgpack_sbuffer_destroy(&sb);
    msgpack_sbuffer_destroy(&ok);
}

static int sample_index(const char *name)
{
    for (int i = 0; i < NSAMPLES; i++)
        if (!strcmp(sample_names[i], name))
            return i;
    return -1;
}

/* ---------------------------------------------------------------------------
 * Round trips
 * ------------------------------------------------------------------------- */

static void roundtrip(const nq_msg_t *m)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    T_CHECK(proto_encode(m, &sb) == 0);
    nq_msg_t d;
    if (t_accept(sb.data, sb.size, &d) == 0) {
        T_CHECK(msg_eq(m, &d));
        if (!msg_eq(m, &d))
            fprintf(stderr, "  %s differs after the round trip\n", proto_type_name(m->type));
        proto_msg_free(&d);
    } else {
        T_CHECK(0);
    }
    msgpack_sbuffer_destroy(&sb);
}

T_TEST(test_roundtrip_samples)
{
    int seen[NQ_MSG_TYPE_MAX] = { 0 };
    for (int i = 0; i < NSAMPLES; i++) {
        nq_msg_t m;
        sample(i, &m);
        seen[m.type] = 1;
        roundtrip(&m);
    }
    for (int t = 1; t < NQ_MSG_TYPE_MAX; t++)   /* every type is covered */
        T_CHECK(seen[t]);
}

T_TEST(test_roundtrip_limits)
{
    nq_msg_t m;
    sample(sample_index("hello"), &m);
    memset(m.u.hello.host, 'h', NQ_STR_MAX - 1);
    m.u.hello.host[NQ_STR_MAX - 1] = '\0';
    m.u.hello.threads = 4096; m.u.hello.nonce = UINT64_MAX;
    roundtrip(&m);
    m.u.hello.threads = 1; m.u.hello.nonce = 0;
    roundtrip(&m);
    sample(sample_index("welcome"), &m);
    m.u.welcome = (nq_welcome_t){ 100, 1, 0 }; roundtrip(&m);
    m.u.welcome = (nq_welcome_t){ 60000, 100, UINT64_MAX }; roundtrip(&m);
    sample(sample_index("credit"), &m);
    m.u.credit.credit = 0; roundtrip(&m);
    m.u.credit.credit = 65536; roundtrip(&m);
    static uint8_t spec[NQ_MAX_SPEC];
    sample(sample_index("task-count"), &m);
    m.u.task.spec = spec; m.u.task.spec_len = sizeof spec; m.u.task.n = 1;
    m.u.task.attempt = UINT32_MAX; m.u.task.kind = NQ_KIND_ENUMERATE;
    roundtrip(&m);
    static nq_hb_item_t items[NQ_MAX_HEARTBEAT_ITEMS];
    for (int i = 0; i < NQ_MAX_HEARTBEAT_ITEMS; i++)
        items[i] = (nq_hb_item_t){ (uint64_t)i << 33, (uint64_t)i * i };
    sample(sample_index("heartbeat"), &m);   /* with its devices */
    m.u.heartbeat.count = NQ_MAX_HEARTBEAT_ITEMS; m.u.heartbeat.items = items;
    roundtrip(&m);
    sample(sample_index("result-count"), &m);
    m.u.result.status = NQ_RES_ERROR; m.u.result.kind = NQ_KIND_SOLVE; m.u.result.sol_n = 1000000000;
    m.u.result.res13 = 0; m.u.result.res15 = 0;
    roundtrip(&m);
}

T_TEST(test_roundtrip_solpart_ctl)
{
    nq_msg_t m;
    sample(sample_index("solpart"), &m);
    m.u.solpart.offset = 1000000000 - 4;   /* the last 4 rows of the largest board */
    roundtrip(&m);
    m.u.solpart.data_len = 0; m.u.solpart.offset = 0;
    roundtrip(&m);
    memset(&m, 0, sizeof m);
    m.type = NQ_MSG_CTL_REQ;
    strcpy(m.u.ctl_req.op, "list"); m.u.ctl_req.job = UINT64_MAX;
    char key[32];
    for (int i = 0; i < NQ_MAX_CTL_PARAMS; i++) {
        snprintf(key, sizeof key, "k%030d", i);   /* 31 bytes: the longest key */
        T_CHECK(i % 2 ? proto_param_add_u64(&m.u.ctl_req, key, (uint64_t)i) == 0
                      : proto_param_add_str(&m.u.ctl_req, key, "v") == 0);
    }
    roundtrip(&m);
    /* a nil document round-trips as "no document" */
    sample(sample_index("ctl-rep-nil"), &m);
    m.u.ctl_rep.doc_bytes = "\xc0"; m.u.ctl_rep.doc_len = 1;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    T_CHECK(proto_encode(&m, &sb) == 0);
    nq_msg_t d;
    T_CHECK(t_accept(sb.data, sb.size, &d) == 0);
    T_CHECK(d.u.ctl_rep.doc_len == 0 && d.u.ctl_rep.doc.type == MSGPACK_OBJECT_NIL);
    proto_msg_free(&d);
    msgpack_sbuffer_destroy(&sb);
}

/* The decoded document is a real msgpack tree that outlives the frame. */
T_TEST(test_ctl_rep_doc)
{
    msgpack_sbuffer sb;
    encode_sample(sample_index("ctl-rep"), &sb);
    nq_msg_t d;
    T_CHECK(t_accept(sb.data, sb.size, &d) == 0);
    memset(sb.data, 0, sb.size);   /* the frame is gone */
    msgpack_sbuffer_destroy(&sb);
    msgpack_zone z;
    msgpack_zone_init(&z, 1024);
    msgpack_object want;
    size_t off = 0;
    T_CHECK(msgpack_unpack(doc_sb.data, doc_sb.size, &off, &z, &want) == MSGPACK_UNPACK_SUCCESS);
    T_CHECK(d.u.ctl_rep.doc.type == MSGPACK_OBJECT_MAP);
    T_CHECK(msgpack_object_equal(d.u.ctl_rep.doc, want));
    T_EQ_U64(d.u.ctl_rep.doc.via.map.size, 4);
    T_CHECK(d.u.ctl_rep.zone != NULL);
    proto_msg_free(&d);
    T_CHECK(d.u.ctl_rep.zone == NULL);
    proto_msg_free(&d);   /* twice is harmless */
    msgpack_zone_destroy(&z);
}

/* ---------------------------------------------------------------------------
 * Encoder refuses out-of-range fields and leaves the buffer untouched
 * ------------------------------------------------------------------------- */

static void refuse(const nq_msg_t *m, int line)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_sbuffer_write(&sb, "ab", 2);
    int rc = proto_encode(m, &sb);
    if (rc != -1)
        fprintf(stderr, "  line %d: encode accepted a bad %s\n", line, proto_type_name(m->type));
    T_CHECK(rc == -1 && sb.size == 2);
    msgpack_sbuffer_destroy(&sb);
}
#define REFUSE(name, stmt) do { nq_msg_t m; sample(sample_index(name), &m); stmt; refuse(&m, __LINE__); } while (0)

T_TEST(test_encode_refuses)
{
    nq_log_set_level(NQ_LOG_OFF);   /* each refusal logs an error line */
    REFUSE("hello", m.type = 0);
    REFUSE("hello", m.type = NQ_MSG_TYPE_MAX);
    REFUSE("hello", m.u.hello.threads = 0);
    REFUSE("hello", m.u.hello.threads = 4097);
    REFUSE("hello", m.u.hello.worker_id[0] = '\0');
    REFUSE("hello", memset(m.u.hello.host, 'x', NQ_STR_MAX));   /* no NUL */
    REFUSE("hello", strcpy(m.u.hello.build, "two\nlines"));
    REFUSE("welcome", m.u.welcome.heartbeat_ms = 99);
    REFUSE("welcome", m.u.welcome.heartbeat_ms = 60001);
    REFUSE("welcome", m.u.welcome.liveness = 0);
    REFUSE("welcome", m.u.welcome.liveness = 101);
    REFUSE("credit", m.u.credit.credit = 65537);
    REFUSE("task-count", m.u.task.kind = 0);
    REFUSE("task-count", m.u.task.kind = 4);
    REFUSE("task-count", m.u.task.n = 0);
    REFUSE("task-count", m.u.task.n = 1000000001);
    REFUSE("task-count", m.u.task.spec_len = NQ_MAX_SPEC + 1);
    REFUSE("task-count", m.u.task.spec = NULL);
    REFUSE("heartbeat", m.u.heartbeat.count = NQ_MAX_HEARTBEAT_ITEMS + 1);
    REFUSE("heartbeat", m.u.heartbeat.items = NULL);
    REFUSE("heartbeat", m.u.heartbeat.ndevices = NQ_MAX_HB_DEVICES + 1);
    REFUSE("heartbeat", m.u.heartbeat.devices[1].state = 2);
    REFUSE("heartbeat", strcpy(m.u.heartbeat.devices[0].name, "bad\x1b[2Jname"));
    REFUSE("result-count", m.u.result.status = 3);
    REFUSE("result-count", m.u.result.res13 = 13);
    REFUSE("result-count", m.u.result.res15 = 15);
    REFUSE("result-count", m.u.result.sol_n = 1000000001);
    REFUSE("result-count", m.u.result.payload_len = NQ_MAX_PAYLOAD + 1);
    REFUSE("solpart", m.u.solpart.data_len = 6);
    REFUSE("solpart", m.u.solpart.offset = 1000000000);
    REFUSE("solpart", m.u.solpart.offset = 1000000000 - 3);   /* 4 rows from there run past 1e9 */
    REFUSE("ctl-req", m.u.ctl_req.nparams = NQ_MAX_CTL_PARAMS + 1);
    REFUSE("ctl-req", strcpy(m.u.ctl_req.params[1].key, "kind"));   /* duplicate key */
    REFUSE("ctl-req", m.u.ctl_req.op[0] = '\0');
    REFUSE("ctl-rep", m.u.ctl_rep.code = -1);
    REFUSE("ctl-rep", m.u.ctl_rep.code = 4);
    REFUSE("ctl-rep", m.u.ctl_rep.doc_len -= 1);               /* truncated document */
    REFUSE("ctl-rep", m.u.ctl_rep.doc_bytes = "\x01\x02"; m.u.ctl_rep.doc_len = 2);  /* two values */
    REFUSE("ctl-rep", m.u.ctl_rep.doc_bytes = "\xc1"; m.u.ctl_rep.doc_len = 1);
    T_CHECK(proto_encode(NULL, NULL) == -1);
    nq_log_set_level(NQ_LOG_INFO);
}

/* ---------------------------------------------------------------------------
 * Decoder rules, one test each
 * ------------------------------------------------------------------------- */

T_TEST(test_reject_empty_and_oversize)
{
    T_REJECT("", 0, "empty frame");
    T_REJECT(NULL, 5, "empty frame");
    char *big = calloc(1, (size_t)NQ_MAX_FRAME + 1);   /* zero pages: never touched */
    T_CHECK(big != NULL);
    T_REJECT(big, (size_t)NQ_MAX_FRAME + 1, "exceeds NQ_MAX_FRAME");
    free(big);
    nq_msg_t m;
    T_CHECK(proto_decode("\x92\x05\x0a", 3, NULL, NULL, 0) == -1);   /* no crash without err/m */
    T_CHECK(proto_decode("\x91\x04", 2, &m, NULL, 0) == -1);
}

T_TEST(test_reject_garbage)
{
    T_REJECT("hello world", 11, "expected array");
    T_REJECT("\xc1", 1, "invalid msgpack byte 0xc1");
    T_REJECT("\x80", 1, "is map, expected array");
    T_REJECT("\x90", 1, "array has 0 elements");
    T_REJECT("\x91\x04", 2, "array has 1 elements");
    T_REJECT("\x92\xa1" "1\x01", 4, "field 'version' is str, expected uint");
    T_REJECT("\x92\x05\xcb\x00\x00\x00\x00\x00\x00\xf0\x3f", 11, "field 'type' is float, expected uint");
    nq_rng_t r;
    rng_init(&r, 1, 0);
    uint8_t buf[64];
    for (int i = 0; i < 10000; i++) {   /* random bytes: all rejected, none crashes */
        size_t len = 1 + rng_below(&r, sizeof buf);
        for (size_t j = 0; j < len; j++)
            buf[j] = (uint8_t)rng_next(&r);
        nq_msg_t m;
        char err[128];
        if (proto_decode(buf, len, &m, err, sizeof err) == 0)
            proto_msg_free(&m);   /* possible in principle (e.g. "\x92\x05\x0a"), just free */
    }
}

T_TEST(test_reject_truncated_everywhere)
{
    for (int i = 0; i < NSAMPLES; i++) {
        msgpack_sbuffer sb;
        encode_sample(i, &sb);
        for (size_t len = 1; len < sb.size; len++) {
            char err[256];
            nq_msg_t m;
            int rc = proto_decode(sb.data, len, &m, err, sizeof err);
            if (rc != -1)
                fprintf(stderr, "  %s accepted when cut to %zu of %zu bytes\n", sample_names[i],
                        len, sb.size);
            T_CHECK(rc == -1);
            T_CHECK(err[0] != '\0');
        }
        msgpack_sbuffer_destroy(&sb);
    }
    /* the reasons name the failure */
    T_REJECT("\x97\x05\x01\xaa" "abcdef", 10, "field 'worker_id' declared length 10 exceeds frame");
    T_REJECT("\x93\x05\x03\xcd\x01", 5, "field 'credit' truncated");
    T_REJECT("\x92\x05\xcd", 3, "field 'type' truncated");
    T_REJECT("\x93\x04", 2, "message declared array of 3 elements exceeds frame");
}

T_TEST(test_reject_huge_declared_lengths)
{
    /* HELLO whose worker_id claims 4 GiB */
    T_REJECT("\x97\x05\x01\xdb\xff\xff\xff\xff" "abc", 11, "declared length 4294967295 exceeds frame");
    /* TASK whose spec claims 4 GiB, after valid leading fields */
    T_REJECT("\x9d\x05\x04\x07\x01\x63\x02\x01\x12\xc6\xff\xff\xff\xff\x00", 15,
             "field 'spec' declared length 4294967295 exceeds frame");
    /* top-level array of 2^32-1 elements in 5 bytes */
    T_REJECT("\xdd\xff\xff\xff\xff", 5, "declared array of 4294967295 elements exceeds frame");
    T_REJECT("\xdc\xff\xff\x01\x05", 5, "exceeds frame");
    /* HEARTBEAT with an items array of 2^32-1, and of 6 when the 15 bytes left hold 5 */
    T_REJECT("\x95\x05\x05\xdd\xff\xff\xff\xff\x92\x00\x00", 11, "exceeds frame");
    T_REJECT("\x95\x05\x05\xdc\x00\x06\x92\x00\x00\x92\x00\x00\x92\x00\x00\x92\x00\x00\x92\x00\x00",
             21, "declares 6 items, more than the frame can hold");
    /* CTL_REQ whose params map claims 2^32-1 entries */
    T_REJECT("\x95\x05\x0b\xa1x\x00\xdf\xff\xff\xff\xff\xa1k\x01", 14, "exceeds frame");
    /* CTL_REP documents: a bin32, an ext32, a map32 claiming gigabytes */
    T_REJECT("\x95\x05\x0c\x00\xa0\xc6\x7f\xff\xff\xff\x00", 11, "field 'doc' declared length");
    T_REJECT("\x95\x05\x0c\x00\xa0\xc9\x7f\xff\xff\xff\x01\x00", 12, "field 'doc' declared length");
    T_REJECT("\x95\x05\x0c\x00\xa0\x91\xdf\x7f\xff\xff\xff\x00\x00", 13, "declared map of");
    /* a SOLPART whose data bin is over the payload cap (declared, not present) */
    T_REJECT("\x98\x05\x07\x01\x01\x01\x00\xc6\x03\x00\x00\x04", 12, "exceeds frame");
}

/* Every field of every sample, replaced by a value of each wrong msgpack type. */
T_TEST(test_reject_wrong_types)
{
    msgpack_object subs[8];
    memset(subs, 0, sizeof subs);
    subs[0].type = MSGPACK_OBJECT_NIL;
    subs[1].type = MSGPACK_OBJECT_BOOLEAN; subs[1].via.boolean = true;
    subs[2].type = MSGPACK_OBJECT_NEGATIVE_INTEGER; subs[2].via.i64 = -1;
    subs[3].type = MSGPACK_OBJECT_FLOAT64; subs[3].via.f64 = 1.0;
    subs[4] = obj_str("s", 1);
    subs[5].type = MSGPACK_OBJECT_BIN; subs[5].via.bin.ptr = "b"; subs[5].via.bin.size = 1;
    subs[6].type = MSGPACK_OBJECT_ARRAY;
    subs[7].type = MSGPACK_OBJECT_MAP;
    int checked = 0;
    for (int i = 0; i < NSAMPLES; i++) {
        msgpack_sbuffer sb;
        encode_sample(i, &sb);
        msgpack_zone z;
        msgpack_zone_init(&z, 2048);
        msgpack_object o;
        size_t off = 0;
        T_CHECK(msgpack_unpack(sb.data, sb.size, &off, &z, &o) == MSGPACK_UNPACK_SUCCESS);
        int is_doc = o.via.array.ptr[1].via.u64 == NQ_MSG_CTL_REP;
        for (uint32_t f = 0; f < o.via.array.size; f++) {   /* version and type included */
            msgpack_object_type want = o.via.array.ptr[f].type;
            if (is_doc && f == o.via.array.size - 1)
                continue;   /* the document may be anything */
            for (int s = 0; s < 8; s++) {
                if (subs[s].type == want)
                    continue;
                msgpack_sbuffer bad;
                frame_edit(&sb, f, &subs[s], &bad);
                T_REJECT(bad.data, bad.size, want == MSGPACK_OBJECT_POSITIVE_INTEGER && s == 2
                                              ? "out of range" : "expected");
                msgpack_sbuffer_destroy(&bad);
                checked++;
            }
        }
        msgpack_zone_destroy(&z);
        msgpack_sbuffer_destroy(&sb);
    }
    T_CHECK(checked > 500);
}

T_TEST(test_reject_out_of_range)
{
    struct { const char *s; uint32_t f; uint64_t bad, good; const char *why; } c[] = {
        { "hello", 3, 0, 1, "field 'threads' out of range 1..4096" },
        { "hello", 3, 4097, 4096, "field 'threads' out of range 1..4096" },
        { "welcome", 0, 99, 100, "out of range 100..60000" },
        { "welcome", 0, 60001, 60000, "out of range 100..60000" },
        { "welcome", 1, 0, 1, "field 'liveness' out of range 1..100" },
        { "welcome", 1, 101, 100, "field 'liveness' out of range 1..100" },
        { "credit", 0, 65537, 65536, "field 'credit' out of range 0..65536" },
        { "task-count", 3, 1ULL << 32, UINT32_MAX, "field 'attempt' out of range" },
        { "task-count", 4, 0, 1, "field 'kind' out of range 1..3" },
        { "task-count", 4, 4, 3, "field 'kind' out of range 1..3" },
        { "task-count", 5, 0, 1, "field 'n' out of range 1..1000000000" },
        { "task-count", 5, 1000000001, 1000000000, "field 'n' out of range" },
        { "result-count", 3, 0, 3, "field 'kind' out of range" },
        { "result-count", 4, 3, 2, "field 'status' out of range 0..2" },
        { "result-count", 8, 13, 0, "field 'res13' out of range 0..12" },
        { "result-count", 9, 15, 0, "field 'res15' out of range 0..14" },
        { "result-count", 11, 1000000001, 1000000000, "field 'sol_n' out of range" },
        { "solpart", 3, 1000000000, 999999996, "field 'offset' out of range" },
        { "ctl-rep", 0, 4, 3, "field 'code' out of range 0..3" },
        { "ctl-rep", 0, 1ULL << 31, 1, "field 'code' out of range 0..3" },
    };
    for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
        int i = sample_index(c[k].s);
        reject_field(i, c[k].f, obj_uint(c[k].bad), c[k].why);
        accept_field(i, c[k].f, obj_uint(c[k].good));
    }
    /* version and type are range-checked too */
    msgpack_sbuffer sb, bad;
    encode_sample(sample_index("ack"), &sb);
    msgpack_object v = obj_uint(NQ_PROTO_VERSION + 1);
    frame_edit(&sb, 0, &v, &bad);
    T_REJECT(bad.data, bad.size, "wrong version");
    msgpack_sbuffer_destroy(&bad);
    msgpack_sbuffer_destroy(&sb);
}

/* One version: any other is refused, and said to be (the broker answers such a sender). */
T_TEST(test_reject_wrong_version)
{
    T_REJECT("\x92\x00\x0a", 3, "field 'version' is 0, this build speaks 5 (wrong version");
    T_REJECT("\x92\x02\x0a", 3, "wrong version");
    T_REJECT("\x93\x03\x09\x07", 4, "wrong version");            /* [3, CANCEL, job 7]: a release before */
    T_REJECT("\x92\x04\x0a", 3, "wrong version");            /* the release before */
    T_REJECT("\x92\x06\x0a", 3, "wrong version");
    T_REJECT("\x92\xcf\xff\xff\xff\xff\xff\xff\xff\xff\x0a", 11, "wrong version");
    T_REJECT("\x92\xff\x0a", 3, "field 'version' out of range");   /* -1 */
    nq_msg_t m;
    char err[200];
    T_EQ_U64(proto_decode("\x92\x03\x0a", 3, &m, err, sizeof err), (uint64_t)NQ_PROTO_WRONG_VERSION);
    T_EQ_U64(proto_decode("\x92\x06\x0a", 3, &m, err, sizeof err), (uint64_t)NQ_PROTO_WRONG_VERSION);
    T_EQ_U64(proto_decode("\x92\xa1" "1\x01", 4, &m, err, sizeof err), (uint64_t)-1);   /* no version at all */
    T_CHECK(t_accept("\x94\x05\x09\x07\x05", 5, &m) == 0);      /* [5, CANCEL, job 7, lease 5] */
    T_CHECK(m.u.cancel.job == 7 && m.u.cancel.lease == 5);
    proto_msg_free(&m);
    nq_msg_t c = { .type = NQ_MSG_CANCEL };                      /* every frame goes out in it */
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    T_CHECK(proto_encode(&c, &sb) == 0 && sb.size == 5 && (uint8_t)sb.data[1] == NQ_PROTO_VERSION);
    msgpack_sbuffer_destroy(&sb);
}

T_TEST(test_reject_unknown_type)
{
    T_REJECT("\x92\x05\x00", 3, "field 'type' is 0 (unknown type)");
    T_REJECT("\x92\x05\x0d", 3, "field 'type' is 13 (unknown type)");
    T_REJECT("\x92\x05\xcc\xc8", 4, "is 200 (unknown type)");
    T_CHECK(!strcmp(proto_type_name(0), "?"));
    T_CHECK(!strcmp(proto_type_name(13), "?"));
    T_CHECK(!strcmp(proto_type_name(-1), "?"));
    T_CHECK(!strcmp(proto_type_name(NQ_MSG_HELLO), "HELLO"));
    T_CHECK(!strcmp(proto_type_name(NQ_MSG_CTL_REP), "CTL_REP"));
}

T_TEST(test_reject_field_count)
{
    T_REJECT("\x93\x05\x0a\x00", 4, "BYE: has 1 fields, expected 0");
    T_REJECT("\x93\x05\x09\x01", 4, "CANCEL: has 1 fields, expected 2");
    T_REJECT("\x95\x05\x09\x01\x02\x03", 6, "CANCEL: has 3 fields, expected 2");
    msgpack_sbuffer sb, bad;
    encode_sample(sample_index("hello"), &sb);
    frame_edit(&sb, 4, NULL, &bad);   /* drop 'host' */
    T_REJECT(bad.data, bad.size, "HELLO: has 4 fields, expected 5");
    msgpack_sbuffer_destroy(&bad);
    msgpack_object extra = obj_uint(1);
    frame_edit(&sb, 7, &extra, &bad);
    T_REJECT(bad.data, bad.size, "HELLO: has 6 fields, expected 5");
    msgpack_sbuffer_destroy(&bad);
    msgpack_sbuffer_destroy(&sb);
}

T_TEST(test_reject_trailing_bytes)
{
    for (int i = 0; i < NSAMPLES; i++) {
        msgpack_sbuffer sb;
        encode_sample(i, &sb);
        msgpack_sbuffer_write(&sb, "\x00", 1);
        T_REJECT(sb.data, sb.size, "trailing bytes (1 after the message)");
        msgpack_sbuffer_write(&sb, "\x92\x05\x0a", 3);   /* a second whole message */
        T_REJECT(sb.data, sb.size, "trailing bytes (4 after the message)");
        msgpack_sbuffer_destroy(&sb);
    }
}

T_TEST(test_reject_bad_strings)
{
    int hello = sample_index("hello"), req = sample_index("ctl-req");
    char s[300];
    memset(s, 'a', sizeof s);
    reject_field(hello, 2, obj_str(s, 256), "field 'host' is 256 bytes, longer than 255");
    accept_field(hello, 2, obj_str(s, 255));
    reject_field(hello, 0, obj_str("a\0b", 3), "field 'worker_id' contains a NUL or control byte");
    reject_field(hello, 4, obj_str("a\nb", 3), "field 'build' contains a NUL or control byte");
    reject_field(hello, 4, obj_str("\x7f", 1), "contains a NUL or control byte");
    reject_field(hello, 0, obj_str("", 0), "field 'worker_id' is empty");
    accept_field(hello, 2, obj_str("", 0));
    accept_field(hello, 2, obj_str("h\xc3\xa9llo", 6));   /* UTF-8 passes */
    /* bidirectional embeddings, overrides and isolates never reach a log line, a terminal or a page */
    static const char *bidi[] = { "\xe2\x80\xaa", "\xe2\x80\xab", "\xe2\x80\xac", "\xe2\x80\xad", "\xe2\x80\xae",
                                  "\xe2\x81\xa6", "\xe2\x81\xa7", "\xe2\x81\xa8", "\xe2\x81\xa9" };
    for (size_t i = 0; i < sizeof bidi / sizeof bidi[0]; i++) {
        char h[16];
        snprintf(h, sizeof h, "ab%scd", bidi[i]);
        reject_field(hello, 2, obj_str(h, 7), "field 'host' contains a NUL or control byte, a bidirectional");
        reject_field(hello, 4, obj_str(h, 7), "field 'build' contains");
    }
    accept_field(hello, 2, obj_str("ab\xe2\x80\xaf" "cd", 7));   /* U+202F, U+2065, U+2070: their neighbours */
    accept_field(hello, 2, obj_str("ab\xe2\x81\xa5" "cd", 7));
    accept_field(hello, 2, obj_str("ab\xe2\x81\xb0" "cd", 7));
    reject_field(req, 0, obj_str(s, 32), "field 'op' is 32 bytes, longer than 31");
    accept_field(req, 0, obj_str(s, 31));
    reject_field(req, 0, obj_str("", 0), "field 'op' is empty");
    reject_field(sample_index("task-solve"), 8, obj_str("q\ts4", 4), "field 'algo' contains");
    reject_field(sample_index("ctl-rep"), 1, obj_str(s, 300), "field 'error' is 300 bytes");
}

static msgpack_object obj_bin(const void *p, size_t len)
{
    msgpack_object o = { .type = MSGPACK_OBJECT_BIN };
    o.via.bin.ptr = p; o.via.bin.size = (uint32_t)len;
    return o;
}

/* A RESULT whose payload is len zero bytes, packed by hand (msgpack_sbuffer would copy twice). */
static uint8_t *big_result(size_t len, size_t *flen)
{
    msgpack_sbuffer sb;
    encode_sample(sample_index("result-count"), &sb);   /* ends with bin8 of length 0, nodes_kind 0 */
    T_CHECK(sb.size > 3 && (uint8_t)sb.data[sb.size - 3] == 0xc4 && sb.data[sb.size - 1] == 0);
    size_t head = sb.size - 3;
    *flen = head + 5 + len + 1;
    uint8_t *f = calloc(1, *flen);                        /* ... and the payload, nodes_kind zeros */
    memcpy(f, sb.data, head);
    f[head] = 0xc6;
    for (int i = 0; i < 4; i++)
        f[head + 1 + i] = (uint8_t)(len >> (24 - 8 * i));
    msgpack_sbuffer_destroy(&sb);
    return f;
}

T_TEST(test_reject_bad_bins)
{
    static uint8_t z[NQ_MAX_SPEC + 8];
    int task = sample_index("task-count"), sp = sample_index("solpart");
    reject_field(task, 6, obj_bin(z, NQ_MAX_SPEC + 1), "field 'spec' is 257 bytes, longer than 256");
    accept_field(task, 6, obj_bin(z, NQ_MAX_SPEC));
    reject_field(task, 6, obj_str("ab", 2), "field 'spec' is str, expected bin");
    reject_field(sp, 4, obj_bin(z, 6), "SOLPART: field 'data' length is not a multiple of 4");
    reject_field(sp, 4, obj_bin(z, 2), "not a multiple of 4");
    accept_field(sp, 4, obj_bin(z, 0));
    msgpack_sbuffer sb, b1, b2;   /* offset 999999999 plus two rows runs past the largest board */
    encode_sample(sp, &sb);
    msgpack_object off = obj_uint(999999999), data = obj_bin(z, 8);
    frame_edit(&sb, 5, &off, &b1);
    frame_edit(&b1, 6, &data, &b2);
    T_REJECT(b2.data, b2.size, "field 'data' runs past row 1000000000");
    msgpack_sbuffer_destroy(&sb); msgpack_sbuffer_destroy(&b1); msgpack_sbuffer_destroy(&b2);
    size_t flen;
    uint8_t *f = big_result(NQ_MAX_PAYLOAD + 1, &flen);
    T_REJECT(f, flen, "field 'payload' is 50331649 bytes, longer than 50331648");
    nq_msg_t m;
    char err[128];
    T_CHECK(proto_decode(f, flen - 2, &m, err, sizeof err) == -1);   /* a byte short of its length */
    free(f);
    f = big_result(NQ_MAX_PAYLOAD, &flen);
    T_CHECK(t_accept(f, flen, &m) == 0);
    T_EQ_U64(m.u.result.payload_len, NQ_MAX_PAYLOAD);
    T_CHECK(m.u.result.payload == f + flen - 1 - NQ_MAX_PAYLOAD);   /* zero copy: into the frame */
    proto_msg_free(&m);
    free(f);
}

/* [5, HEARTBEAT, [ n items of [i, i] ], 7, []] packed by hand; `shape` breaks item 0. */
static void hb_frame(msgpack_sbuffer *sb, uint32_t n, int shape)
{
    msgpack_packer pk;
    msgpack_sbuffer_init(sb);
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    msgpack_pack_array(&pk, 5); msgpack_pack_uint8(&pk, NQ_PROTO_VERSION); msgpack_pack_uint8(&pk, NQ_MSG_HEARTBEAT);
    msgpack_pack_array(&pk, n);
    for (uint32_t i = 0; i < n; i++) {
        if (i == 0 && shape == 1) { msgpack_pack_uint8(&pk, 5); continue; }
        if (i == 0 && shape == 2) { msgpack_pack_array(&pk, 3); msgpack_pack_uint8(&pk, 0); }
        else msgpack_pack_array(&pk, 2);
        if (i == 0 && shape == 3) msgpack_pack_int8(&pk, -1); else msgpack_pack_uint32(&pk, i);
        msgpack_pack_uint64(&pk, (uint64_t)i << 40);   /* 9 bytes: the frame is not short */
    }
    msgpack_pack_uint64(&pk, 7);        /* the sync token */
    msgpack_pack_array(&pk, 0);         /* no devices */
}

/* [5, HEARTBEAT, [], 7, [ n devices of [name, 0, 1, 2, 3] ]]; `shape` breaks the last one: 1 a
   name of namelen bytes, 2 four elements, 3 state 2, 4 a control byte in the name. */
static void hb_devices_frame(msgpack_sbuffer *sb, uint32_t n, int shape, size_t namelen)
{
    msgpack_packer pk;
    char name[200];
    msgpack_sbuffer_init(sb);
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    msgpack_pack_array(&pk, 5); msgpack_pack_uint8(&pk, NQ_PROTO_VERSION); msgpack_pack_uint8(&pk, NQ_MSG_HEARTBEAT);
    msgpack_pack_array(&pk, 0);
    msgpack_pack_uint64(&pk, 7);
    msgpack_pack_array(&pk, n);
    for (uint32_t i = 0; i < n; i++) {
        int last = i + 1 == n;
        size_t nl = last && shape == 1 ? namelen : 5;
        memset(name, 'g', nl);
        if (last && shape == 4)
            name[2] = '\x1b';
        msgpack_pack_array(&pk, last && shape == 2 ? 4 : 5);
        msgpack_pack_str_with_body(&pk, name, nl);
        msgpack_pack_uint8(&pk, last && shape == 3 ? 2 : 0);
        msgpack_pack_uint8(&pk, 1);
        msgpack_pack_uint8(&pk, 2);
        if (!(last && shape == 2))
            msgpack_pack_uint8(&pk, 3);
    }
}

/* A peer's device list is bounded and checked: at most NQ_MAX_HB_DEVICES devices of exactly five
   fields, names of 63 bytes of text at most, a known state. */
T_TEST(test_heartbeat_devices_bounded)
{
    msgpack_sbuffer sb;
    nq_msg_t m;
    hb_devices_frame(&sb, NQ_MAX_HB_DEVICES, 1, NQ_DEVICE_NAME_MAX - 1);
    T_CHECK(t_accept(sb.data, sb.size, &m) == 0);
    T_EQ_U64(m.u.heartbeat.ndevices, NQ_MAX_HB_DEVICES);
    T_EQ_U64(strlen(m.u.heartbeat.devices[NQ_MAX_HB_DEVICES - 1].name), NQ_DEVICE_NAME_MAX - 1);
    T_EQ_U64(m.u.heartbeat.devices[0].rate_milli, 3);
    proto_msg_free(&m);
    msgpack_sbuffer_destroy(&sb);
    hb_devices_frame(&sb, NQ_MAX_HB_DEVICES + 1, 0, 0);
    T_REJECT(sb.data, sb.size, "field 'devices' has 17 devices, more than 16");
    msgpack_sbuffer_destroy(&sb);
    hb_devices_frame(&sb, 2, 1, NQ_DEVICE_NAME_MAX);
    T_REJECT(sb.data, sb.size, "is 64 bytes, longer than 63");
    msgpack_sbuffer_destroy(&sb);
    hb_devices_frame(&sb, 2, 2, 0);
    T_REJECT(sb.data, sb.size, "device 1 has 4 elements");
    msgpack_sbuffer_destroy(&sb);
    hb_devices_frame(&sb, 1, 3, 0);
    T_REJECT(sb.data, sb.size, "field 'devices'");
    msgpack_sbuffer_destroy(&sb);
    hb_devices_frame(&sb, 1, 4, 0);
    T_REJECT(sb.data, sb.size, "control byte");
    msgpack_sbuffer_destroy(&sb);
}

T_TEST(test_reject_bad_heartbeat)
{
    msgpack_sbuffer sb;
    hb_frame(&sb, NQ_MAX_HEARTBEAT_ITEMS + 1, 0);
    T_REJECT(sb.data, sb.size, "HEARTBEAT: field 'items' has 4097 items, more than 4096");
    msgpack_sbuffer_destroy(&sb);
    hb_frame(&sb, NQ_MAX_HEARTBEAT_ITEMS, 0);
    nq_msg_t m;
    T_CHECK(t_accept(sb.data, sb.size, &m) == 0);
    T_EQ_U64(m.u.heartbeat.count, NQ_MAX_HEARTBEAT_ITEMS);
    T_EQ_U64(m.u.heartbeat.items[4095].lease, 4095);
    proto_msg_free(&m);
    msgpack_sbuffer_destroy(&sb);
    hb_frame(&sb, 3, 1);
    T_REJECT(sb.data, sb.size, "field 'items' is uint, expected array");
    msgpack_sbuffer_destroy(&sb);
    hb_frame(&sb, 3, 2);
    T_REJECT(sb.data, sb.size, "item 0 has 3 elements, expected [lease, progress]");
    msgpack_sbuffer_destroy(&sb);
    hb_frame(&sb, 3, 3);
    T_REJECT(sb.data, sb.size, "out of range");
    msgpack_sbuffer_destroy(&sb);
}

/* [1, CTL_REQ, "op", 0, map]: the caller packs the map. */
static void ctlreq_begin(msgpack_sbuffer *sb, msgpack_packer *pk)
{
    msgpack_sbuffer_init(sb);
    msgpack_packer_init(pk, sb, msgpack_sbuffer_write);
    msgpack_pack_array(pk, 5); msgpack_pack_uint8(pk, NQ_PROTO_VERSION); msgpack_pack_uint8(pk, NQ_MSG_CTL_REQ);
    msgpack_pack_str_with_body(pk, "op", 2); msgpack_pack_uint8(pk, 0);
}

#define PARAMS_REJECT(npairs, packing, why) do { \
    msgpack_sbuffer sb; msgpack_packer pk; ctlreq_begin(&sb, &pk); \
    msgpack_pack_map(&pk, npairs); packing; \
    T_REJECT(sb.data, sb.size, why); msgpack_sbuffer_destroy(&sb); } while (0)

T_TEST(test_reject_bad_params)
{
    char k[64];
    memset(k, 'k', sizeof k);
    PARAMS_REJECT(33, for (int i = 0; i < 33; i++) { snprintf(k, sizeof k, "k%d", i);
                      msgpack_pack_str_with_body(&pk, k, strlen(k)); msgpack_pack_uint8(&pk, 1); },
                  "field 'params' has 33 entries, more than 32");
    PARAMS_REJECT(1, msgpack_pack_str_with_body(&pk, k, 32); msgpack_pack_uint8(&pk, 1),
                  "is 32 bytes, longer than 31");
    PARAMS_REJECT(1, msgpack_pack_str_with_body(&pk, "", 0); msgpack_pack_uint8(&pk, 1), "is empty");
    PARAMS_REJECT(1, msgpack_pack_uint8(&pk, 1); msgpack_pack_uint8(&pk, 1), "is uint, expected str");
    PARAMS_REJECT(2, msgpack_pack_str_with_body(&pk, "n", 1); msgpack_pack_uint8(&pk, 1);
                     msgpack_pack_str_with_body(&pk, "n", 1); msgpack_pack_uint8(&pk, 2),
                  "has key 'n' twice");
    PARAMS_REJECT(1, msgpack_pack_str_with_body(&pk, "x", 1); msgpack_pack_double(&pk, 1.5),
                  "value of 'x' is float, expected str or uint");
    PARAMS_REJECT(1, msgpack_pack_str_with_body(&pk, "x", 1); msgpack_pack_nil(&pk),
                  "value of 'x' is nil, expected str or uint");
    PARAMS_REJECT(1, msgpack_pack_str_with_body(&pk, "x", 1); msgpack_pack_int8(&pk, -3),
                  "value of 'x' is negative int, expected str or uint");
    char v[NQ_STR_MAX];
    memset(v, 'v', sizeof v);
    PARAMS_REJECT(1, msgpack_pack_str_with_body(&pk, "x", 1); msgpack_pack_str_with_body(&pk, v, 256),
                  "is 256 bytes, longer than 255");
    PARAMS_REJECT(1, msgpack_pack_str_with_body(&pk, "x", 1); msgpack_pack_str_with_body(&pk, "a\rb", 3),
                  "contains a NUL or control byte");
}

/* [1, CTL_REP, 0, "", doc] with doc = prefix, then fill_count copies of fill, then suffix. */
static void ctlrep_frame(msgpack_sbuffer *sb, const char *prefix, size_t plen, char fill,
                         size_t fill_count)
{
    msgpack_sbuffer_init(sb);
    msgpack_sbuffer_write(sb, "\x95\x05\x0c\x00\xa0", 5);
    msgpack_sbuffer_write(sb, prefix, plen);
    for (size_t i = 0; i < fill_count; i++)
        msgpack_sbuffer_write(sb, &fill, 1);
}

T_TEST(test_reject_deep_doc)
{
    msgpack_sbuffer sb;
    nq_msg_t m;
    char deep[16];
    memset(deep, '\x91', sizeof deep);   /* [[[[ ... 1 ]]]] */
    ctlrep_frame(&sb, deep, NQ_MAX_DOC_DEPTH, '\x01', 1);
    T_CHECK(t_accept(sb.data, sb.size, &m) == 0);
    proto_msg_free(&m);
    msgpack_sbuffer_destroy(&sb);
    ctlrep_frame(&sb, deep, NQ_MAX_DOC_DEPTH + 1, '\x01', 1);
    T_REJECT(sb.data, sb.size, "CTL_REP: field 'doc' is nested deeper than 8");
    msgpack_sbuffer_destroy(&sb);
    /* maps count too: {"":{"":...{"":1}}} nine deep */
    msgpack_sbuffer_init(&sb);
    msgpack_sbuffer_write(&sb, "\x95\x05\x0c\x00\xa0", 5);
    for (int i = 0; i < NQ_MAX_DOC_DEPTH + 1; i++)
        msgpack_sbuffer_write(&sb, "\x81\xa0", 2);
    msgpack_sbuffer_write(&sb, "\x01", 1);
    T_REJECT(sb.data, sb.size, "nested deeper than 8");
    msgpack_sbuffer_destroy(&sb);
    /* an invalid byte inside the document */
    ctlrep_frame(&sb, "\x92\x02", 2, '\xc1', 1);
    T_REJECT(sb.data, sb.size, "field 'doc' has invalid msgpack byte 0xc1");
    msgpack_sbuffer_destroy(&sb);
}

T_TEST(test_reject_doc_too_many_items)
{
    msgpack_sbuffer sb;
    nq_msg_t m;
    uint32_t n = NQ_MAX_DOC_ITEMS - 1;   /* the array plus its elements: exactly the cap */
    char hdr[5] = { '\xdd', (char)(n >> 24), (char)(n >> 16), (char)(n >> 8), (char)n };
    ctlrep_frame(&sb, hdr, 5, '\xc0', n);
    T_CHECK(t_accept(sb.data, sb.size, &m) == 0);
    T_CHECK(m.u.ctl_rep.doc.type == MSGPACK_OBJECT_ARRAY);
    T_EQ_U64(m.u.ctl_rep.doc.via.array.size, n);
    proto_msg_free(&m);
    msgpack_sbuffer_destroy(&sb);
    n++;
    char hdr2[5] = { '\xdd', (char)(n >> 24), (char)(n >> 16), (char)(n >> 8), (char)n };
    ctlrep_frame(&sb, hdr2, 5, '\xc0', n);
    T_REJECT(sb.data, sb.size, "field 'doc' has more than 1048576 objects");
    msgpack_sbuffer_destroy(&sb);
}

/* ---------------------------------------------------------------------------
 * Whatever decodes re-encodes, decodes again to the same and re-encodes to the same bytes
 * ------------------------------------------------------------------------- */

/* Returns 1 if the frame decoded (and the property held), 0 if it was rejected. */
static int check_reencode(const void *buf, size_t len)
{
    nq_msg_t a, b;
    char err[256];
    if (proto_decode(buf, len, &a, err, sizeof err) != 0) {
        T_CHECK(err[0] != '\0');
        return 0;
    }
    msgpack_sbuffer s1, s2;
    msgpack_sbuffer_init(&s1);
    msgpack_sbuffer_init(&s2);
    int enc = proto_encode(&a, &s1);
    T_CHECK(enc == 0);
    if (enc == 0 && proto_decode(s1.data, s1.size, &b, err, sizeof err) == 0) {
        T_CHECK(msg_eq(&a, &b));
        T_CHECK(proto_encode(&b, &s2) == 0 && bytes_eq(s1.data, s1.size, s2.data, s2.size));
        proto_msg_free(&b);
    } else if (enc == 0) {
        fprintf(stderr, "  re-encoded %s rejected: %s\n", proto_type_name(a.type), err);
        T_CHECK(0);
    }
    proto_msg_free(&a);
    msgpack_sbuffer_destroy(&s1);
    msgpack_sbuffer_destroy(&s2);
    return 1;
}

static const uint8_t interesting[] = { 0x00, 0x01, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0,
    0xc1, 0xc4, 0xc6, 0xc9, 0xcc, 0xcd, 0xce, 0xcf, 0xd0, 0xd3, 0xd4, 0xd8, 0xd9, 0xdb, 0xdc,
    0xdd, 0xde, 0xdf, 0xe0, 0xff };

/* One random edit of buf (capacity cap) in place; returns the new length. */
static size_t mutate(nq_rng_t *r, uint8_t *buf, size_t len, size_t cap)
{
    size_t pos = len ? rng_below(r, len) : 0;
    switch (rng_below(r, 7)) {
    case 0: if (len) buf[pos] ^= (uint8_t)(1u << rng_below(r, 8)); return len;
    case 1: if (len) buf[pos] = (uint8_t)rng_next(r); return len;
    case 2: if (len) buf[pos] = interesting[rng_below(r, sizeof interesting)]; return len;
    case 3: return len ? rng_below(r, len) : 0;                      /* truncate */
    case 4: if (len < cap) {                                         /* insert a byte */
                memmove(buf + pos + 1, buf + pos, len - pos);
                buf[pos] = (uint8_t)rng_next(r);
                return len + 1;
            }
            return len;
    case 5: if (len) { memmove(buf + pos, buf + pos + 1, len - pos - 1); return len - 1; }
            return len;
    default: {                                                       /* copy a chunk elsewhere */
            size_t n = 1 + rng_below(r, 8), dst = rng_below(r, len + 1);
            if (pos + n > len || dst + n > cap) return len;
            memmove(buf + dst, buf + pos, n);
            return dst + n > len ? dst + n : len;
        }
    }
}

T_TEST(test_mutation_loop)
{
    enum { ROUNDS = 200000 };
    msgpack_sbuffer frames[NSAMPLES];
    for (int i = 0; i < NSAMPLES; i++)
        encode_sample(i, &frames[i]);
    nq_rng_t r;
    rng_init(&r, 20240611, 7);
    static uint8_t buf[1024];
    int accepted = 0;
    for (int k = 0; k < ROUNDS; k++) {
        const msgpack_sbuffer *f = &frames[k % NSAMPLES];
        size_t len = f->size;
        memcpy(buf, f->data, len);
        for (uint64_t e = 1 + rng_below(&r, 4); e > 0; e--)
            len = mutate(&r, buf, len, sizeof buf);
        /* a copy of exactly len bytes, so ASan sees any read past the frame */
        uint8_t *exact = malloc(len ? len : 1);
        memcpy(exact, buf, len);
        accepted += check_reencode(exact, len);
        free(exact);
    }
    fprintf(stderr, "  %d mutated frames: %d accepted (all re-encoded identically), %d rejected\n",
            ROUNDS, accepted, ROUNDS - accepted);
    T_CHECK(accepted > 0 && accepted < ROUNDS);   /* both paths were exercised */
    for (int i = 0; i < NSAMPLES; i++)
        msgpack_sbuffer_destroy(&frames[i]);
}

/* ---------------------------------------------------------------------------
 * Fuzz corpus (golden wire bytes) and regression replay
 * ------------------------------------------------------------------------- */

static const char *source_dir(void)
{
    static char dir[512];
    const char *env = getenv("NQ_SOURCE_DIR");
    if (env) return env;
    snprintf(dir, sizeof dir, "%s", __FILE__);   /* .../tests/unit/test_proto.c */
    char *cut = strstr(dir, "/tests/unit/test_proto.c");
    if (cut) *cut = '\0';
    else snprintf(dir, sizeof dir, ".");
    return dir;
}

/* The malformed seeds: small edits of valid frames, each hitting a different rule. */
static size_t bad_seed(int i, msgpack_sbuffer *sb, const char **name)
{
    static const struct { const char *name; const char *bytes; size_t len; } raw[] = {
        { "bad-huge-str", "\x97\x05\x01\xdb\xff\xff\xff\xff" "abc", 11 },
        { "bad-huge-array", "\xdd\xff\xff\xff\xff", 5 },
        { "bad-deep-doc", "\x95\x05\x0c\x00\xa0\x91\x91\x91\x91\x91\x91\x91\x91\x91\x01", 15 },
        { "bad-version", "\x92\x03\x0a", 3 },   /* a version before this one */
        { "bad-unknown-type", "\x92\x05\x0d", 3 },
        { "bad-hb-item", "\x95\x05\x05\x91\x93\x01\x02\x03", 8 },
        { "bad-dup-param", "\x95\x05\x0b\xa2op\x00\x82\xa1n\x01\xa1n\x02", 14 },
    };
    int nraw = (int)(sizeof raw / sizeof raw[0]);
    msgpack_sbuffer_init(sb);
    if (i < nraw) {
        *name = raw[i].name;
        msgpack_sbuffer_write(sb, raw[i].bytes, raw[i].len);
        return 1;
    }
    msgpack_sbuffer v;
    if (i == nraw) {            /* a TASK cut in the middle */
        encode_sample(sample_index("task-count"), &v);
        msgpack_sbuffer_write(sb, v.data, v.size / 2);
        *name = "bad-truncated";
    } else if (i == nraw + 1) { /* a RESULT followed by one more byte */
        encode_sample(sample_index("result-count"), &v);
        msgpack_sbuffer_write(sb, v.data, v.size);
        msgpack_sbuffer_write(sb, "\x00", 1);
        *name = "bad-trailing";
    } else {
        return 0;
    }
    msgpack_sbuffer_destroy(&v);
    return 1;
}

static int file_equals(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    return bytes_eq(buf, n, data, len);
}

/* Checks (or with NQ_UPDATE_CORPUS=1 rewrites) one seed file. */
static void corpus_file(const char *name, const msgpack_sbuffer *sb)
{
    char path[700];
    snprintf(path, sizeof path, "%s/tests/fuzz/corpus/proto/%s", source_dir(), name);
    if (getenv("NQ_UPDATE_CORPUS")) {
        FILE *f = fopen(path, "wb");
        T_CHECK(f && fwrite(sb->data, 1, sb->size, f) == sb->size);
        if (f) fclose(f);
    }
    if (!file_equals(path, sb->data, sb->size))
        fprintf(stderr, "  %s differs from the encoder's output: wire format changed? "
                "(NQ_UPDATE_CORPUS=1 rewrites it)\n", path);
    T_CHECK(file_equals(path, sb->data, sb->size));
}

/* The committed seeds are exactly what this encoder produces: a wire format
   change cannot slip in unnoticed. */
T_TEST(test_corpus_golden)
{
    msgpack_sbuffer sb;
    char name[64];
    for (int i = 0; i < NSAMPLES; i++) {
        encode_sample(i, &sb);
        snprintf(name, sizeof name, "ok-%s", sample_names[i]);
        corpus_file(name, &sb);
        msgpack_sbuffer_destroy(&sb);
    }
    const char *bname;
    for (int i = 0; bad_seed(i, &sb, &bname); i++) {
        corpus_file(bname, &sb);
        msgpack_sbuffer_destroy(&sb);
    }
}

static size_t read_file(const char *path, uint8_t **out)
{
    FILE *f = fopen(path, "rb");
    *out = NULL;
    if (!f) return 0;
    struct stat st;
    size_t len = 0;
    if (fstat(fileno(f), &st) == 0 && st.st_size > 0) {
        *out = malloc((size_t)st.st_size);
        len = fread(*out, 1, (size_t)st.st_size, f);
    }
    fclose(f);
    return len;
}

/* Replays every file of a directory; ok-* must decode, bad-* must not. Returns the count. */
static int replay_dir(const char *sub)
{
    char dir[600], path[1000];
    snprintf(dir, sizeof dir, "%s/%s", source_dir(), sub);
    DIR *d = opendir(dir);
    if (!d) fprintf(stderr, "  cannot open %s\n", dir);
    T_CHECK(d != NULL);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || !strcmp(e->d_name, "README.md"))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        uint8_t *buf;
        size_t len = read_file(path, &buf);
        int ok = check_reencode(buf, len);
        if ((!strncmp(e->d_name, "ok-", 3) && !ok) || (!strncmp(e->d_name, "bad-", 4) && ok))
            fprintf(stderr, "  %s: decoded=%d, not what its name says\n", path, ok);
        T_CHECK(strncmp(e->d_name, "ok-", 3) || ok);
        T_CHECK(strncmp(e->d_name, "bad-", 4) || !ok);
        free(buf);
        n++;
    }
    closedir(d);
    return n;
}

T_TEST(test_replay_corpus_and_regressions)
{
    int seeds = replay_dir("tests/fuzz/corpus/proto");
    T_CHECK(seeds >= NSAMPLES);
    int regs = replay_dir("tests/fuzz/regressions");
    fprintf(stderr, "  replayed %d seeds, %d regressions\n", seeds, regs);
}

/* ---------------------------------------------------------------------------
 * Control request parameter helpers
 * ------------------------------------------------------------------------- */

T_TEST(test_params_api)
{
    nq_ctl_req_t r;
    memset(&r, 0, sizeof r);
    uint64_t v = 0;
    T_CHECK(proto_param_add_str(&r, "format", "csv") == 0);
    T_CHECK(proto_param_add_u64(&r, "n", 21) == 0);
    T_EQ_STR(proto_param_str(&r, "format"), "csv");
    T_CHECK(proto_param_u64(&r, "n", &v) == 0); T_EQ_U64(v, 21);
    T_CHECK(proto_param_str(&r, "n") == NULL);            /* other type */
    T_CHECK(proto_param_u64(&r, "format", &v) == -1);
    T_CHECK(proto_param_str(&r, "absent") == NULL);
    T_CHECK(proto_param_u64(&r, "absent", &v) == -1);
    T_CHECK(proto_param_add_u64(&r, "n", 22) == -1);      /* duplicate */
    T_CHECK(proto_param_add_str(&r, "0123456789012345678901234567890123", "x") == -1);
    T_CHECK(proto_param_add_str(&r, "", "x") == -1);
    T_CHECK(proto_param_add_str(&r, "v", "line\nbreak") == -1);
    T_CHECK(proto_param_add_str(&r, "v", NULL) == -1);
    T_EQ_U64(r.nparams, 2);                                /* refusals changed nothing */
    char key[32];
    for (int i = 2; i < NQ_MAX_CTL_PARAMS; i++) {
        snprintf(key, sizeof key, "p%d", i);
        T_CHECK(proto_param_add_u64(&r, key, (uint64_t)i) == 0);
    }
    T_CHECK(proto_param_add_u64(&r, "one-too-many", 1) == -1);
    T_EQ_U64(r.nparams, NQ_MAX_CTL_PARAMS);
    T_CHECK(proto_param_u64(&r, "p31", &v) == 0); T_EQ_U64(v, 31);
}

T_RUN_ALL()
