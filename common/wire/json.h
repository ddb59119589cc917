/*
 * msgpack documents as JSON: what `--json` prints and what the broker's /api serves,
 * one renderer for both so a script sees the same bytes either way.
 *
 * 128-bit numbers travel as msgpack EXT type JSON_EXT_U128 with 16 bytes little-endian
 * (broker/store/query.h names the same type QUERY_EXT_U128; cli/render.c checks
 * that the two agree). They print as digits. Floats round-trip (shortest of
 * %.15g..%.17g that reads back equal; inf/nan -> null); strings are escaped; bin prints
 * as a hex string; map keys that are not strings print as their JSON text in quotes.
 */
#ifndef NQ_JSON_H
#define NQ_JSON_H

#include <stdio.h>
#include <msgpack.h>

#define JSON_EXT_U128 1

/* The value of key in a msgpack map, or NULL (not a map, or no such string key). */
const msgpack_object *json_map_get(const msgpack_object *map, const char *key);

/* Compact JSON of o, no newline. */
void json_write(FILE *f, const msgpack_object *o);

/* A uint or an EXT JSON_EXT_U128 (16 bytes LE) -> *v, 0; else -1 (NULL o too). */
int json_u128(const msgpack_object *o, unsigned __int128 *v);

/* Any number (int, u128, float) as text into buf (len >= 40); NULL if o is not a number. */
const char *json_num_str(const msgpack_object *o, char *buf, size_t len);

#endif
