/*
 * `nq export JOB --manifest FILE --db PATH`: every subtotal of a done count job with its
 * hash tree (common/kernel/manifest.h), and the root kept in the store for `nq result`.
 *
 * It runs on the DB file, like `nq check`, and the broker may be running: the rows are read
 * in one read transaction, the root written in one short one of its own. The file appears
 * complete or not at all, and only when the command succeeds: it is written beside FILE under
 * a temporary name and flushed to disk, then the root is kept in the store, then the file is
 * renamed over FILE. A root that cannot be kept (the broker holding the DB's write lock past
 * the busy timeout) takes the temporary file with it and exits 3: an export that says it failed
 * leaves no manifest whose root the store does not show. The root is
 * a function of the job's rows, so one kept for a file whose rename then fails is still true.
 */
#include "export_manifest.h"
#include "cli.h"
#include "store.h"
#include "store_manifest.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WRITE_BUFFER (1u << 20)   /* 10^7 lines of ~70 bytes: fewer, larger writes */

/* The manifest into a new temporary file beside `path` (same folder: the rename is atomic),
   flushed to disk; *tmp gets its name (malloc'd), NULL when none is left. */
static int write_temp(nq_store_t *st, uint64_t job, const char *path, uint8_t root[NQ_MERKLE_BYTES],
                      uint64_t *shards, char **tmp, char *err, size_t errlen)
{
    char *t;
    int fd = cli_temp_beside(path, &t);
    *tmp = NULL;
    FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd), unlink(t);
        free(t);
        return -2;
    }
    *tmp = t;
    setvbuf(f, NULL, _IOFBF, WRITE_BUFFER);
    int rc = store_manifest_write(store_db(st), job, f, root, shards, err, errlen);
    if (rc == 0 && (fflush(f) != 0 || fsync(fileno(f)) != 0))
        rc = (snprintf(err, errlen, "%s: %s", path, strerror(errno)), -2);
    if (fclose(f) != 0 && rc == 0)
        rc = (snprintf(err, errlen, "%s: %s", path, strerror(errno)), -2);
    return rc;
}

/* Written, root kept, renamed: in that order, and the temporary file gone on any failure. */
static int write_file(nq_store_t *st, uint64_t job, const char *path, uint8_t root[NQ_MERKLE_BYTES],
                      uint64_t *shards, char was[NQ_MERKLE_HEX + 1], char *err, size_t errlen)
{
    char *tmp;
    int rc = write_temp(st, job, path, root, shards, &tmp, err, errlen);
    if (rc == 0 && store_manifest_keep(st, job, root, *shards, was, err, errlen) != 0)
        rc = -2;
    if (rc == 0 && rename(tmp, path) != 0)
        rc = (snprintf(err, errlen, "%s: %s", path, strerror(errno)), -2);
    if (rc != 0 && tmp)
        unlink(tmp);
    free(tmp);
    return rc;
}

int export_manifest(const nq_cmd_args_t *a)
{
    char err[512], was[NQ_MERKLE_HEX + 1], hex[NQ_MERKLE_HEX + 1];
    uint8_t root[NQ_MERKLE_BYTES];
    uint64_t shards = 0;
    struct stat sb;
    if (!a->client.db)
        return cli_usage_error("export", "--manifest reads the DB file: give --db PATH (the broker may be running)");
    if (a->format || a->unique || a->client.json)
        return cli_usage_error("export", "--manifest takes no --format, --unique or --json");
    if (stat(a->client.db, &sb) != 0)      /* the store would create a missing one */
        return cli_error("export", "%s: %s", a->client.db, strerror(errno));
    nq_store_t *st = store_open(a->client.db, 0, err, sizeof err);
    if (!st)
        return cli_error("export", "%s", err);
    int rc = write_file(st, a->req.job, a->manifest, root, &shards, was, err, sizeof err);
    store_destroy(&st);
    if (rc == -1) {               /* refused as asked: no such job, not count, not done */
        fprintf(stderr, "nq export: %s\n", err);
        return NQ_EXIT_NO;
    }
    if (rc != 0)
        return cli_error("export", "%s", err);
    merkle_hex(root, hex);
    if (was[0] && strcmp(was, hex) != 0)
        fprintf(stderr, "nq export: the root kept before was %s: the job's rows changed since"
                        " (a later confirming result?)\n", was);
    printf("job %llu: %llu shards, root %s, written to %s\n", (unsigned long long)a->req.job,
           (unsigned long long)shards, hex, a->manifest);
    return NQ_EXIT_OK;
}
