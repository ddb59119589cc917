/*
 * Enumeration of every solution of a small board (N <= 16).
 *
 * Canonical order: a solution is its column list (cols[0], cols[1], ...,
 * cols[n-1]) (cols[r] = 0-based column of the queen in row r), and solutions
 * are ordered lexicographically by that list. Shards of NQ_KIND_ENUMERATE fix
 * rows 0..k-1 with no symmetry reduction and are listed by shards_new in
 * lexicographic order of those k columns; each shard emits its completions in
 * lexicographic order. So taking shards in index order and concatenating
 * their output gives ALL solutions in canonical order, each exactly once.
 *
 * Symmetry classes: enumerate_canonical gives the lexicographically least of
 * the 8 images of a solution under the board symmetries; a solution is its
 * class's representative iff enumerate_canonical(x) == x.
 */
#ifndef NQ_ENUMERATE_H
#define NQ_ENUMERATE_H

#include <stddef.h>
#include <stdint.h>

#include "count.h"

/*
 * Emits every completion of the shard in canonical order. emit returns 0 to go
 * on, nonzero to stop (enumerate_shard then fails with "stopped by the
 * consumer"). 0 ok, -1 error (err), 2 cancelled.
 */
int enumerate_shard(const uint8_t *spec, size_t len, int (*emit)(void *ud, const uint8_t *cols, int n),
                    void *ud, const nq_kernel_ctl_t *ctl, char *err, size_t errlen);

/* 4 bits per column, row 0 in the low nibble of byte 0: (n+1)/2 bytes. Returns the length. */
size_t enumerate_pack(const uint8_t *cols, int n, uint8_t *out);
void enumerate_unpack(const uint8_t *in, int n, uint8_t *cols);

/* The lexicographically least of the 8 images of cols (n <= 32). */
void enumerate_canonical(const uint8_t *cols, int n, uint8_t *out);

#endif
