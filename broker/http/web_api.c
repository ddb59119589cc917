/*
 * /api/...: for scripts, the very documents the --json outputs print, through the same
 * JSON renderer (common/wire/json.c):
 *   /api/jobs              nq list --json
 *   /api/jobs/ID           nq status ID --json
 *   /api/jobs/ID/result    nq result ID --json
 *   /api/workers           nq workers --json
 * An error is {"error": "..."} with 404 (no such job or path) or 503 (the DB).
 */
#include "http_impl.h"

#include "json.h"

#include <string.h>

static unsigned api_error(FILE *f, unsigned status, const char *msg)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_unpacked u;
    size_t n = strlen(msg), off = 0;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 1);
    msgpack_pack_str(&pk, 5);
    msgpack_pack_str_body(&pk, "error", 5);
    msgpack_pack_str(&pk, n);
    msgpack_pack_str_body(&pk, msg, n);
    msgpack_unpacked_init(&u);
    if (msgpack_unpack_next(&u, sb.data, sb.size, &off) == MSGPACK_UNPACK_SUCCESS)
        json_write(f, &u.data);
    fputc('\n', f);
    msgpack_unpacked_destroy(&u);
    msgpack_sbuffer_destroy(&sb);
    return status;
}

static unsigned api_doc(nq_http_t *h, FILE *f, web_doc_kind_t kind, uint64_t id)
{
    web_doc_t d;
    char err[256] = "";
    int rc = web_doc(h, kind, id, &d, err, sizeof err);
    unsigned status = 200;
    if (rc == 0) {
        json_write(f, d.doc);
        fputc('\n', f);
    } else {
        status = api_error(f, rc == -1 ? 404 : 503, err);
    }
    web_doc_free(&d);
    return status;
}

unsigned web_api(nq_http_t *h, const char *path, FILE *f)
{
    uint64_t id;
    if (strcmp(path, "/jobs") == 0)
        return api_doc(h, f, WEB_DOC_LIST, 0);
    if (strcmp(path, "/workers") == 0)
        return api_doc(h, f, WEB_DOC_WORKERS, 0);
    if (strncmp(path, "/jobs/", 6) == 0) {
        const char *p = path + 6, *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (web_parse_id(p, n, &id) == 0 && !slash)
            return api_doc(h, f, WEB_DOC_JOB, id);
        if (web_parse_id(p, n, &id) == 0 && strcmp(slash, "/result") == 0)
            return api_doc(h, f, WEB_DOC_RESULT, id);
    }
    return api_error(f, 404, "no such document: /api/jobs, /api/jobs/ID, /api/jobs/ID/result, "
                     "/api/workers");
}
