/* Storage of verified solve solutions: content hash, inline or file. */
#include "solstore.h"
#include "errf.h"
#include "solfile.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Columns are packed this many at a time, so hashing a 10^9-queen solution needs no 4 GB copy. */
#define HASH_CHUNK 1024

void solstore_hash(const uint32_t *cols, uint64_t n, char out[NQ_SOL_HASH_HEX + 1])
{
    crypto_generichash_state st;
    uint8_t buf[4 * HASH_CHUNK], digest[NQ_SOL_HASH_BYTES];
    crypto_generichash_init(&st, NULL, 0, NQ_SOL_HASH_BYTES);
    for (int b = 0; b < 8; b++)
        buf[b] = (uint8_t)(n >> (8 * b));
    crypto_generichash_update(&st, buf, 8);
    for (uint64_t i = 0; i < n;) {
        size_t k = 0;
        for (; k < HASH_CHUNK && i < n; k++, i++) {
            buf[4 * k] = (uint8_t)cols[i];
            buf[4 * k + 1] = (uint8_t)(cols[i] >> 8);
            buf[4 * k + 2] = (uint8_t)(cols[i] >> 16);
            buf[4 * k + 3] = (uint8_t)(cols[i] >> 24);
        }
        crypto_generichash_update(&st, buf, 4 * k);
    }
    crypto_generichash_final(&st, digest, sizeof digest);
    sodium_bin2hex(out, NQ_SOL_HASH_HEX + 1, digest, sizeof digest);
}

uint8_t *solstore_pack(const uint32_t *cols, uint64_t n)
{
    uint8_t *p = malloc(n > 0 ? n * 4 : 1);
    if (!p)
        return NULL;
    for (uint64_t i = 0; i < n; i++) {
        p[4 * i] = (uint8_t)cols[i];
        p[4 * i + 1] = (uint8_t)(cols[i] >> 8);
        p[4 * i + 2] = (uint8_t)(cols[i] >> 16);
        p[4 * i + 3] = (uint8_t)(cols[i] >> 24);
    }
    return p;
}

int solstore_save(const char *db_path, const uint32_t *cols, uint64_t n, char *hash, size_t hashlen, char *path,
                  size_t pathlen, char *why, size_t whylen)
{
    char h[NQ_SOL_HASH_HEX + 1], dir[4096], full[4400];
    solstore_hash(cols, n, h);
    snprintf(hash, hashlen, "%s", h);
    path[0] = 0;
    if (n <= NQ_SOL_INLINE_MAX)
        return 0;
    solstore_dir(db_path, dir, sizeof dir);
    solstore_file_name(db_path, h, path, pathlen);
    solstore_files_dir(db_path, full, sizeof full);
    if (mkdir(full, 0755) != 0 && errno != EEXIST)
        return nq_errf(why, whylen, "cannot create %s: %s", full, strerror(errno));
    snprintf(full, sizeof full, "%s/%s", dir, path);
    if (access(full, F_OK) == 0)
        return 0;                       /* the same solution, already stored */
    char tmp[4500];
    snprintf(tmp, sizeof tmp, "%s.tmp", full);
    if (solfile_write(tmp, cols, n, 1, why, whylen) != 0)
        return -1;
    if (rename(tmp, full) != 0)         /* atomic: a crash never leaves half a file under the hash */
        return nq_errf(why, whylen, "cannot store %s: %s", full, strerror(errno));
    return 0;
}
