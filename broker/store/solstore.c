/* Storage of verified solve solutions: content hash, inline or file. */
#include "solstore.h"
#include "errf.h"
#include "rng.h"
#include "solfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Two independent 64-bit lanes of a multiply-xorshift hash: not cryptographic, but it
   only has to tell solutions of one job apart, and 128 bits make collisions moot. */
void solstore_hash(const uint32_t *cols, uint64_t n, char out[33])
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
    snprintf(out, 33, "%016llx%016llx", (unsigned long long)h1, (unsigned long long)h2);
}

void solstore_dir(const char *db_path, char *out, size_t outlen)
{
    const char *slash = strrchr(db_path, '/');
    if (!slash)
        snprintf(out, outlen, ".");
    else if (slash == db_path)
        snprintf(out, outlen, "/");
    else
        snprintf(out, outlen, "%.*s", (int)(slash - db_path), db_path);
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

int solstore_save(const char *db_path, const uint32_t *cols, uint64_t n, char *hash, size_t hashlen,
                  char *path, size_t pathlen, char *why, size_t whylen)
{
    char h[33], dir[4096], full[4400];
    solstore_hash(cols, n, h);
    snprintf(hash, hashlen, "%s", h);
    path[0] = 0;
    if (n <= NQ_SOL_INLINE_MAX)
        return 0;
    const char *base = strrchr(db_path, '/');
    base = base ? base + 1 : db_path;
    solstore_dir(db_path, dir, sizeof dir);
    snprintf(path, pathlen, "%s.solutions/%s.nqsol", base, h);
    snprintf(full, sizeof full, "%s/%s.solutions", dir, base);
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
