/* The shards `nq audit` recounts: choosing them and counting them again in threads (audit_recount.c). */
#ifndef NQ_AUDIT_H
#define NQ_AUDIT_H

#include "count.h"
#include "manifest.h"
#include "rng.h"
#include "shard.h"

#include <stddef.h>
#include <stdint.h>

/* Why a shard is counted again: drawn at random, or suspect (refuted by the checks, with
   evidence against a late result, or decided by a tail copy without its holder), before the draw. */
typedef enum { AUDIT_DRAWN = 0, AUDIT_REFUTED, AUDIT_EVIDENCE, AUDIT_COPY } audit_why_t;

typedef struct {
    uint64_t idx;
    uint64_t rank;                /* its place in the draw (audit_sample): the first are taken first */
    audit_why_t why;
    int claimed;                  /* the manifest's line for it was read */
    nq_count_result_t claim;      /* what the manifest says */
    unsigned nodes_kind;          /* whose nodes the claim's are: only the CPU kernels' are recounted */
    unsigned by_copy;             /* the line says a tail copy decided it */
    nq_count_result_t got;        /* what the kernel says */
    int rc;                       /* count_shard's: 0 ok */
    char err[128];
} audit_pick_t;

/* k distinct shards of 0..shards-1 drawn by the seeded RNG (Floyd's method: k draws, no
   rejection loop), sorted by index, each with its rank in the draw; NULL when out of memory. */
audit_pick_t *audit_sample(uint64_t shards, uint64_t k, uint64_t seed);
/* The pick of shard idx in the sorted picks, or NULL. */
audit_pick_t *audit_find(audit_pick_t *p, size_t n, uint64_t idx);
/* Sorts picks by their rank in the draw. */
void audit_by_rank(audit_pick_t *p, size_t n);

/* Up to cap suspect lines of one kind, chosen evenly at random among however many there are
   (a reservoir, with its own draws from the audit's seed): a file marked suspect everywhere costs
   an audit no more than cap recounts of that kind. */
typedef struct {
    audit_pick_t *p;
    size_t n, cap;
    uint64_t seen;
    nq_rng_t rng;
} audit_reservoir_t;

int audit_reservoir_init(audit_reservoir_t *r, size_t cap, uint64_t seed, uint64_t stream);
/* Offers one line; returns the slot it takes (to fill in), or NULL when it is not kept. */
audit_pick_t *audit_reservoir_offer(audit_reservoir_t *r);
void audit_reservoir_free(audit_reservoir_t *r);
/* audit_power.c: the smallest share of wrong lines that `drawn` lines drawn at random catch with
   probability 0.99 (1 when none are drawn), and the lines to draw to catch `share` (0 < share < 1). */
double audit_power_share(uint64_t drawn);
uint64_t audit_power_sample(double share);
/* Counts every pick's descriptor from the list with `threads` threads (in the caller's when
   none can start). */
void audit_recount(const nq_shards_t *list, audit_pick_t *p, size_t n, unsigned threads);

#endif
