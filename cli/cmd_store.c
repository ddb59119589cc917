/*
 * The store's own commands, run on the DB file (no broker needed):
 *   nq check [JOB] --db PATH   the auditor's check: every page, every job's running aggregates
 *                              (004_campaign.sql) recomputed from its rows, and every stored
 *                              solution (inline or in DB.solutions/) against its hash
 *   nq backup --db PATH OUT    a consistent copy while the broker keeps writing: OUT and, when
 *                              the DB holds solution files, OUT.solutions/
 */
#include "cli.h"
#include "errf.h"
#include "solstore.h"
#include "store.h"
#include "store_check.h"
#include "u128.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* --db PATH and at most `maxpos` positional arguments; -1 after --help. */
static int store_args(const char *cmd, int argc, char **argv, const char **db, const char **pos, int maxpos,
                      int *npos)
{
    static const struct option longopts[] = { { "db", required_argument, NULL, 'd' },
                                               { "help", no_argument, NULL, 'h' }, { 0, 0, 0, 0 } };
    int c;
    *db = NULL;
    *npos = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (c == 'd')
            *db = optarg;
        else if (c == 'h')
            return cli_help(cmd), -1;
        else
            return cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
    }
    for (; optind < argc; optind++) {
        if (*npos == maxpos)
            return cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
        pos[(*npos)++] = argv[optind];
    }
    if (!*db)
        return cli_usage_error(cmd, "--db PATH is required");
    return 0;
}

/* Every shard row of the job as the broker would read it, and within the job's shards (the broker
   reads only the open ones, by state: a row in a state nq has no name for is found here). 0, or -1
   with the first complaint in err; SQLite's error: -2. */
static int check_shard_rows(sqlite3 *db, const nq_job_row_t *job, char *err, size_t errlen)
{
    sqlite3_stmt *q;
    const char *sql = "SELECT " STORE_SHARD_COLUMNS " FROM shards WHERE job = ?1 ORDER BY idx";
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
        return -2;
    sqlite3_bind_int64(q, 1, (sqlite3_int64)job->id);
    int rc, bad = 0;
    nq_shard_row_t r;
    while (!bad && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        bad = store_shard_row_read(q, &r, err, errlen) != 0 ||
              store_shard_in_job(&r, job->shards_total, err, errlen) != 0;
    }
    sqlite3_finalize(q);
    return bad ? -1 : rc == SQLITE_DONE ? 0 : -2;
}

/* The job's row and its shard rows as the broker reads them (store_check.h), and a count or
   enumerate job's list made again, whose count must be the row's: 0, 1 refused (printed), -1 DB
   error. */
static int check_row(sqlite3 *db, uint64_t id, nq_job_row_t *job)
{
    char err[400];
    int rc = store_job_read(db, id, job, err, sizeof err);
    if (rc == -2 || rc == 1)
        return -1;
    nq_shards_t *list = NULL;
    if (rc == 0 && job->spec.kind != NQ_KIND_SOLVE &&
        !(list = store_job_list(job, err, sizeof err)))
        rc = -1;
    shards_destroy(&list);
    if (rc == 0 && (rc = check_shard_rows(db, job, err, sizeof err)) == -2)
        return -1;
    if (rc == 0)
        return 0;
    printf("%s\n", err);
    return 1;
}

/* One job: 0 its row agrees with its shards, 1 it does not (printed), -1 DB error. */
static int check_job(sqlite3 *db, uint64_t id)
{
    nq_job_totals_t row, rows;
    nq_job_row_t job;
    char a[NQ_U128_GROUPED], b[NQ_U128_GROUPED], g[NQ_U128_GROUPED];
    memset(&row, 0, sizeof row);
    memset(&rows, 0, sizeof rows);
    int refused = check_row(db, id, &job);
    if (refused != 0)
        return refused;                 /* nothing below may trust its counts */
    row.shards_failed = job.shards_failed;
    row.shards_conflict = job.shards_conflict;
    if (store_job_sums(db, id, &row) != SQLITE_DONE || store_job_recount(db, id, &rows) != SQLITE_DONE)
        return -1;
    int bad = 0;
#define SAME(what, x, y) \
    if ((x) != (y)) { \
        printf("job %llu: %s: job row %s, its shards %s\n", (unsigned long long)id, what, \
               u128_to_str((x), a), u128_to_str((y), b)); \
        bad = 1; \
    }
    SAME("done shards", row.shards_done, rows.shards_done)
    SAME("failed shards", row.shards_failed, rows.shards_failed)
    SAME("conflict shards", row.shards_conflict, rows.shards_conflict)
    SAME("total", row.total, rows.total)
    SAME("unique", row.unique, rows.unique)
    SAME("nodes", row.nodes, rows.nodes)
    SAME("fast GPU nodes", row.fast_nodes, rows.fast_nodes)
    SAME("shards with fast GPU nodes", row.fast_shards, rows.fast_shards)
    SAME("residue sum mod 13", row.res13, rows.res13)
    SAME("residue sum mod 15", row.res15, rows.res15)
#undef SAME
    if (fabs(row.core_seconds - rows.core_seconds) > 1e-6 * (1 + rows.core_seconds)) {
        printf("job %llu: core seconds: job row %.3f, its shards %.3f\n", (unsigned long long)id, row.core_seconds,
               rows.core_seconds);
        bad = 1;
    }
    if (rows.residues_bad && job.spec.kind == NQ_KIND_COUNT) {   /* only a count's shards have residues */
        printf("job %llu: %llu done shard(s) whose residues disagree with their total\n", (unsigned long long)id,
               (unsigned long long)rows.residues_bad);
        bad = 1;
    }
    if (!bad)
        printf("job %llu: ok (%s done shards, total %s)\n", (unsigned long long)id,
               u128_group(rows.shards_done, g), u128_group(rows.total, a));
    return bad;
}

/* Every stored solution of the job (0: of every job) against its hash: 0 all whole, 1 one is
   missing or damaged (each printed), -1 DB error. */
static int check_solutions(sqlite3 *db, const char *db_path, uint64_t only)
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(db, "SELECT job, hash, n, cols, path FROM solutions WHERE ?1 = 0 OR job = ?1"
                           " ORDER BY job, found_at, hash", -1, &q, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(q, 1, (sqlite3_int64)only);
    uint64_t whole = 0, files = 0;
    int bad = 0, rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *hash = (const char *)sqlite3_column_text(q, 1);
        const char *path = (const char *)sqlite3_column_text(q, 4);
        const void *blob = sqlite3_column_blob(q, 3);
        char file[4400], why[600];
        int in_file = !blob && path && solstore_row_file(db_path, path, file, sizeof file) == 0;
        size_t len = (size_t)sqlite3_column_bytes(q, 3);
        if (solstore_verify(hash ? hash : "", (uint64_t)sqlite3_column_int64(q, 2), blob, len,
                            in_file ? file : NULL, why, sizeof why) != 0) {
            printf("job %lld: solution %s: %s\n", (long long)sqlite3_column_int64(q, 0), hash ? hash : "?",
                   why);
            bad = 1;
        } else {
            whole++;
            files += (uint64_t)in_file;
        }
    }
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE)
        return -1;
    if (whole)
        printf("%llu stored solution(s) match their hashes (%llu in files)\n", (unsigned long long)whole,
               (unsigned long long)files);
    return bad;
}

int cmd_check(int argc, char **argv)
{
    const char *path, *pos[1];
    char err[512];
    int npos, rc = store_args("check", argc, argv, &path, pos, 1, &npos);
    if (rc)
        return rc < 0 ? NQ_EXIT_OK : rc;
    uint64_t only = 0;
    if (npos && (rc = cli_parse_u64("check", "JOB", pos[0], 1, INT64_MAX, &only)))
        return rc;
    struct stat sb;
    if (stat(path, &sb) != 0)
        return cli_error("check", "%s: %s", path, strerror(errno));
    if (store_check_file(path, err, sizeof err) != 0) {
        printf("%s\n", err);
        return NQ_EXIT_NO;
    }
    nq_store_t *st = store_open(path, 1, err, sizeof err);
    if (!st)
        return cli_error("check", "%s", err);
    sqlite3 *db = store_db(st);
    sqlite3_stmt *q;
    int bad = 0, found = 0;
    rc = sqlite3_prepare_v2(db, "SELECT id FROM jobs WHERE ?1 = 0 OR id = ?1 ORDER BY id", -1, &q, NULL);
    if (rc == SQLITE_OK && sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK) {   /* one snapshot */
        sqlite3_bind_int64(q, 1, (sqlite3_int64)only);
        while (bad >= 0 && sqlite3_step(q) == SQLITE_ROW) {
            int r = check_job(db, (uint64_t)sqlite3_column_int64(q, 0));
            bad = r < 0 ? -1 : bad | r;
            found++;
        }
        if (bad >= 0 && (!only || found)) {
            int r = check_solutions(db, path, only);
            bad = r < 0 ? -1 : bad | r;
        }
        sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    }
    sqlite3_finalize(q);
    if (bad < 0 || rc != SQLITE_OK)
        rc = cli_error("check", "%s: %s", path, sqlite3_errmsg(db));
    else if (only && !found)
        rc = cli_usage_error("check", "no job %llu", (unsigned long long)only);
    else
        rc = bad ? NQ_EXIT_NO : NQ_EXIT_OK;
    store_destroy(&st);
    return rc;
}

/* link never replaces a file; a file system without hard links (FAT, some network mounts) gets
   a rename, which OUT's absence was checked for when the command began. */
static int backup_place(const char *tmp, const char *out)
{
    if (link(tmp, out) == 0)
        return 0;
    if (errno != EPERM && errno != ENOTSUP && errno != EOPNOTSUPP)
        return -1;
    return rename(tmp, out);
}

/* The solution files the copy at tmp_db names, into OUT.solutions/: made under a temporary name
   and renamed whole. *placed gets that folder when there was a file to copy. 0, or -1 with why. */
static int backup_files(const char *src_db, const char *tmp_db, const char *out, char **placed,
                        uint64_t *files, uint64_t *bytes, char *err, size_t errlen)
{
    sqlite3 *copy = NULL;
    size_t len = strlen(out);
    char *tmp = malloc(len + 32), *final = malloc(len + 16);
    int rc = -1;
    *placed = NULL;
    if (!tmp || !final)
        nq_errf(err, errlen, "out of memory");
    else if (sqlite3_open_v2(tmp_db, &copy, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
        nq_errf(err, errlen, "the copy: %s", sqlite3_errmsg(copy));
    else if (snprintf(tmp, len + 32, "%s.solutions.XXXXXX", out) < 0 || !mkdtemp(tmp))
        nq_errf(err, errlen, "%s: %s", tmp, strerror(errno));
    else if (solstore_copy(src_db, copy, tmp, files, bytes, err, errlen) != 0)
        solstore_copy_remove(tmp);
    else if (*files == 0)
        rc = 0, rmdir(tmp);
    else if (snprintf(final, len + 16, "%s.solutions", out) < 0 || rename(tmp, final) != 0)
        nq_errf(err, errlen, "%s: %s", final, strerror(errno)), solstore_copy_remove(tmp);
    else
        rc = 0, *placed = final, final = NULL;
    sqlite3_close(copy);
    free(tmp);
    free(final);
    return rc;
}

/*
 * VACUUM INTO runs in one read transaction: a consistent snapshot, and in WAL mode the broker's
 * writes go on meanwhile. The copy goes to a new temporary file beside OUT (VACUUM INTO takes
 * an empty file), is page-checked, gets the solution files its rows name (OUT.solutions/, each
 * verified), and only then is linked to OUT: a backup that fails (a full disk, a copy that does
 * not check) leaves nothing behind, where it once left a part of a copy under the name a restore
 * would use, and link never replaces a file that appeared meanwhile.
 */
static int backup_copy(nq_store_t *st, const char *out, char *err, size_t errlen)
{
    char *tmp, *placed = NULL, why[512];
    sqlite3_stmt *q = NULL;
    uint64_t files = 0, bytes = 0;
    struct stat sb;
    int rc = -1, fd = cli_temp_beside(out, &tmp);
    if (fd < 0)
        return nq_errf(err, errlen, "%s: %s", out, strerror(errno));
    close(fd);
    if (sqlite3_prepare_v2(store_db(st), "VACUUM INTO ?1", -1, &q, NULL) != SQLITE_OK ||
        sqlite3_bind_text(q, 1, tmp, -1, SQLITE_STATIC) != SQLITE_OK || sqlite3_step(q) != SQLITE_DONE)
        nq_errf(err, errlen, "%s -> %s: %s", store_path(st), out, sqlite3_errmsg(store_db(st)));
    else if (store_check_file(tmp, why, sizeof why) != 0)
        nq_errf(err, errlen, "the copy does not check: %s", why);
    else if (backup_files(store_path(st), tmp, out, &placed, &files, &bytes, err, errlen) != 0)
        ;
    else if (backup_place(tmp, out) != 0)
        nq_errf(err, errlen, "%s: %s", out, errno == EEXIST ? "exists: a backup never overwrites a file"
                                                           : strerror(errno));
    else
        rc = 0;
    if (rc == 0) {
        printf("%s: %lld bytes, checked\n", out, stat(out, &sb) == 0 ? (long long)sb.st_size : -1LL);
        if (placed)
            printf("%s/: %llu solution file(s), %llu bytes, each checked against its hash\n", placed,
                   (unsigned long long)files, (unsigned long long)bytes);
    } else if (placed) {
        solstore_copy_remove(placed);
    }
    sqlite3_finalize(q);
    unlink(tmp);
    free(tmp);
    free(placed);
    return rc;
}

int cmd_backup(int argc, char **argv)
{
    const char *path, *pos[1];
    char err[512];
    struct stat sb;
    int npos, rc = store_args("backup", argc, argv, &path, pos, 1, &npos);
    if (rc)
        return rc < 0 ? NQ_EXIT_OK : rc;
    if (npos != 1)
        return cli_usage_error("backup", "expected the output file: nq backup --db PATH OUT");
    char files[4096];
    solstore_files_dir(pos[0], files, sizeof files);
    if (stat(pos[0], &sb) == 0 || stat(files, &sb) == 0)
        return cli_usage_error("backup", "%s exists: a backup never overwrites a file",
                               stat(pos[0], &sb) == 0 ? pos[0] : files);
    nq_store_t *st = store_open(path, 1, err, sizeof err);
    if (!st)
        return cli_error("backup", "%s", err);
    rc = backup_copy(st, pos[0], err, sizeof err) != 0 ? cli_error("backup", "%s", err) : NQ_EXIT_OK;
    store_destroy(&st);
    return rc;
}
