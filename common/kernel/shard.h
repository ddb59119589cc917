/*
 * Shards of a count or enumerate job: self-contained descriptors of a
 * pre-placement of queens that a worker completes, and the deterministic list
 * of them for a board size.
 *
 * count, n >= 4 ("border" mode): every solution has exactly one queen on each
 * border line (row 0, row n-1, column 0, column n-1). The 8 board symmetries
 * (D4) map this border set onto itself, so border configurations fall into
 * orbits. A configuration is the tuple (a, b, c, d): a = column of the queen
 * in row 0, b = column of the queen in row n-1, c = row of the queen in
 * column 0, d = row of the queen in column n-1; it is canonical when it is the
 * lexicographically least tuple of its orbit, and its weight is the orbit size
 * (1, 2, 4 or 8). A shard fixes a, c and d (and, at depth k, rows 1..k-1) and
 * leaves b to the search: the kernel counts a completion with the weight of
 * its (a, b, c, d) when that tuple is canonical and ignores it otherwise, so
 * one search covers every b and the rows above share their work. Shards are
 * listed when some b makes the tuple canonical, in lexicographic order of
 * (a, c, d, rows 1..k-1).
 *   total  = sum over completions S with canonical (a, b, c, d) of weight(a, b, c, d)
 *   unique = number of those S that are lexicographically least among their
 *            images under the stabilizer of (a, b, c, d) (every D4 class meets
 *            a canonical configuration's completions in exactly one
 *            stabilizer orbit).
 * count, n <= 3 ("plain" mode): a single shard with nothing pre-placed,
 * weight 1, unique checked against all 8 symmetries.
 *
 * enumerate (n <= 16): shards fix rows 0..k-1 with no symmetry reduction,
 * listed in lexicographic order of those columns; see enumerate.h.
 *
 * Descriptor bytes (encoding 1), all single bytes:
 *   [0] encoding version (NQ_SHARD_ENCODING)   [1] kind (NQ_KIND_COUNT / NQ_KIND_ENUMERATE)
 *   [2] n   [3] mode (0 plain, 1 border)
 *   [4] weight: 1 in plain mode and for enumerate; 0 in border mode (per solution, from b)
 *   [5] k   [6 .. 6+k-1] columns of rows 0..k-1
 *   border mode only, then: c, d (see above; a is the column of row 0)
 * shard_decode accepts exactly the descriptors shards_new can produce for some
 * depth; anything else is refused with a reason.
 */
#ifndef NQ_SHARD_H
#define NQ_SHARD_H

#include "nq.h"

#include <stddef.h>
#include <stdint.h>

#define NQ_SHARD_ENCODING 1
#define NQ_SHARD_BORDER_MIN_N 4      /* below: the plain mode */
#define NQ_SHARD_MAX_LIST (64u << 20) /* shards_new refuses to list more than this */

enum { NQ_SHARD_PLAIN = 0, NQ_SHARD_BORDER = 1 };

typedef struct {
    int version, kind, n, mode, weight, k;
    uint8_t top[NQ_SHARD_MAX_N];      /* columns of rows 0..k-1 */
    int c, d;                         /* border mode only */
    int8_t row_col[NQ_SHARD_MAX_N];   /* every fixed queen: column by row, -1 = free row */
    /* per column b of the row n-1 queen: weight of (a, b, c, d) (0: not
       canonical or not possible) and its stabilizer (bitmask of D4 elements,
       bit 0 = identity), the elements unique is checked against. Plain mode:
       weight 1, all 8 elements; enumerate: weight 1, identity. */
    uint8_t bweight[NQ_SHARD_MAX_N];
    uint8_t bstab[NQ_SHARD_MAX_N];
    uint32_t bmask8, bmaskx;          /* columns b of weight 8 / of a smaller weight */
} nq_shard_desc_t;

typedef struct nq_shards nq_shards_t;

/* depth 0 = auto from n. NULL with a reason in err when kind, n or depth is out of range. */
nq_shards_t *shards_new(int kind, int n, int depth, char *err, size_t errlen);
size_t shards_count(const nq_shards_t *s);
const uint8_t *shards_get(const nq_shards_t *s, size_t i, size_t *len);
double shards_cost(const nq_shards_t *s, size_t i);
int shards_depth(const nq_shards_t *s);
void shards_destroy(nq_shards_t **s);

/* Validates untrusted bytes completely. 0 ok, -1 with a reason. */
int shard_decode(const uint8_t *b, size_t len, nq_shard_desc_t *out, char *err, size_t errlen);
/* Encodes a descriptor (as filled by shard_decode); returns the length (<= NQ_MAX_SPEC). */
size_t shard_encode(const nq_shard_desc_t *d, uint8_t *out);

/* The depth shards_new uses for depth 0, and the allowed range of depths. */
int shard_auto_depth(int kind, int n);
int shard_depth_range(int kind, int n, int *min, int *max);

#endif
