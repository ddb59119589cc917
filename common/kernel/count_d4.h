/*
 * The 8 symmetries of the square board (the dihedral group D4), as maps of a
 * cell (r, c) on an n x n board. Shared by the shard generator (canonical
 * border configurations), the counting kernel (unique solutions) and
 * enumeration (canonical representatives).
 *
 * Element 0 is the identity; 1..3 rotate by 90, 180, 270 degrees; 4..7 are
 * the reflections. A reflection never fixes an N-Queens solution for n > 1.
 */
#ifndef NQ_COUNT_D4_H
#define NQ_COUNT_D4_H

#define NQ_D4_SIZE 8

static inline void d4_map(int g, int n, int r, int c, int *r2, int *c2)
{
    int m = n - 1;
    switch (g) {
    case 0: *r2 = r;     *c2 = c;     break;
    case 1: *r2 = c;     *c2 = m - r; break;   /* rotate 90 */
    case 2: *r2 = m - r; *c2 = m - c; break;   /* rotate 180 */
    case 3: *r2 = m - c; *c2 = r;     break;   /* rotate 270 */
    case 4: *r2 = r;     *c2 = m - c; break;   /* mirror columns */
    case 5: *r2 = m - r; *c2 = c;     break;   /* mirror rows */
    case 6: *r2 = c;     *c2 = r;     break;   /* transpose */
    default: *r2 = m - c; *c2 = m - r; break;  /* anti-transpose */
    }
}

/* out = image of the permutation cols (row -> column) under g. */
static inline void d4_perm(int g, int n, const unsigned char *cols, unsigned char *out)
{
    for (int r = 0; r < n; r++) {
        int r2, c2;
        d4_map(g, n, r, cols[r], &r2, &c2);
        out[r2] = (unsigned char)c2;
    }
}

/* Lexicographic comparison of two permutations: <0, 0, >0. */
static inline int d4_cmp(const unsigned char *a, const unsigned char *b, int n)
{
    for (int i = 0; i < n; i++)
        if (a[i] != b[i])
            return a[i] < b[i] ? -1 : 1;
    return 0;
}

/* d4_cmp of cols's image under the rotation by 180 degrees against cols, without building the
   image: row r of it is n-1 - cols[n-1-r], and most boards differ from it in their first rows. */
static inline int d4_cmp_rot180(const unsigned char *cols, int n)
{
    for (int r = 0; r < n; r++) {
        int im = n - 1 - cols[n - 1 - r];
        if (im != cols[r])
            return im < cols[r] ? -1 : 1;
    }
    return 0;
}

/* 1 when cols is lexicographically <= its image under every g in the bitmask. */
static inline int d4_is_least(const unsigned char *cols, int n, unsigned gmask)
{
    unsigned char img[32];
    for (int g = 1; g < NQ_D4_SIZE; g++) {
        if (!(gmask & (1u << g)))
            continue;
        if (g == 2) {   /* the stabilizer of most symmetric border configurations */
            if (d4_cmp_rot180(cols, n) < 0)
                return 0;
            continue;
        }
        d4_perm(g, n, cols, img);
        if (d4_cmp(img, cols, n) < 0)
            return 0;
    }
    return 1;
}

#endif
