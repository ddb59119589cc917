/*
 * A backup's copy of a DB's solution files: a solve job's answer may live in a file beside the
 * DB (solstore.h), which a copy of the DB alone loses.
 */
#include "solstore.h"
#include "errf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* A byte-for-byte copy; O_EXCL, so a name two jobs share is copied once (1). 0, 1, or -1 with why. */
static int copy_file(const char *from, const char *to, uint64_t *bytes, char *why, size_t whylen)
{
    int in = open(from, O_RDONLY | O_CLOEXEC), out = -1, rc = -1;
    if (in < 0)
        return nq_errf(why, whylen, "%s: %s", from, strerror(errno));
    out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (out < 0) {
        rc = errno == EEXIST ? 1 : nq_errf(why, whylen, "%s: %s", to, strerror(errno));
        close(in);
        return rc;
    }
    static char buf[1 << 20];           /* one backup at a time: the CLI's */
    ssize_t got;
    errno = 0;
    while ((got = read(in, buf, sizeof buf)) > 0 && write(out, buf, (size_t)got) == got)
        *bytes += (uint64_t)got;
    if (got != 0 || fsync(out) != 0)
        nq_errf(why, whylen, "%s -> %s: %s", from, to, errno ? strerror(errno) : "short write");
    else
        rc = 0;
    if (close(out) != 0 && rc == 0)
        rc = nq_errf(why, whylen, "%s: %s", to, strerror(errno));
    close(in);
    return rc;
}

/* Solution files are written whole and renamed into place before their row commits, and never
   removed: every file a snapshot's rows name is there, whatever the broker writes meanwhile. */
int solstore_copy(const char *src_db, sqlite3 *copy, const char *dest_dir, uint64_t *files, uint64_t *bytes,
                  char *why, size_t whylen)
{
    sqlite3_stmt *q;
    *files = *bytes = 0;
    if (sqlite3_prepare_v2(copy, "SELECT hash, n, path FROM solutions WHERE cols IS NULL ORDER BY job, hash",
                           -1, &q, NULL) != SQLITE_OK)
        return nq_errf(why, whylen, "the copy's solutions: %s", sqlite3_errmsg(copy));
    int rc = 0, step;
    while (rc == 0 && (step = sqlite3_step(q)) == SQLITE_ROW) {
        const char *hash = (const char *)sqlite3_column_text(q, 0);
        const char *path = (const char *)sqlite3_column_text(q, 2);
        char from[4400], to[4400], e[600];
        const char *name = path ? strrchr(path, '/') : NULL;
        if (!hash || !path || solstore_row_file(src_db, path, from, sizeof from) != 0)
            rc = nq_errf(why, whylen, "a solution row names no file in the DB's folder ('%s')",
                         path ? path : "");
        else if (snprintf(to, sizeof to, "%s%s", dest_dir, name) >= (int)sizeof to)
            rc = nq_errf(why, whylen, "%s%s: path too long", dest_dir, name);
        else if ((rc = copy_file(from, to, bytes, why, whylen)) == 0) {
            (*files)++;
            if (solstore_verify(hash, (uint64_t)sqlite3_column_int64(q, 1), NULL, 0, to, e, sizeof e) != 0)
                rc = nq_errf(why, whylen, "solution %s: %s", hash, e);
        } else if (rc == 1)
            rc = 0;                     /* two jobs' rows, one file */
    }
    if (rc == 0 && step != SQLITE_DONE)
        rc = nq_errf(why, whylen, "the copy's solutions: %s", sqlite3_errmsg(copy));
    sqlite3_finalize(q);
    return rc;
}

void solstore_copy_remove(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[4400];
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < (int)sizeof path)
            unlink(path);
    if (d)
        closedir(d);
    rmdir(dir);
}
