/* msgpack documents as JSON (see json.h): the one renderer behind --json and /api. */
#include "json.h"

#include "u128.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

const msgpack_object *json_map_get(const msgpack_object *map, const char *key)
{
    if (!map || map->type != MSGPACK_OBJECT_MAP)
        return NULL;
    size_t len = strlen(key);
    for (uint32_t i = 0; i < map->via.map.size; i++) {
        const msgpack_object *k = &map->via.map.ptr[i].key;
        if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == len && memcmp(k->via.str.ptr, key, len) == 0)
            return &map->via.map.ptr[i].val;
    }
    return NULL;
}

int json_u128(const msgpack_object *o, unsigned __int128 *v)
{
    if (!o)
        return -1;
    if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
        *v = o->via.u64;
        return 0;
    }
    if (o->type == MSGPACK_OBJECT_EXT && o->via.ext.type == JSON_EXT_U128 && o->via.ext.size == 16) {
        unsigned __int128 x = 0;
        for (int i = 15; i >= 0; i--)
            x = (x << 8) | (uint8_t)o->via.ext.ptr[i];
        *v = x;
        return 0;
    }
    return -1;
}

/* The shortest %.Ng (15..17) that reads back as the same double. */
static const char *double_str(double d, char *buf, size_t len)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, len, "%.*g", prec, d);
        if (strtod(buf, NULL) == d)
            break;
    }
    return buf;
}

/* Any number (int, u128, float) as text; NULL if o is not a number. */
const char *json_num_str(const msgpack_object *o, char *buf, size_t len)
{
    unsigned __int128 v;
    if (!o || len < 40)   /* 40: the digits of 2^128-1 and a NUL */
        return NULL;
    if (json_u128(o, &v) == 0)
        return u128_to_str(v, buf);
    if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
        snprintf(buf, len, "%" PRId64, o->via.i64);
        return buf;
    }
    if (o->type == MSGPACK_OBJECT_FLOAT32 || o->type == MSGPACK_OBJECT_FLOAT64)
        return double_str(o->via.f64, buf, len);
    return NULL;
}

static void json_string(FILE *f, const char *s, size_t len)
{
    fputc('"', f);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        case '\b': fputs("\\b", f); break;
        case '\f': fputs("\\f", f); break;
        default:
            if (c < 0x20 || c == 0x7f) fprintf(f, "\\u%04x", c);
            else fputc(c, f);
        }
    }
    fputc('"', f);
}

static void json_emit(FILE *f, const msgpack_object *o);

static void json_map(FILE *f, const msgpack_object *o)
{
    fputc('{', f);
    for (uint32_t i = 0; i < o->via.map.size; i++) {
        const msgpack_object_kv *kv = &o->via.map.ptr[i];
        if (i) fputc(',', f);
        if (kv->key.type == MSGPACK_OBJECT_STR) {
            json_string(f, kv->key.via.str.ptr, kv->key.via.str.size);
        } else {
            /* JSON keys are strings: print the key's own JSON inside quotes. */
            char *txt = NULL;
            size_t len = 0;
            FILE *m = open_memstream(&txt, &len);
            if (m) {
                json_emit(m, &kv->key);
                fclose(m);
                json_string(f, txt, len);
            } else {
                json_string(f, "?", 1);
            }
            free(txt);
        }
        fputc(':', f);
        json_emit(f, &kv->val);
    }
    fputc('}', f);
}

static void json_emit(FILE *f, const msgpack_object *o)
{
    char buf[64];
    switch (o->type) {
    case MSGPACK_OBJECT_NIL: fputs("null", f); break;
    case MSGPACK_OBJECT_BOOLEAN: fputs(o->via.boolean ? "true" : "false", f); break;
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        fputs(json_num_str(o, buf, sizeof buf), f);
        break;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        if (isfinite(o->via.f64)) fputs(double_str(o->via.f64, buf, sizeof buf), f);
        else fputs("null", f);   /* JSON has no inf/nan */
        break;
    case MSGPACK_OBJECT_STR: json_string(f, o->via.str.ptr, o->via.str.size); break;
    case MSGPACK_OBJECT_BIN:
        fputc('"', f);
        for (uint32_t i = 0; i < o->via.bin.size; i++)
            fprintf(f, "%02x", (uint8_t)o->via.bin.ptr[i]);
        fputc('"', f);
        break;
    case MSGPACK_OBJECT_ARRAY:
        fputc('[', f);
        for (uint32_t i = 0; i < o->via.array.size; i++) {
            if (i) fputc(',', f);
            json_emit(f, &o->via.array.ptr[i]);
        }
        fputc(']', f);
        break;
    case MSGPACK_OBJECT_MAP: json_map(f, o); break;
    case MSGPACK_OBJECT_EXT: {
        const char *s = json_num_str(o, buf, sizeof buf);
        fputs(s ? s : "null", f);   /* an extension we do not know has no JSON form */
        break;
    }
    default: fputs("null", f); break;
    }
}

void json_write(FILE *f, const msgpack_object *o)
{
    json_emit(f, o);
}
