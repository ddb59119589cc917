/* Solutions checked and stored on a thread of their own, so that the broker's loop never waits for
   one (verifier.h). */
#include "verifier.h"
#include "errf.h"
#include "solstore.h"
#include "verify.h"
#include "offload.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct item {
    offload_item_t link;               /* first: what the offload queues */
    nq_verify_t v;
} item_t;

struct nq_verifier {
    nq_offload_t *o;
    char db_path[4096];
};

static void item_free(offload_item_t *it)
{
    item_t *x = (item_t *)it;
    free(x->v.cols);
    free(x);
}

static void check(void *ud, offload_item_t *link, const atomic_int *stop)
{
    nq_verifier_t *vr = ud;
    nq_verify_t *v = &((item_t *)link)->v;
    nq_clash_t c;
    (void)stop;                         /* seconds at most: finished, not abandoned */
    v->ok = 0;
    if (verify_perm(v->cols, v->n, &c) != 0) {
        nq_errf(v->why, sizeof v->why, "solution fails verification: rows %llu and %llu share a %s",
                (unsigned long long)c.row_a, (unsigned long long)c.row_b, c.what);
        return;
    }
    if (solstore_save(vr->db_path, v->cols, v->n, v->hash, sizeof v->hash, v->path, sizeof v->path, v->why,
                      sizeof v->why) == 0)
        v->ok = 1;
}

nq_verifier_t *verifier_new(void *ctx, const char *wake_ep, const char *db_path, char *err, size_t errlen)
{
    nq_verifier_t *vr = calloc(1, sizeof *vr);
    if (!vr)
        return nq_errf(err, errlen, "out of memory"), NULL;
    snprintf(vr->db_path, sizeof vr->db_path, "%s", db_path);
    nq_offload_ops_t ops = { check, item_free, vr, "checks solutions", "NQ_FAULT_VERIFY_GATE" };
    if (!(vr->o = offload_new(ctx, wake_ep, &ops, err, errlen))) {
        free(vr);
        return NULL;
    }
    return vr;
}

int verifier_ask(nq_verifier_t *vr, nq_verify_t *r)
{
    item_t *it = calloc(1, sizeof *it);
    if (!it) {
        free(r->cols);
        return -1;
    }
    it->v = *r;
    return offload_ask(vr->o, &it->link);
}

int verifier_take(nq_verifier_t *vr, nq_verify_t *out)
{
    item_t *it = (item_t *)offload_take(vr->o);
    if (!it)
        return 0;
    *out = it->v;
    free(it);
    return 1;
}

void verifier_destroy(nq_verifier_t **vp)
{
    nq_verifier_t *vr = *vp;
    if (!vr)
        return;
    offload_destroy(&vr->o);            /* a check under way finishes first: seconds at most */
    free(vr);
    *vp = NULL;
}
