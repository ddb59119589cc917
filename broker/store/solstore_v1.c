/*
 * Solutions stored under nq's first solution hash. It printed 128 bits, but all of them came
 * from one 64-bit value, so two solutions of a long study could share a name; new solutions
 * get BLAKE2b (solstore.c). Rows and files written under the old hash stay as they are and
 * are read by their stored path. A job that was running across the change may find again
 * a solution it holds under the old hash: that one keeps the old hash, so the job's
 * (job, hash) key still counts it once (a solve job stops after K distinct solutions).
 */
#include "solstore.h"
#include "errf.h"
#include "rng.h"
#include "solfile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The function as it was, byte for byte: two 64-bit lanes of a multiply-xorshift hash, folded
   into one 64-bit value and widened again by splitmix64. */
void solstore_hash_v1(const uint32_t *cols, uint64_t n, char out[NQ_SOL_HASH_V1_HEX + 1])
{
    uint64_t h1 = 0x243f6a8885a308d3ull ^ n, h2 = 0x13198a2e03707344ull ^ (n * 0x9e3779b97f4a7c15ull);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t x = cols[i] + (i << 32);
        h1 = (h1 ^ rng_splitmix64(&x)) * 0xbf58476d1ce4e5b9ull;
        h2 = (h2 + rng_splitmix64(&x)) * 0x94d049bb133111ebull;
        h1 ^= h1 >> 29;
        h2 ^= h2 >> 31;
    }
    uint64_t s = h1 ^ h2;
    h1 = rng_splitmix64(&s);
    h2 = rng_splitmix64(&s);
    snprintf(out, NQ_SOL_HASH_V1_HEX + 1, "%016llx%016llx", (unsigned long long)h1, (unsigned long long)h2);
}

/* The inline blob (uint32 LE) holds exactly cols. */
static int blob_is(const uint8_t *b, size_t len, const uint32_t *cols, uint64_t n)
{
    if (len / 4 != n || len % 4 != 0)
        return 0;
    for (uint64_t i = 0; i < n; i++, b += 4)
        if (((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24) != cols[i])
            return 0;
    return 1;
}

/* The row's file holds exactly cols. Only the name solstore_save gave it under the v1 hash is
   followed (the row is read from a file on disk, so its path is not trusted). */
static int file_is(const char *db_path, const char *v1, const char *row_path,
                   const uint32_t *cols, uint64_t n)
{
    char want[600], dir[4096], full[4800], err[256];
    solstore_file_name(db_path, v1, want, sizeof want);
    if (strcmp(row_path, want) != 0)
        return 0;
    solstore_dir(db_path, dir, sizeof dir);
    snprintf(full, sizeof full, "%s/%s", dir, want);
    uint32_t *have = NULL;
    uint64_t hn = 0;
    if (solfile_read(full, &have, &hn, err, sizeof err) != SOLFILE_OK)
        return 0;                       /* gone or damaged: the solution is stored afresh */
    int same = hn == n && memcmp(have, cols, n * sizeof *cols) == 0;
    free(have);
    return same;
}

int solstore_v1_find(sqlite3 *db, const char *db_path, uint64_t job, const uint32_t *cols, uint64_t n,
                     char *hash, size_t hashlen, char *path, size_t pathlen, char *why, size_t whylen)
{
    char v1[NQ_SOL_HASH_V1_HEX + 1];
    sqlite3_stmt *st = NULL;
    if (job > (uint64_t)INT64_MAX)
        return 0;
    if (sqlite3_prepare_v2(db, "SELECT n, cols, path FROM solutions WHERE job = ?1 AND hash = ?2",
                           -1, &st, NULL) != SQLITE_OK)
        return nq_errf(why, whylen, "solutions: %s", sqlite3_errmsg(db));
    solstore_hash_v1(cols, n, v1);
    sqlite3_bind_int64(st, 1, (sqlite3_int64)job);
    sqlite3_bind_text(st, 2, v1, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st), found = 0;
    if (rc == SQLITE_ROW && sqlite3_column_int64(st, 0) == (sqlite3_int64)n) {
        const void *blob = sqlite3_column_blob(st, 1);
        const unsigned char *p = sqlite3_column_text(st, 2);
        if (blob)
            found = blob_is(blob, (size_t)sqlite3_column_bytes(st, 1), cols, n);
        else if (p)
            found = file_is(db_path, v1, (const char *)p, cols, n);
        if (found) {
            snprintf(hash, hashlen, "%s", v1);
            snprintf(path, pathlen, "%s", blob ? "" : (const char *)p);
        }
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        found = nq_errf(why, whylen, "solutions: %s", sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return found;
}
