/*
 * Solutions checked and stored on a thread of their own. A solve result of 10^8 queens takes
 * seconds to verify, hash and write beside the DB; done in the loop, every worker and client
 * waited that long (`nq run solve 100000000` logged a 2.8 s round each time). The loop hands the
 * permutation over, answers nothing for it meanwhile, and takes the verdict when it comes: the
 * result then goes on as any other (group commit, then ACK).
 */
#ifndef NQ_VERIFIER_H
#define NQ_VERIFIER_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t ticket;                   /* the asker's name for it */
    uint64_t job;
    uint32_t *cols;                    /* the permutation, n rows: owned by the verifier until done */
    uint64_t n;
    int ok;                            /* done: 1 valid and stored (hash, path), 0 refused (why) */
    char why[300];
    char hash[80], path[512];          /* solstore_save's: path "" when stored inline (small) */
} nq_verify_t;

typedef struct nq_verifier nq_verifier_t;

/* Starts the thread; each verdict is followed by one empty message to the inproc PULL socket at
   wake_ep in the ZeroMQ context ctx. db_path: the store (solutions are written beside it, and
   older ones looked up read-only). NULL with err. */
nq_verifier_t *verifier_new(void *ctx, const char *wake_ep, const char *db_path, char *err, size_t errlen);
/* Queues a permutation to check (v->cols is taken, whatever the outcome). -1: out of memory or
   stopped (cols freed). */
int verifier_ask(nq_verifier_t *v, nq_verify_t *r);
/* The oldest verdict not yet taken: 1 and *out (its cols are the taker's), or 0. */
int verifier_take(nq_verifier_t *v, nq_verify_t *out);
void verifier_destroy(nq_verifier_t **v);   /* stops the thread; what it held is freed */

#endif
