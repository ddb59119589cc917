/* Whether a stored solution is whole: its inline blob or its file still hashes to its row's hash. */
#include "solstore.h"
#include "errf.h"
#include "solfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The row's permutation: its inline blob (uint32 LE), or the file. 0, or 1 with why. */
static int verify_load(uint64_t n, const void *blob, size_t bloblen, const char *file, uint32_t **cols,
                       char *why, size_t whylen)
{
    if (blob) {
        if (bloblen / 4 != n || bloblen % 4 != 0)
            return nq_errf(why, whylen, "damaged: %zu bytes inline for n=%llu", bloblen,
                           (unsigned long long)n), 1;
        if (!(*cols = malloc(n * sizeof **cols)))
            return nq_errf(why, whylen, "out of memory for n=%llu", (unsigned long long)n), 1;
        const uint8_t *p = blob;
        for (uint64_t r = 0; r < n; r++, p += 4)
            (*cols)[r] = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        return 0;
    }
    if (!file)
        return nq_errf(why, whylen, "damaged: neither inline nor in a file"), 1;
    uint64_t got = 0;
    char e[256];
    int rc = solfile_read(file, cols, &got, e, sizeof e);
    if (rc == SOLFILE_EIO && errno == ENOENT)
        return nq_errf(why, whylen, "missing: %s", file), 1;
    if (rc != SOLFILE_OK)
        return nq_errf(why, whylen, "damaged: %s", e), 1;
    if (got != n) {
        free(*cols);
        return nq_errf(why, whylen, "damaged: %s holds n=%llu, the DB says n=%llu", file,
                       (unsigned long long)got, (unsigned long long)n), 1;
    }
    return 0;
}

int solstore_verify(const char *hash, uint64_t n, const void *blob, size_t bloblen, const char *file,
                    char *why, size_t whylen)
{
    uint32_t *cols = NULL;
    char h[NQ_SOL_HASH_HEX + 1];
    size_t len = strlen(hash);
    if (len != NQ_SOL_HASH_HEX)
        return nq_errf(why, whylen, "damaged: the hash has %zu digits", len), 1;
    if (verify_load(n, blob, bloblen, file, &cols, why, whylen) != 0)
        return 1;
    solstore_hash(cols, n, h);
    free(cols);
    if (strcmp(h, hash) != 0)
        return nq_errf(why, whylen, "damaged: %s holds a permutation whose hash is %s",
                       file ? file : "the row", h), 1;
    return 0;
}
