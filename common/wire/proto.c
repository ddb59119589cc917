/*
 * The wire protocol: encode and strictly decode the messages of proto.h.
 *
 * Each message type is described once, by a table of its fields (name, kind,
 * where it lives in nq_msg_t, range or length cap). The encoder and the
 * decoder both walk that table, so what one accepts the other produces.
 *
 * Decoding does not hand the frame to msgpack-c. A small reader walks the raw
 * bytes: each object header is read, every declared str/bin/ext length and
 * array/map count is checked against the bytes really left in the frame (and
 * then against the field's own cap), and the value is decoded straight into
 * the message: strings copied into their fixed arrays, bins pointed into the
 * frame. Only the free-form control reply document is unpacked by msgpack-c,
 * and only after the same walk has bounded its depth and object count.
 * Nothing is allocated before the bytes that justify it have been seen.
 */
#include "proto.h"
#include "log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool text_ok(const char *s, size_t len);

#define NQ_MAX_N NQ_SOLVE_MAX_N   /* largest board: n, sol_n and SOLPART rows stay within it */

/* ---------------------------------------------------------------------------
 * Field tables
 * ------------------------------------------------------------------------- */

typedef enum {
    F_U8, F_U32, F_I32, F_U64,    /* integers; stored in a field of that C type */
    F_STR,                        /* msgpack str -> NUL-terminated char array */
    F_BIN,                        /* msgpack bin -> pointer into the frame + size_t length */
    F_HB,                         /* HEARTBEAT items: array of [lease, progress] */
    F_DEVS,                       /* HEARTBEAT devices: array of [name, state, queued, shards, rate] */
    F_PARAMS,                     /* CTL_REQ params: map of str key -> str | uint */
    F_DOC                         /* CTL_REP document: any msgpack value, bounded */
} fkind_t;

typedef struct {
    const char *name;
    fkind_t kind;
    size_t off;        /* offsetof the field in nq_msg_t */
    size_t aux;        /* F_STR: capacity of the char array; F_BIN: offsetof its length */
    uint64_t min, max; /* integers: range; F_STR: min length (max is aux - 1); F_BIN: max length */
} field_t;

#define OFF(path) offsetof(nq_msg_t, u.path)
#define CAP(path) sizeof(((nq_msg_t *)0)->u.path)
#define FU8(path, lo, hi)  { #path, F_U8,  OFF(path), 0, lo, hi }
#define FU32(path, lo, hi) { #path, F_U32, OFF(path), 0, lo, hi }
#define FI32(path, lo, hi) { #path, F_I32, OFF(path), 0, lo, hi }
#define FU64(path, lo, hi) { #path, F_U64, OFF(path), 0, lo, hi }
#define FANY(path)         FU64(path, 0, UINT64_MAX)
#define FSTR(path, minlen) { #path, F_STR, OFF(path), CAP(path), minlen, 0 }
#define FBIN(path, lenpath, maxlen) { #path, F_BIN, OFF(path), OFF(lenpath), 0, maxlen }

static const field_t f_hello[] = {
    FSTR(hello.worker_id, 1), FANY(hello.nonce), FSTR(hello.host, 0),
    FU32(hello.threads, 1, NQ_THREADS_MAX), FSTR(hello.build, 0),
};
static const field_t f_welcome[] = {
    FU32(welcome.heartbeat_ms, 100, 60000), FU32(welcome.liveness, 1, 100),
    FANY(welcome.broker_nonce),
};
static const field_t f_credit[] = { FU32(credit.credit, 0, 65536) };
static const field_t f_task[] = {
    FANY(task.job), FANY(task.shard), FANY(task.lease), FU32(task.attempt, 0, UINT32_MAX),
    FU8(task.kind, 1, 3), FU64(task.n, 1, NQ_MAX_N), FBIN(task.spec, task.spec_len, NQ_MAX_SPEC),
    FANY(task.seed), FSTR(task.algo, 0), FANY(task.max_steps), FANY(task.proof),
};
static const field_t f_heartbeat[] = {
    { "heartbeat.items", F_HB, 0, 0, 0, NQ_MAX_HEARTBEAT_ITEMS }, FANY(heartbeat.sync),
    { "heartbeat.devices", F_DEVS, 0, 0, 0, NQ_MAX_HB_DEVICES },
};
static const field_t f_result[] = {
    FANY(result.job), FANY(result.shard), FANY(result.lease), FU8(result.kind, 1, 3),
    FU8(result.status, 0, 2), FANY(result.total), FANY(result.unique), FANY(result.nodes),
    FU8(result.res13, 0, 12), FU8(result.res15, 0, 14), FANY(result.elapsed_us),
    FU64(result.sol_n, 0, NQ_MAX_N), FANY(result.proof),
    FBIN(result.payload, result.payload_len, NQ_MAX_PAYLOAD),   /* the big one */
    FU8(result.nodes_kind, 0, NQ_NODES_GPU_FAST),
};
static const field_t f_solpart[] = {
    FANY(solpart.job), FANY(solpart.shard), FANY(solpart.lease),
    FU64(solpart.offset, 0, NQ_MAX_N - 1), FBIN(solpart.data, solpart.data_len, NQ_MAX_PAYLOAD),
    FANY(solpart.proof),
};
static const field_t f_ack[] = { FANY(ack.job), FANY(ack.shard), FANY(ack.lease) };
static const field_t f_cancel[] = { FANY(cancel.job), FANY(cancel.lease) };
static const field_t f_ctl_req[] = {
    FSTR(ctl_req.op, 1), FANY(ctl_req.job), { "ctl_req.params", F_PARAMS, 0, 0, 0, NQ_MAX_CTL_PARAMS },
};
static const field_t f_ctl_rep[] = {
    FI32(ctl_rep.code, 0, 3), FSTR(ctl_rep.error, 0), { "ctl_rep.doc", F_DOC, 0, 0, 0, 0 },
};

/* Checks that involve more than one field; NULL-terminated reason or NULL when fine. */

/* A worker id is a name in logs, metrics labels, web pages and `nq workers`: one token of
   UTF-8 text, so it can never pass for another key=value field or break out of a quoted value. */
const char *proto_check_worker_id(const char *id)
{
    size_t len = strlen(id);
    if (len == 0 || len >= NQ_STR_MAX)
        return "a worker id must be 1..255 bytes";
    if (!text_ok(id, len))
        return "a worker id must be UTF-8 text without control characters";
    if (strpbrk(id, " \"\\='<>&`"))
        return "a worker id may not hold spaces, quotes, backslashes, '=', '<', '>', '&' or '`'";
    return NULL;
}

static const char *hello_check(const nq_msg_t *m)
{
    return proto_check_worker_id(m->u.hello.worker_id);
}

static const char *solpart_check(const nq_msg_t *m)
{
    const nq_solpart_t *s = &m->u.solpart;
    if (s->data_len % 4 != 0)
        return "field 'data' length is not a multiple of 4";
    if (s->offset + s->data_len / 4 > NQ_MAX_N)   /* offset < 1e9, data_len <= 48 MiB: no overflow */
        return "field 'data' runs past row 1000000000";
    return NULL;
}

typedef struct {
    const char *name;
    const field_t *fields;
    int nfields;
    size_t size;   /* of the union member: only that much is cleared before decoding */
    const char *(*check)(const nq_msg_t *m);
} mtype_t;

#define MT(name, f, member, chk) { name, f, (int)(sizeof f / sizeof f[0]), CAP(member), chk }
static const mtype_t mtypes[NQ_MSG_TYPE_MAX] = {
    [NQ_MSG_HELLO] = MT("HELLO", f_hello, hello, hello_check),
    [NQ_MSG_WELCOME] = MT("WELCOME", f_welcome, welcome, NULL),
    [NQ_MSG_CREDIT] = MT("CREDIT", f_credit, credit, NULL),
    [NQ_MSG_TASK] = MT("TASK", f_task, task, NULL),
    [NQ_MSG_HEARTBEAT] = MT("HEARTBEAT", f_heartbeat, heartbeat, NULL),
    [NQ_MSG_RESULT] = MT("RESULT", f_result, result, NULL),
    [NQ_MSG_SOLPART] = MT("SOLPART", f_solpart, solpart, solpart_check),
    [NQ_MSG_ACK] = MT("ACK", f_ack, ack, NULL),
    [NQ_MSG_CANCEL] = MT("CANCEL", f_cancel, cancel, NULL),
    [NQ_MSG_BYE] = { "BYE", NULL, 0, 0, NULL },
    [NQ_MSG_CTL_REQ] = MT("CTL_REQ", f_ctl_req, ctl_req, NULL),
    [NQ_MSG_CTL_REP] = MT("CTL_REP", f_ctl_rep, ctl_rep, NULL),
};

const char *proto_type_name(int type)
{
    return (type > 0 && type < NQ_MSG_TYPE_MAX) ? mtypes[type].name : "?";
}

/* The field's name without its struct prefix ("hello.threads" -> "threads"). */
static const char *short_name(const char *name)
{
    const char *dot = strchr(name, '.');
    return dot ? dot + 1 : name;
}

/* Integer fields of any width, read and written through the table. A negative
   int32 reads as UINT64_MAX so that it fails every range check. */
static uint64_t fld_get(const nq_msg_t *m, const field_t *f)
{
    const char *p = (const char *)m + f->off;
    uint8_t u8; uint32_t u32; int32_t i32; uint64_t u64;
    switch (f->kind) {
    case F_U8:  memcpy(&u8, p, 1); return u8;
    case F_U32: memcpy(&u32, p, 4); return u32;
    case F_I32: memcpy(&i32, p, 4); return i32 < 0 ? UINT64_MAX : (uint64_t)i32;
    default:    memcpy(&u64, p, 8); return u64;
    }
}

static void fld_set(nq_msg_t *m, const field_t *f, uint64_t v)   /* v already range-checked */
{
    char *p = (char *)m + f->off;
    uint8_t u8 = (uint8_t)v; uint32_t u32 = (uint32_t)v; int32_t i32 = (int32_t)v;
    switch (f->kind) {
    case F_U8:  memcpy(p, &u8, 1); break;
    case F_U32: memcpy(p, &u32, 4); break;
    case F_I32: memcpy(p, &i32, 4); break;
    default:    memcpy(p, &v, 8); break;
    }
}

/* U+202A..U+202E and U+2066..U+2069: the bidirectional embeddings, overrides and isolates, which
   reorder the text around them on a terminal or a page (a host name could make a log line or
   `nq workers` read as something else). */
static bool bidi_control(const unsigned char *u, size_t k)
{
    return k == 3 && u[0] == 0xe2 && ((u[1] == 0x80 && u[2] >= 0xaa && u[2] <= 0xae) ||
                                      (u[1] == 0x81 && u[2] >= 0xa6 && u[2] <= 0xa9));
}

/* Strings are one line of valid UTF-8 text: no NUL (C strings could not hold it), no control
   characters (C0, DEL, C1, bidirectional: they end up in log lines and terminals), and no
   malformed sequences (overlong forms, surrogates, past U+10FFFF), so every string we keep is
   safe to print, to put in JSON and in a Prometheus label as it is. */
static bool text_ok(const char *s, size_t len)
{
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)s[i];
        size_t k = nq_utf8_len(s + i, len - i);
        if (k == 0 || c < 0x20 || c == 0x7f || (k == 2 && c == 0xc2 && (unsigned char)s[i + 1] < 0xa0) ||
            bidi_control((const unsigned char *)s + i, k))
            return false;
        i += k;
    }
    return true;
}

/* ---------------------------------------------------------------------------
 * The reader: msgpack object headers from raw bytes, every length checked
 * ------------------------------------------------------------------------- */

typedef struct {
    const uint8_t *p, *end;
    const char *type;    /* message type name once known, for the error prefix */
    const char *field;   /* field being read, for the error prefix */
    char *err;
    size_t errlen;
} rd_t;

__attribute__((format(printf, 2, 3)))
static int rd_fail(rd_t *r, const char *fmt, ...)
{
    if (!r->err || r->errlen == 0)
        return -1;
    int n = 0;
    if (r->type)
        n = snprintf(r->err, r->errlen, "%s: ", r->type);
    if (n >= 0 && (size_t)n < r->errlen) {
        if (r->field)
            n += snprintf(r->err + n, r->errlen - (size_t)n, "field '%s' ", short_name(r->field));
        else if (!r->type)   /* still reading the envelope */
            n += snprintf(r->err + n, r->errlen - (size_t)n, "message ");
    }
    if (n >= 0 && (size_t)n < r->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static size_t rd_left(const rd_t *r) { return (size_t)(r->end - r->p); }

typedef enum { MP_NIL, MP_BOOL, MP_UINT, MP_NINT, MP_FLOAT, MP_STR, MP_BIN, MP_ARRAY, MP_MAP, MP_EXT } mp_fam_t;
static const char *const fam_names[] = { "nil", "bool", "uint", "negative int", "float", "str",
                                         "bin", "array", "map", "ext" };

typedef struct {
    mp_fam_t fam;
    uint64_t v;   /* uint value; negative int as two's complement; str/bin/ext length; array/map count */
} mp_head_t;

/* Big-endian integer of nbytes (1, 2, 4, 8) from the frame. */
static int rd_be(rd_t *r, int nbytes, uint64_t *out)
{
    if (rd_left(r) < (size_t)nbytes)
        return rd_fail(r, "truncated");
    uint64_t v = 0;
    for (int i = 0; i < nbytes; i++)
        v = (v << 8) | *r->p++;
    *out = v;
    return 0;
}

/* Sign-extends an nbytes-wide two's complement value read by rd_be. */
static mp_head_t int_head(uint64_t raw, int nbytes)
{
    int shift = 64 - 8 * nbytes;
    int64_t v = shift ? (int64_t)(raw << shift) >> shift : (int64_t)raw;
    mp_head_t h = { v < 0 ? MP_NINT : MP_UINT, (uint64_t)v };
    return h;
}

/* The variable-size formats (0xc4..0xdf minus fixed-width ones), from the msgpack spec. */
static int rd_head_var(rd_t *r, uint8_t b, mp_head_t *h)
{
    static const struct { uint8_t fam, lenbytes; } var[32] = {
        [0x04] = { MP_BIN, 1 }, [0x05] = { MP_BIN, 2 }, [0x06] = { MP_BIN, 4 },
        [0x07] = { MP_EXT, 1 }, [0x08] = { MP_EXT, 2 }, [0x09] = { MP_EXT, 4 },
        [0x19] = { MP_STR, 1 }, [0x1a] = { MP_STR, 2 }, [0x1b] = { MP_STR, 4 },
        [0x1c] = { MP_ARRAY, 2 }, [0x1d] = { MP_ARRAY, 4 },
        [0x1e] = { MP_MAP, 2 }, [0x1f] = { MP_MAP, 4 },
    };
    int i = b - 0xc0;
    if (var[i].lenbytes == 0)
        return rd_fail(r, "has invalid msgpack byte 0x%02x", b);
    h->fam = (mp_fam_t)var[i].fam;
    if (rd_be(r, var[i].lenbytes, &h->v))
        return -1;
    if (h->fam == MP_EXT && rd_left(r) < 1)   /* ext type byte */
        return rd_fail(r, "truncated");
    r->p += (h->fam == MP_EXT);
    return 0;
}

/* Reads one header byte and its fixed-width tail. */
static int rd_head_raw(rd_t *r, mp_head_t *h)
{
    if (rd_left(r) < 1)
        return rd_fail(r, "truncated");
    uint8_t b = *r->p++;
    uint64_t raw = 0;
    if (b <= 0x7f) { h->fam = MP_UINT; h->v = b; return 0; }
    if (b >= 0xe0) { h->fam = MP_NINT; h->v = (uint64_t)(int64_t)(int8_t)b; return 0; }
    if (b <= 0x8f) { h->fam = MP_MAP; h->v = b & 0x0f; return 0; }
    if (b <= 0x9f) { h->fam = MP_ARRAY; h->v = b & 0x0f; return 0; }
    if (b <= 0xbf) { h->fam = MP_STR; h->v = b & 0x1f; return 0; }
    switch (b) {
    case 0xc0: h->fam = MP_NIL; h->v = 0; return 0;
    case 0xc2: case 0xc3: h->fam = MP_BOOL; h->v = b & 1; return 0;
    case 0xca: h->fam = MP_FLOAT; return rd_be(r, 4, &h->v);
    case 0xcb: h->fam = MP_FLOAT; return rd_be(r, 8, &h->v);
    case 0xcc: case 0xcd: case 0xce: case 0xcf:
        h->fam = MP_UINT; return rd_be(r, 1 << (b - 0xcc), &h->v);
    case 0xd0: case 0xd1: case 0xd2: case 0xd3:
        if (rd_be(r, 1 << (b - 0xd0), &raw)) return -1;
        *h = int_head(raw, 1 << (b - 0xd0));
        return 0;
    case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8:   /* fixext: type byte, then 2^k bytes */
        h->fam = MP_EXT; h->v = 1u << (b - 0xd4);
        if (rd_left(r) < 1) return rd_fail(r, "truncated");
        r->p++;
        return 0;
    default:
        return rd_head_var(r, b, h);
    }
}

/* One header, with its declared size checked against what is left: str/bin/ext
   bodies must fit, and so must array/map elements (each takes at least a byte). */
static int rd_head(rd_t *r, mp_head_t *h)
{
    if (rd_head_raw(r, h))
        return -1;
    size_t left = rd_left(r);
    switch (h->fam) {
    case MP_STR: case MP_BIN: case MP_EXT:
        if (h->v > left)
            return rd_fail(r, "declared length %llu exceeds frame (%zu bytes left)",
                           (unsigned long long)h->v, left);
        break;
    case MP_ARRAY: case MP_MAP:
        if (h->v * (h->fam == MP_MAP ? 2 : 1) > left)
            return rd_fail(r, "declared %s of %llu elements exceeds frame (%zu bytes left)",
                           fam_names[h->fam], (unsigned long long)h->v, left);
        break;
    default:
        break;
    }
    return 0;
}

static int rd_expect(rd_t *r, mp_head_t *h, mp_fam_t fam)
{
    if (rd_head(r, h))
        return -1;
    if (h->fam != fam && !(fam == MP_UINT && h->fam == MP_NINT))
        return rd_fail(r, "is %s, expected %s", fam_names[h->fam], fam_names[fam]);
    return 0;
}

static int rd_uint(rd_t *r, uint64_t min, uint64_t max, uint64_t *out)
{
    mp_head_t h;
    if (rd_expect(r, &h, MP_UINT))
        return -1;
    if (h.fam == MP_NINT)
        return rd_fail(r, "out of range %llu..%llu (got %lld)", (unsigned long long)min,
                       (unsigned long long)max, (long long)(int64_t)h.v);
    if (h.v < min || h.v > max)
        return rd_fail(r, "out of range %llu..%llu (got %llu)", (unsigned long long)min,
                       (unsigned long long)max, (unsigned long long)h.v);
    *out = h.v;
    return 0;
}

static int rd_str(rd_t *r, char *dst, size_t cap, size_t minlen)
{
    mp_head_t h;
    if (rd_expect(r, &h, MP_STR))
        return -1;
    if (h.v >= cap)
        return rd_fail(r, "is %llu bytes, longer than %zu", (unsigned long long)h.v, cap - 1);
    if (h.v < minlen)
        return rd_fail(r, "is empty");
    if (!text_ok((const char *)r->p, h.v))
        return rd_fail(r, "contains a NUL or control byte, a bidirectional control, or is not valid UTF-8");
    memcpy(dst, r->p, h.v);
    dst[h.v] = '\0';
    r->p += h.v;
    return 0;
}

static int rd_bin(rd_t *r, size_t max, const uint8_t **ptr, size_t *len)
{
    mp_head_t h;
    if (rd_expect(r, &h, MP_BIN))
        return -1;
    if (h.v > max)
        return rd_fail(r, "is %llu bytes, longer than %zu", (unsigned long long)h.v, max);
    *ptr = r->p;
    *len = (size_t)h.v;
    r->p += h.v;
    return 0;
}

/* ---------------------------------------------------------------------------
 * Decoding the structured fields
 * ------------------------------------------------------------------------- */

/* At most NQ_MAX_HB_DEVICES devices, each exactly [name, state, queued, shards, rate_milli]: a
   peer cannot make the broker keep more than a fixed few names a worker, each of at most 63 bytes
   of text. */
static int decode_devices(rd_t *r, nq_heartbeat_t *hb)
{
    mp_head_t h;
    uint64_t v;
    if (rd_expect(r, &h, MP_ARRAY))
        return -1;
    if (h.v > NQ_MAX_HB_DEVICES)
        return rd_fail(r, "has %llu devices, more than %d", (unsigned long long)h.v, NQ_MAX_HB_DEVICES);
    for (hb->ndevices = 0; hb->ndevices < h.v; hb->ndevices++) {
        nq_hb_device_t *d = &hb->devices[hb->ndevices];
        mp_head_t dh;
        if (rd_expect(r, &dh, MP_ARRAY))
            return -1;
        if (dh.v != 5)
            return rd_fail(r, "device %u has %llu elements, expected [name, state, queued, shards, rate]",
                           hb->ndevices, (unsigned long long)dh.v);
        if (rd_str(r, d->name, sizeof d->name, 0) || rd_uint(r, 0, NQ_DEVICE_FAILED, &v))
            return -1;
        d->state = (uint8_t)v;
        if (rd_uint(r, 0, UINT32_MAX, &v))
            return -1;
        d->queued = (uint32_t)v;
        if (rd_uint(r, 0, UINT64_MAX, &d->shards) || rd_uint(r, 0, UINT64_MAX, &d->rate_milli))
            return -1;
    }
    return 0;
}

static int decode_heartbeat(rd_t *r, nq_heartbeat_t *hb)
{
    mp_head_t h;
    if (rd_expect(r, &h, MP_ARRAY))
        return -1;
    if (h.v > NQ_MAX_HEARTBEAT_ITEMS)
        return rd_fail(r, "has %llu items, more than %d", (unsigned long long)h.v,
                       NQ_MAX_HEARTBEAT_ITEMS);
    if (h.v * 3 > rd_left(r))   /* each item is at least [fixint, fixint]: 3 bytes */
        return rd_fail(r, "declares %llu items, more than the frame can hold",
                       (unsigned long long)h.v);
    if (h.v == 0)
        return 0;
    hb->items = calloc((size_t)h.v, sizeof *hb->items);
    if (!hb->items)
        return rd_fail(r, "out of memory");
    for (hb->count = 0; hb->count < h.v; hb->count++) {
        nq_hb_item_t *it = &hb->items[hb->count];
        mp_head_t ih;
        if (rd_expect(r, &ih, MP_ARRAY))
            return -1;
        if (ih.v != 2)
            return rd_fail(r, "item %u has %llu elements, expected [lease, progress]",
                           hb->count, (unsigned long long)ih.v);
        if (rd_uint(r, 0, UINT64_MAX, &it->lease) || rd_uint(r, 0, UINT64_MAX, &it->progress))
            return -1;
    }
    return 0;
}

static int decode_param(rd_t *r, nq_ctl_req_t *q, nq_param_t *p)
{
    if (rd_str(r, p->key, sizeof p->key, 1))
        return -1;
    for (const nq_param_t *o = q->params; o < p; o++)
        if (strcmp(o->key, p->key) == 0)
            return rd_fail(r, "has key '%s' twice", p->key);
    const uint8_t *save = r->p;
    mp_head_t h;
    if (rd_head(r, &h))
        return -1;
    r->p = save;   /* peeked: re-read with the right reader */
    if (h.fam == MP_STR) {
        p->is_str = 1;
        return rd_str(r, p->str, sizeof p->str, 0);
    }
    if (h.fam == MP_UINT)
        return rd_uint(r, 0, UINT64_MAX, &p->u);
    return rd_fail(r, "value of '%s' is %s, expected str or uint", p->key, fam_names[h.fam]);
}

static int decode_params(rd_t *r, nq_ctl_req_t *q)
{
    mp_head_t h;
    if (rd_expect(r, &h, MP_MAP))
        return -1;
    if (h.v > NQ_MAX_CTL_PARAMS)
        return rd_fail(r, "has %llu entries, more than %d", (unsigned long long)h.v,
                       NQ_MAX_CTL_PARAMS);
    for (q->nparams = 0; q->nparams < h.v; q->nparams++)
        if (decode_param(r, q, &q->params[q->nparams]))
            return -1;
    return 0;
}

/* Walks one msgpack value of any type without decoding it: lengths checked by
   rd_head, nesting and object count bounded so msgpack-c can then unpack it in
   bounded memory. Recursion depth is at most NQ_MAX_DOC_DEPTH + 1. */
static int doc_scan(rd_t *r, int depth, uint32_t *items)
{
    if (++*items > NQ_MAX_DOC_ITEMS)
        return rd_fail(r, "has more than %u objects", NQ_MAX_DOC_ITEMS);
    mp_head_t h;
    if (rd_head(r, &h))
        return -1;
    if (h.fam == MP_STR || h.fam == MP_BIN || h.fam == MP_EXT) {
        r->p += h.v;
        return 0;
    }
    if (h.fam != MP_ARRAY && h.fam != MP_MAP)
        return 0;
    if (depth >= NQ_MAX_DOC_DEPTH)
        return rd_fail(r, "is nested deeper than %d", NQ_MAX_DOC_DEPTH);
    uint64_t n = h.v * (h.fam == MP_MAP ? 2 : 1);
    for (uint64_t i = 0; i < n; i++)
        if (doc_scan(r, depth + 1, items))
            return -1;
    return 0;
}

/* The document is copied into a zone owned by the message, so the decoded
   tree (whose strings msgpack-c points into its input) outlives the frame. */
static int decode_doc(rd_t *r, nq_ctl_rep_t *c)
{
    const uint8_t *start = r->p;
    uint32_t items = 0;
    if (rd_left(r) >= 1 && *r->p == 0xc0) {   /* nil: no document */
        r->p++;
        c->doc.type = MSGPACK_OBJECT_NIL;
        return 0;
    }
    if (doc_scan(r, 0, &items))
        return -1;
    size_t len = (size_t)(r->p - start);
    c->zone = msgpack_zone_new(MSGPACK_ZONE_CHUNK_SIZE);
    char *copy = c->zone ? msgpack_zone_malloc(c->zone, len) : NULL;
    if (!copy)
        return rd_fail(r, "out of memory");
    memcpy(copy, start, len);
    size_t off = 0;
    if (msgpack_unpack(copy, len, &off, c->zone, &c->doc) != MSGPACK_UNPACK_SUCCESS || off != len)
        return rd_fail(r, "rejected by msgpack-c after passing the scan");
    c->doc_bytes = copy;
    c->doc_len = len;
    return 0;
}

static int decode_field(rd_t *r, const field_t *f, nq_msg_t *m)
{
    char *p = (char *)m + f->off;
    uint64_t v = 0;                    /* set by rd_uint when it succeeds: the 0 quiets -O3 */
    r->field = f->name;   /* shortened only if an error is reported */
    switch (f->kind) {
    case F_U8: case F_U32: case F_I32: case F_U64:
        if (rd_uint(r, f->min, f->max, &v))
            return -1;
        fld_set(m, f, v);
        return 0;
    case F_STR:
        return rd_str(r, p, f->aux, (size_t)f->min);
    case F_BIN:
        return rd_bin(r, (size_t)f->max, (const uint8_t **)(void *)p, (size_t *)(void *)((char *)m + f->aux));
    case F_HB:
        return decode_heartbeat(r, &m->u.heartbeat);
    case F_DEVS:
        return decode_devices(r, &m->u.heartbeat);
    case F_PARAMS:
        return decode_params(r, &m->u.ctl_req);
    case F_DOC:
        return decode_doc(r, &m->u.ctl_rep);
    }
    return rd_fail(r, "has an unknown field kind");
}

/* Envelope: [version, type, ...] with exactly the type's field count. */
static int decode_envelope(rd_t *r, nq_msg_t *m, const mtype_t **mt)
{
    mp_head_t h;
    uint64_t version, type;
    r->field = NULL;
    if (rd_head(r, &h))
        return -1;
    if (h.fam != MP_ARRAY)
        return rd_fail(r, "is %s, expected array", fam_names[h.fam]);
    if (h.v < 2)
        return rd_fail(r, "array has %llu elements, expected [version, type, ...]",
                       (unsigned long long)h.v);
    r->field = "version";
    if (rd_uint(r, 0, UINT64_MAX, &version))
        return -1;
    if (version != NQ_PROTO_VERSION) {
        rd_fail(r, "is %llu, this build speaks %d (wrong version: run the same nq release on the broker, "
                "its workers and its clients)", (unsigned long long)version, NQ_PROTO_VERSION);
        return NQ_PROTO_WRONG_VERSION;
    }
    r->field = "type";
    if (rd_uint(r, 0, UINT64_MAX, &type))
        return -1;
    if (type < 1 || type >= NQ_MSG_TYPE_MAX)
        return rd_fail(r, "is %llu (unknown type)", (unsigned long long)type);
    *mt = &mtypes[type];
    r->type = (*mt)->name;
    r->field = NULL;
    memset(&m->u, 0, (*mt)->size);   /* not all of the union: a CTL_REQ is 10 KB */
    m->type = (nq_msg_type_t)type;
    if (h.v != 2 + (uint64_t)(*mt)->nfields)
        return rd_fail(r, "has %llu fields, expected %d", (unsigned long long)h.v - 2, (*mt)->nfields);
    return 0;
}

static int decode_all(rd_t *r, nq_msg_t *m)
{
    const mtype_t *mt = NULL;
    int rc = decode_envelope(r, m, &mt);
    if (rc)
        return rc;
    for (int i = 0; i < mt->nfields; i++)
        if (decode_field(r, &mt->fields[i], m))
            return -1;
    r->field = NULL;
    if (r->p != r->end)
        return rd_fail(r, "trailing bytes (%zu after the message)", rd_left(r));
    const char *why = mt->check ? mt->check(m) : NULL;
    if (why)
        return rd_fail(r, "%s", why);
    return 0;
}

int proto_decode(const void *buf, size_t len, nq_msg_t *m, char *err, size_t errlen)
{
    rd_t r = { buf, (const uint8_t *)buf + len, NULL, NULL, err, errlen };
    const char *why = NULL;
    if (err && errlen)
        err[0] = '\0';
    if (m)
        m->type = 0;
    if (!m)
        why = "no message to decode into";
    else if (!buf || len == 0)
        why = "empty frame";
    else if (len > NQ_MAX_FRAME)
        why = "frame exceeds NQ_MAX_FRAME";
    if (why) {
        if (err && errlen)
            snprintf(err, errlen, "%s (%zu bytes)", why, len);
        return -1;
    }
    int rc = decode_all(&r, m);
    if (rc) {
        proto_msg_free(m);
        m->type = 0;
        return rc;
    }
    return 0;
}

void proto_msg_free(nq_msg_t *m)
{
    if (!m)
        return;
    if (m->type == NQ_MSG_HEARTBEAT) {
        free(m->u.heartbeat.items);
        m->u.heartbeat.items = NULL;
        m->u.heartbeat.count = 0;
    } else if (m->type == NQ_MSG_CTL_REP && m->u.ctl_rep.zone) {
        msgpack_zone_free(m->u.ctl_rep.zone);
        m->u.ctl_rep.zone = NULL;
        m->u.ctl_rep.doc_bytes = NULL;
        m->u.ctl_rep.doc_len = 0;
        m->u.ctl_rep.doc.type = MSGPACK_OBJECT_NIL;
    }
}

/* ---------------------------------------------------------------------------
 * Encoding: validate every field first (same rules as decoding), then pack
 * ------------------------------------------------------------------------- */

static bool str_field_ok(const char *s, size_t cap, size_t minlen)
{
    size_t len = strnlen(s, cap);
    return len < cap && len >= minlen && text_ok(s, len);
}

static bool params_ok(const nq_ctl_req_t *q)
{
    if (q->nparams > NQ_MAX_CTL_PARAMS)
        return false;
    for (uint32_t i = 0; i < q->nparams; i++) {
        const nq_param_t *p = &q->params[i];
        if (!str_field_ok(p->key, sizeof p->key, 1))
            return false;
        if (p->is_str && !str_field_ok(p->str, sizeof p->str, 0))
            return false;
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(q->params[j].key, p->key) == 0)
                return false;
    }
    return true;
}

/* The document to embed must be exactly one value within the decoder's bounds. */
static bool doc_ok(const nq_ctl_rep_t *c)
{
    if (c->doc_len == 0)
        return true;
    if (!c->doc_bytes || c->doc_len > NQ_MAX_FRAME)
        return false;
    rd_t r = { c->doc_bytes, (const uint8_t *)c->doc_bytes + c->doc_len, NULL, NULL, NULL, 0 };
    uint32_t items = 0;
    return doc_scan(&r, 0, &items) == 0 && r.p == r.end;
}

static bool field_ok(const nq_msg_t *m, const field_t *f)
{
    const char *p = (const char *)m + f->off;
    const uint8_t *ptr;
    size_t len;
    uint64_t v;
    switch (f->kind) {
    case F_U8: case F_U32: case F_I32: case F_U64:
        v = fld_get(m, f);
        return v >= f->min && v <= f->max;
    case F_STR:
        return str_field_ok(p, f->aux, (size_t)f->min);
    case F_BIN:
        memcpy(&ptr, p, sizeof ptr);
        memcpy(&len, (const char *)m + f->aux, sizeof len);
        return len <= f->max && (ptr || len == 0);
    case F_HB:
        return m->u.heartbeat.count <= NQ_MAX_HEARTBEAT_ITEMS &&
               (m->u.heartbeat.items || m->u.heartbeat.count == 0);
    case F_DEVS:
        if (m->u.heartbeat.ndevices > NQ_MAX_HB_DEVICES)
            return false;
        for (uint32_t i = 0; i < m->u.heartbeat.ndevices; i++) {
            const nq_hb_device_t *d = &m->u.heartbeat.devices[i];
            if (!str_field_ok(d->name, sizeof d->name, 0) || d->state > NQ_DEVICE_FAILED)
                return false;
        }
        return true;
    case F_PARAMS:
        return params_ok(&m->u.ctl_req);
    case F_DOC:
        return doc_ok(&m->u.ctl_rep);
    }
    return false;
}

static int pack_field(msgpack_packer *pk, msgpack_sbuffer *sb, const nq_msg_t *m, const field_t *f)
{
    const char *p = (const char *)m + f->off;
    const uint8_t *ptr;
    size_t len;
    int rc = 0;
    switch (f->kind) {
    case F_U8: case F_U32: case F_I32: case F_U64:
        return msgpack_pack_uint64(pk, fld_get(m, f));
    case F_STR:
        len = strlen(p);
        return msgpack_pack_str(pk, len) | msgpack_pack_str_body(pk, p, len);
    case F_BIN:
        memcpy(&ptr, p, sizeof ptr);
        memcpy(&len, (const char *)m + f->aux, sizeof len);
        rc = msgpack_pack_bin(pk, len);
        return len ? rc | msgpack_pack_bin_body(pk, ptr, len) : rc;   /* no memcpy from NULL */
    case F_HB:
        rc = msgpack_pack_array(pk, m->u.heartbeat.count);
        for (uint32_t i = 0; i < m->u.heartbeat.count; i++)
            rc |= msgpack_pack_array(pk, 2) | msgpack_pack_uint64(pk, m->u.heartbeat.items[i].lease) |
                  msgpack_pack_uint64(pk, m->u.heartbeat.items[i].progress);
        return rc;
    case F_DEVS:
        rc = msgpack_pack_array(pk, m->u.heartbeat.ndevices);
        for (uint32_t i = 0; i < m->u.heartbeat.ndevices; i++) {
            const nq_hb_device_t *d = &m->u.heartbeat.devices[i];
            size_t nl = strlen(d->name);
            rc |= msgpack_pack_array(pk, 5) | msgpack_pack_str(pk, nl) |
                  msgpack_pack_str_body(pk, d->name, nl) | msgpack_pack_uint8(pk, d->state) | msgpack_pack_uint32(pk, d->queued) |
                  msgpack_pack_uint64(pk, d->shards) | msgpack_pack_uint64(pk, d->rate_milli);
        }
        return rc;
    case F_PARAMS:
        rc = msgpack_pack_map(pk, m->u.ctl_req.nparams);
        for (uint32_t i = 0; i < m->u.ctl_req.nparams; i++) {
            const nq_param_t *q = &m->u.ctl_req.params[i];
            size_t kl = strlen(q->key), sl = strlen(q->str);
            rc |= msgpack_pack_str(pk, kl) | msgpack_pack_str_body(pk, q->key, kl);
            rc |= q->is_str ? msgpack_pack_str(pk, sl) | msgpack_pack_str_body(pk, q->str, sl)
                            : msgpack_pack_uint64(pk, q->u);
        }
        return rc;
    case F_DOC:
        if (m->u.ctl_rep.doc_len == 0)
            return msgpack_pack_nil(pk);
        return msgpack_sbuffer_write(sb, m->u.ctl_rep.doc_bytes, m->u.ctl_rep.doc_len);
    }
    return -1;
}

int proto_encode(const nq_msg_t *m, msgpack_sbuffer *sb)
{
    if (!m || !sb || m->type < 1 || m->type >= NQ_MSG_TYPE_MAX)
        return -1;
    const mtype_t *mt = &mtypes[m->type];
    for (int i = 0; i < mt->nfields; i++)
        if (!field_ok(m, &mt->fields[i])) {
            nq_log(NQ_LOG_ERROR, "proto.encode_refused", "type=%s field=%s", mt->name,
                   short_name(mt->fields[i].name));
            return -1;
        }
    const char *why = mt->check ? mt->check(m) : NULL;
    if (why) {
        nq_log(NQ_LOG_ERROR, "proto.encode_refused", "type=%s reason=\"%s\"", mt->name, why);
        return -1;
    }
    size_t start = sb->size;
    int n = mt->nfields;
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    int rc = msgpack_pack_array(&pk, 2 + (size_t)n) |
             msgpack_pack_uint8(&pk, NQ_PROTO_VERSION) | msgpack_pack_uint8(&pk, (uint8_t)m->type);
    for (int i = 0; i < n; i++)
        rc |= pack_field(&pk, sb, m, &mt->fields[i]);
    if (rc) {             /* out of memory: leave the buffer as it was */
        sb->size = start;
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------------------
 * Control request parameters
 * ------------------------------------------------------------------------- */

static const nq_param_t *param_find(const nq_ctl_req_t *r, const char *key)
{
    for (uint32_t i = 0; i < r->nparams && i < NQ_MAX_CTL_PARAMS; i++)
        if (strcmp(r->params[i].key, key) == 0)
            return &r->params[i];
    return NULL;
}

const char *proto_param_str(const nq_ctl_req_t *r, const char *key)
{
    const nq_param_t *p = param_find(r, key);
    return p && p->is_str ? p->str : NULL;
}

int proto_param_u64(const nq_ctl_req_t *r, const char *key, uint64_t *out)
{
    const nq_param_t *p = param_find(r, key);
    if (!p || p->is_str)
        return -1;
    *out = p->u;
    return 0;
}

/* A slot for a new key, or NULL when full, the key is unusable or already there
   (the decoder refuses duplicate keys, so building one would be a bug). */
static nq_param_t *param_slot(nq_ctl_req_t *r, const char *key)
{
    if (r->nparams >= NQ_MAX_CTL_PARAMS || !key || !str_field_ok(key, sizeof r->params[0].key, 1) ||
        param_find(r, key))
        return NULL;
    nq_param_t *p = &r->params[r->nparams];
    memset(p, 0, sizeof *p);
    strcpy(p->key, key);   /* length checked by str_field_ok */
    return p;
}

int proto_param_add_str(nq_ctl_req_t *r, const char *key, const char *val)
{
    if (!val || !str_field_ok(val, NQ_STR_MAX, 0))
        return -1;
    nq_param_t *p = param_slot(r, key);
    if (!p)
        return -1;
    p->is_str = 1;
    strcpy(p->str, val);
    r->nparams++;
    return 0;
}

int proto_param_add_u64(nq_ctl_req_t *r, const char *key, uint64_t val)
{
    nq_param_t *p = param_slot(r, key);
    if (!p)
        return -1;
    p->u = val;
    r->nparams++;
    return 0;
}
