/*
 * O(N) verification of a permutation with three bitmaps (columns, diagonals,
 * anti-diagonals): about 5N bits, so N = 1e9 needs ~625 MB. Rows are checked
 * in order, and the first row that repeats a line is reported together with
 * the earlier row that owns that line (found by a second, linear scan).
 */
#include "verify.h"

#include <stdlib.h>
#include <sys/mman.h>

enum { LINE_COL, LINE_DIAG, LINE_ANTI };

static const char *const line_name[] = { "column", "diagonal", "anti-diagonal" };

/* The index of row r's queen on one kind of line; diagonals are offset by n-1 to stay >= 0. */
static uint64_t line_of(int kind, uint64_t r, uint64_t c, uint64_t n)
{
    switch (kind) {
    case LINE_COL:  return c;
    case LINE_DIAG: return r + (n - 1) - c;
    default:        return r + c;
    }
}

/* The earliest row before `row` whose queen lies on the same line. */
static uint64_t earlier_row(const uint32_t *cols, uint64_t n, uint64_t row, int kind)
{
    uint64_t want = line_of(kind, row, cols[row], n);
    for (uint64_t r = 0; r < row; r++)
        if (line_of(kind, r, cols[r], n) == want)
            return r;
    return row;   /* not reached: the bitmap said the line was taken */
}

/* Test-and-set of bit i; returns the old bit. */
static inline int bit_claim(uint64_t *bm, uint64_t i)
{
    uint64_t m = 1ULL << (i & 63);
    int old = (bm[i >> 6] & m) != 0;
    bm[i >> 6] |= m;
    return old;
}

/*
 * The bitmaps are read at random (a column, two diagonals per row): at N = 1e9 that is 625 MB
 * over 4 KB pages, and the page walks cost as much as the cache misses. Mapped anonymously
 * they start zeroed, and huge pages (where THP allows them on request) cut the TLB misses.
 */
static uint64_t *bitmaps_new(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, bytes, MADV_HUGEPAGE);
#endif
    return p;
}

int verify_perm(const uint32_t *cols, uint64_t n, nq_clash_t *clash)
{
    if (n == 0)
        return 0;
    uint64_t words_col = (n + 63) / 64, words_diag = (2 * n + 63) / 64;
    size_t bytes = (size_t)(words_col + 2 * words_diag) * sizeof(uint64_t);
    /* a small board's bitmaps (n <= 64) on the stack: a mapping per call would cost more than
       the check (test builds check every solution the counting kernels rebuild, count.c) */
    uint64_t small[5] = { 0 };
    uint64_t *col = bytes <= sizeof small ? small : bitmaps_new(bytes);
    if (!col)
        return -1;
    uint64_t *diag = col + words_col, *anti = diag + words_diag;
    int rc = 0;
    for (uint64_t r = 0; r < n; r++) {
        /* The loads of later rows do not depend on this one: prefetch hides the misses. */
        if (r + 16 < n && cols[r + 16] < n) {
            uint64_t c16 = cols[r + 16];
            __builtin_prefetch(&col[c16 >> 6], 1);
            __builtin_prefetch(&diag[(r + 16 + n - 1 - c16) >> 6], 1);
            __builtin_prefetch(&anti[(r + 16 + c16) >> 6], 1);
        }
        uint64_t c = cols[r];
        if (c >= n) {
            *clash = (nq_clash_t){ r, r, "range" };
            rc = 1;
            break;
        }
        int kind = -1;
        if (bit_claim(col, c))
            kind = LINE_COL;
        else if (bit_claim(diag, r + (n - 1) - c))
            kind = LINE_DIAG;
        else if (bit_claim(anti, r + c))
            kind = LINE_ANTI;
        if (kind >= 0) {
            *clash = (nq_clash_t){ earlier_row(cols, n, r, kind), r, line_name[kind] };
            rc = 1;
            break;
        }
    }
    if (col != small)
        munmap(col, bytes);
    return rc;
}
