/* Where a DB's large solutions live on disk (solstore.h): <db folder>/<db file name>.solutions/. */
#include "solstore.h"

#include <stdio.h>
#include <string.h>

static const char *db_base(const char *db_path)
{
    const char *slash = strrchr(db_path, '/');
    return slash ? slash + 1 : db_path;
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

void solstore_files_dir(const char *db_path, char *out, size_t outlen)
{
    char dir[4096];
    solstore_dir(db_path, dir, sizeof dir);
    snprintf(out, outlen, "%s/%s.solutions", dir, db_base(db_path));
}

void solstore_file_name(const char *db_path, const char *hash, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s.solutions/%s.nqsol", db_base(db_path), hash);
}

int solstore_row_file(const char *db_path, const char *row_path, char *out, size_t outlen)
{
    const char *slash = strchr(row_path, '/');
    const char *file = slash ? slash + 1 : "";
    /* The path comes from a file on disk: only a plain name in the folder is followed. */
    if (!*file || strchr(file, '/') || strcmp(file, ".") == 0 || strcmp(file, "..") == 0)
        return -1;
    char dir[4096];
    solstore_dir(db_path, dir, sizeof dir);
    return snprintf(out, outlen, "%s/%s.solutions/%s", dir, db_base(db_path), file) < (int)outlen ? 0 : -1;
}
