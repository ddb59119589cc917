/* O(N) checks of a permutation: the gate every solution passes before it is reported or stored. */
#ifndef NQ_VERIFY_H
#define NQ_VERIFY_H

#include <stdint.h>

typedef struct {
    uint64_t row_a, row_b;   /* the two rows that clash (row_b == row_a for a range error) */
    const char *what;        /* "column", "diagonal", "anti-diagonal", "range" */
} nq_clash_t;

/* 0: a valid solution; 1: not, *clash says the first clash found; -1: out of memory. */
int verify_perm(const uint32_t *cols, uint64_t n, nq_clash_t *clash);

#endif
