/*
 * Manifests: the verifiable record of every subtotal of a done count job
 * (`nq export JOB --manifest FILE`, checked by `nq audit FILE`).
 *
 * A manifest is ASCII text, one record per line, each line ended by "\n"; fields are
 * separated by exactly one space; numbers are decimal without sign or leading zeros
 * ("0" is zero); hex is lowercase. Nothing else is accepted: a line has exactly one
 * spelling, so its bytes are what the hash tree commits to.
 *
 *   line 1        nq-manifest 4 count n=N depth=D encoding=E shards=S total=T unique=U nodes=X
 *                 the job's parameters (its shard list is shards_new_ex(count, N, D, E); E is 5),
 *                 its number of shards and the claimed 128-bit sums of the lines below (nodes:
 *                 of the lines of NODES_KIND 0 alone, as the job's row sums them)
 *   lines 2..S+1  IDX SPEC TOTAL UNIQUE NODES RES13 RES15 WORKER CONFIRMATIONS EVIDENCE NODES_KIND BY_COPY
 *                 shard IDX = 0..S-1 in order: its descriptor (hex of shards_get's bytes),
 *                 its total, unique and nodes (64-bit), its residues mod 13 and mod 15 as the
 *                 kernel counted them, the worker whose result was stored ("-" when the store
 *                 does not know it), how many other identities' later results agreed with it,
 *                 how many identities sent a later result that disagreed with it (evidence
 *                 against them: the decided result stands; an auditor recounts these first),
 *                 and whose nodes NODES are: 0 the CPU kernels' (a recount gives them again),
 *                 1 the fast GPU kernel's own (a recount checks total, unique and residues),
 *                 and whether the stored result was a tail copy's, decided without its holder
 *                 (1; 0 not): an auditor recounts these first, beside those with evidence.
 *   line S+2      root HEX
 *                 the hash tree (common/core/merkle.h, BLAKE2b-256) over S+1 leaves: the
 *                 header line's bytes, then each shard line's bytes, without the "\n"
 *
 * The root commits to the parameters, the claimed count and every subtotal: publishing the
 * root with the count lets anyone holding the file check that it is the one meant.
 */
#ifndef NQ_MANIFEST_H
#define NQ_MANIFEST_H

#include "nq.h"
#include "u128.h"

#include <stddef.h>
#include <stdint.h>

/* The one version written and read: 4 added BY_COPY. The number stays in the file so that a
   release can tell an older file and migrate it; this build refuses every other version. */
#define NQ_MANIFEST_VERSION 4
#define NQ_MANIFEST_WORKER_MAX (NQ_STR_MAX - 1)   /* a worker id's bytes (proto_check_worker_id) */
/* Longest valid line: 20-digit index, 512 hex digits, three 20-digit numbers, two residues,
   a 255-byte worker id, two 20-digit counts, a kind, a copy mark and 11 spaces come to 906; header and root
   are shorter. */
#define NQ_MANIFEST_LINE_MAX 1024

typedef struct {
    int version;                        /* NQ_MANIFEST_VERSION once read */
    int n, depth, encoding;
    uint64_t shards;
    nq_u128 total, unique, nodes;
} nq_manifest_head_t;

typedef struct {
    uint64_t idx;
    uint8_t spec[NQ_MAX_SPEC];
    size_t spec_len;
    uint64_t total, unique, nodes;
    unsigned res13, res15;
    char worker[NQ_MANIFEST_WORKER_MAX + 1];
    uint64_t confirmations;
    uint64_t evidence;
    unsigned nodes_kind;                /* NQ_MANIFEST_NODES_* */
    unsigned by_copy;                   /* 1: decided by a tail copy's result, without its holder */
} nq_manifest_line_t;

/* Whose nodes a line carries (the wire's RESULT.nodes_kind, as the store kept it). */
#define NQ_MANIFEST_NODES_CPU 0         /* the CPU kernels' (and the GPU's parity kernel's) */
#define NQ_MANIFEST_NODES_GPU_FAST 1    /* the fast GPU kernel's own: not comparable */

/* Each writes one line without its "\n" into buf and returns its length; 0 when it does not fit
   in cap, or the record cannot be written (a worker id with a space or control byte, an empty
   descriptor, a residue, a nodes kind or a copy mark out of range). */
size_t manifest_head_format(const nq_manifest_head_t *h, char *buf, size_t cap);
size_t manifest_line_format(const nq_manifest_line_t *l, char *buf, size_t cap);
size_t manifest_root_format(const uint8_t root[32], char *buf, size_t cap);

/* Each parses one line (without its "\n") strictly: 0, or -1 with the field at fault in err.
   manifest_head_parse refuses any kind but count ("manifest: count jobs only"). */
int manifest_head_parse(const char *s, size_t len, nq_manifest_head_t *h, char *err, size_t errlen);
int manifest_line_parse(const char *s, size_t len, nq_manifest_line_t *l, char *err, size_t errlen);
int manifest_root_parse(const char *s, size_t len, uint8_t root[32], char *err, size_t errlen);

#endif

#ifndef NQ_MANIFEST_SCAN_H
#define NQ_MANIFEST_SCAN_H
#include <stdio.h>
#include <sodium.h>
#include "merkle.h"
#include "shard.h"

/*
 * Reading a whole manifest (what `nq audit` does before it counts anything). The header is a
 * few bytes that anyone can write, so nothing it claims costs anything before the lines back
 * it: manifest_scan_head reads line 1 and refuses a depth or encoding that no job of its n
 * has, and (a regular file) a shard count its size cannot hold. manifest_scan_rest then reads
 * every shard line and the root line, and only then makes the job's shard list, whose cost is
 * bounded by the lines read, and checks each line's descriptor against it: the descriptors
 * are hashed as they pass and the hash compared with the list's in one walk; when they differ,
 * the lines are read again (where the input can seek) to name each one.
 * Format errors stop the scan (the lines after one cannot be trusted to be where they claim);
 * disagreements (a descriptor that is not the list's, residues that disagree with a total,
 * numbers that no count of the shard can give (count_bounds.h: nodes only on lines of NODES_KIND
 * 0, whose nodes are the CPU kernels'), sums that disagree with the
 * header or that no count of N can have, a root that disagrees with the lines) are each
 * reported through `problem` and the scan goes on, so one run names them all.
 * Memory: one line, the tree's stack and, at the end, the list.
 */
typedef void (*manifest_problem_fn)(void *ud, uint64_t line, const char *what);
/* Called for each well-formed shard line; refuted: a check that needs no recount (its residues
   or count_bounds) found numbers no count of its descriptor gives. Nonzero stops the scan (-1
   returned, err set). */
typedef int (*manifest_line_fn)(void *ud, const nq_manifest_line_t *l, int refuted, char *err, size_t errlen);

typedef struct {
    FILE *f;
    manifest_problem_fn problem;       /* may be NULL */
    manifest_line_fn on_line;          /* may be NULL */
    void *ud;
    /* filled by the scan */
    uint64_t line;                     /* lines read so far */
    uint64_t problems;
    nq_manifest_head_t head;
    nq_shards_t *list;                 /* the job's list, made after the lines; freed by manifest_scan_free */
    nq_merkle_t tree;
    nq_u128 total, unique, nodes;      /* sums of the shard lines read (nodes: of NODES_KIND 0) */
    uint64_t fast_lines;               /* lines whose nodes are the fast GPU kernel's own */
    uint8_t root[NQ_MERKLE_BYTES];     /* as the root line says */
    long long body_at;                 /* where line 2 starts; -1 when the input cannot be read again */
    crypto_generichash_state specs;    /* the shard lines' descriptors, in order */
    char buf[NQ_MANIFEST_LINE_MAX + 1];
} nq_manifest_scan_t;

/* 0; -1 the file is not a valid manifest (err: "line L: ..."); -2 a read error (err). */
int manifest_scan_head(nq_manifest_scan_t *s, char *err, size_t errlen);
int manifest_scan_rest(nq_manifest_scan_t *s, char *err, size_t errlen);
void manifest_scan_free(nq_manifest_scan_t *s);

#endif
