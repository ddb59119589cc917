/*
 * The counting kernel: completes one shard (see shard.h) from its descriptor
 * alone and returns its weighted total, its contribution to the unique count
 * (OEIS A002562), the nodes searched, and the total's residues mod 13 and 15.
 *
 * The residues are accumulated by separate small counters inside the kernel,
 * not derived from the total at the end, so the broker can catch a total that
 * overflowed or was corrupted between kernel and store.
 */
#ifndef NQ_COUNT_H
#define NQ_COUNT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct { uint64_t total, unique, nodes; uint8_t res13, res15; } nq_count_result_t;

/* Both may be NULL. The kernel polls *cancel and stores *progress (nodes so far,
   relaxed) about every 2^20 nodes. */
typedef struct { const atomic_int *cancel; _Atomic uint64_t *progress; } nq_kernel_ctl_t;

#define NQ_KERNEL_POLL_NODES (1u << 20)

/* 0 ok, -1 error (reason in err: bad descriptor, overflow), 2 cancelled. */
int count_shard(const uint8_t *spec, size_t len, nq_count_result_t *r, const nq_kernel_ctl_t *ctl,
                char *err, size_t errlen);

/* The kernel count_shard uses on this machine: "avx512" or "scalar" (no
   AVX-512, or NQ_COUNT_KERNEL=scalar in the environment). Same results either way. */
const char *count_kernel_name(void);

/*
 * A running count with its separate residue counters; exposed so the
 * overflow path can be tested without a search of 2^64 nodes.
 */
typedef struct { uint64_t total; uint8_t r13, r15; } nq_count_tally_t;
/* tally += add (checked); -1 on overflow, tally unchanged. */
int count_tally_add(nq_count_tally_t *t, uint64_t add);

#endif
