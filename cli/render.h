/*
 * Printing query documents (broker/store/query.h): as JSON for --json, as human text
 * otherwise, and export pages as CSV or a streamed JSON array.
 *
 * The human renderers never trust a document: a key that is missing or of an
 * unexpected type (a document from an older or newer broker) prints as "-";
 * they never crash on it.
 */
#ifndef NQ_RENDER_H
#define NQ_RENDER_H

#include <stdio.h>
#include <msgpack.h>

/* Compact JSON on one line plus '\n'. 128-bit numbers (EXT 1) print as digits;
   floats round-trip (shortest of %.15g..%.17g that reads back equal; inf/nan -> null);
   strings are escaped; bin prints as a hex string; map keys that are not strings
   print as their JSON text in quotes. */
void render_json(FILE *f, const msgpack_object *o);

void render_job(FILE *f, const msgpack_object *job);       /* a few aligned lines: progress, rate, ETA */
void render_list(FILE *f, const msgpack_object *arr);      /* table: id kind n state done/total total */
void render_workers(FILE *f, const msgpack_object *arr);   /* table, one worker per line */
void render_result(FILE *f, const msgpack_object *res);    /* the answer first, then the details */

/*
 * One export page {columns, rows, next}. csv: the header on the first page,
 * then one line per row (RFC 4180 quoting; an array cell spreads over one CSV
 * column per value: an enumerate job's cols are row0, row1, ...). json: one array
 * streamed across pages, one object per row keyed by column name: '[' on the first
 * page, ']' on the last.
 * first_page means nothing of this export was printed before.
 * Returns the number of rows printed, or -1 if the page is malformed.
 */
int render_export(FILE *f, const msgpack_object *page, int csv, int first_page, int last_page);

/* The value of key in a map, or NULL (not a map, or no such string key). */
const msgpack_object *render_get(const msgpack_object *map, const char *key);

/* A uint or an EXT 1 (16 bytes LE) -> *v, 0; else -1. */
/* A span of time for people, in the unit that reads best: "45.2 seconds", "3.5 minutes",
   "16.2 hours", "12 days", "384 years". */
const char *render_span(double seconds, char *buf, size_t len);
int render_u128(const msgpack_object *o, unsigned __int128 *v);

#endif
