/*
 * count_bounds (common/kernel/count_bounds.h): every honest count meets its shard's bounds,
 * for every shard of every list to N=13, at every depth; and each bound
 * refuses the results that no search of its shard can give, with a reason that names it.
 */
#include "t.h"
#include "count_bounds.h"
#include "shard.h"

typedef int (*shard_fn)(void *ud, const uint8_t *spec, size_t len, const nq_count_bounds_t *b,
                        const nq_count_result_t *r);

/* Calls fn for every shard of every count list of n = 1..nmax and depth, counted. */
static uint64_t each_shard(int nmax, shard_fn fn, void *ud)
{
    char err[256];
    uint64_t seen = 0;
    const int enc = NQ_SHARD_ENCODING;
    for (int n = 1; n <= nmax; n++)
        for (int depth = n < NQ_SHARD_BORDER_MIN_N ? 0 : 1;
             depth <= (n < NQ_SHARD_BORDER_MIN_N ? 0 : n - 2); depth++) {
            nq_shards_t *l = shards_new_ex(NQ_KIND_COUNT, n, depth, enc, err, sizeof err);
            T_CHECK(l != NULL);
            for (uint64_t i = 0; l && i < shards_count(l); i++, seen++) {
                uint8_t spec[NQ_MAX_SPEC];
                size_t len = shards_get(l, i, spec);
                nq_count_result_t r;
                nq_count_bounds_t b;
                T_CHECK(count_shard(spec, len, &r, NULL, err, sizeof err) == 0);
                T_CHECK(count_bounds(spec, len, &b, err, sizeof err) == 0);
                if (fn(ud, spec, len, &b, &r) != 0) {
                    shards_destroy(&l);
                    return seen;
                }
            }
            shards_destroy(&l);
        }
    return seen;
}

static int honest(void *ud, const uint8_t *spec, size_t len, const nq_count_bounds_t *b,
                  const nq_count_result_t *r)
{
    char why[256] = "";
    (void)spec; (void)len;
    if (count_bounds_check(b, r, why, sizeof why) != 0) {
        fprintf(stderr, "  an honest count refused: %s\n", why);
        ++*(int *)ud;
    }
    return 0;
}

/* Sound: checked over 490,370 shards here, and to N=14 (11.8 million) when it was written. */
T_TEST(test_every_honest_shard_to_n13_meets_its_bounds)
{
    int refused = 0;
    uint64_t seen = each_shard(13, honest, &refused);
    T_EQ_U64(refused, 0);
    T_CHECK(seen > 400000);
}

typedef struct {
    int want_all8, want_gcd, want_m0;   /* which kind of shard to find */
    uint8_t spec[NQ_MAX_SPEC];
    size_t len;
    nq_count_bounds_t b;
    nq_count_result_t r;
    int found;
} find_t;

static int find(void *ud, const uint8_t *spec, size_t len, const nq_count_bounds_t *b,
                const nq_count_result_t *r)
{
    find_t *f = ud;
    int fit = f->want_all8 ? b->all8 && r->total > 0 && b->free_rows >= 3
            : f->want_gcd ? !b->all8 && b->wgcd >= 2 && r->total > 0 && b->free_rows >= 3
            : b->free_rows == 0 && r->total > 0;
    if (!fit)
        return 0;
    memcpy(f->spec, spec, len);
    f->len = len;
    f->b = *b;
    f->r = *r;
    f->found = 1;
    return 1;
}

static void refuses(const nq_count_bounds_t *b, nq_count_result_t r, const char *names)
{
    char why[256] = "";
    T_CHECK(count_bounds_check(b, &r, why, sizeof why) == -1);
    if (!strstr(why, names))
        fprintf(stderr, "  '%s' lacks '%s'\n", why, names);
    T_CHECK(strstr(why, names) != NULL);
}

T_TEST(test_each_bound_refuses_what_no_search_gives)
{
    find_t f = { .want_all8 = 1 };
    each_shard(10, find, &f);
    T_CHECK(f.found);
    nq_count_result_t r = f.r;
    r.total += 8;                                   /* 8 x unique no more */
    refuses(&f.b, r, "not 8 x unique");
    r = f.r;
    r.unique = r.total + 1;
    refuses(&f.b, r, "needs a total of at least");
    r = f.r;
    r.total = 8 * (uint64_t)(f.b.leaves_max + 1), r.unique = r.total / 8, r.nodes = UINT64_MAX / 2;
    refuses(&f.b, r, "admit at most");
    r = f.r;
    r.nodes = r.unique + (uint64_t)f.b.free_rows - 2;   /* one short of a node per solution and level */
    refuses(&f.b, r, "are fewer than");
    r = f.r;
    r.nodes = (uint64_t)f.b.nodes_max + 1;
    refuses(&f.b, r, "are more than");
    r = f.r;
    r.nodes = (uint64_t)(r.unique + (uint64_t)f.b.free_rows - 1);    /* the least a search can take */
    char why[256];
    T_CHECK(count_bounds_check(&f.b, &r, why, sizeof why) == 0);
}

/* A border with a symmetry: every solution weighs a multiple of wgcd. */
T_TEST(test_a_total_off_the_weights_is_refused)
{
    find_t f = { .want_gcd = 1 };
    each_shard(10, find, &f);
    T_CHECK(f.found);
    nq_count_result_t r = f.r;
    r.total += 1;
    refuses(&f.b, r, "not a multiple of");
}

/* Every row fixed (depth n-2): the one solution costs no node, and that is no forgery. */
T_TEST(test_a_shard_with_every_row_fixed_has_one_solution_and_no_node)
{
    find_t f = { .want_m0 = 1 };
    char why[256];
    each_shard(8, find, &f);
    T_CHECK(f.found);
    T_EQ_U64(f.r.nodes, 0);
    T_EQ_U64((uint64_t)f.b.leaves_max, 1);
    T_CHECK(count_bounds_check(&f.b, &f.r, why, sizeof why) == 0);
    nq_count_result_t r = f.r;
    r.total *= 2, r.unique *= 2;
    refuses(&f.b, r, "admit at most 1");
}

T_TEST(test_a_descriptor_that_does_not_decode_has_no_bounds)
{
    uint8_t junk[4] = { 5, 1, 8, 1 };
    nq_count_bounds_t b;
    char err[256] = "";
    T_CHECK(count_bounds(junk, sizeof junk, &b, err, sizeof err) == -1);
    T_CHECK(err[0] != '\0');
}

/* A result whose nodes are another search's (the fast GPU kernel's): its total and unique are held
   to every bound, its nodes to none. */
T_TEST(test_the_counts_check_holds_total_and_unique_and_leaves_nodes_alone)
{
    find_t f = { .want_all8 = 1 };
    char why[256] = "";
    each_shard(10, find, &f);
    T_CHECK(f.found);
    nq_count_result_t r = f.r;
    r.nodes = 0;                                    /* fewer than any CPU search of it takes */
    T_CHECK(count_bounds_check(&f.b, &r, why, sizeof why) == -1);
    T_CHECK(count_bounds_check_counts(&f.b, &r, why, sizeof why) == 0);
    r.nodes = (uint64_t)f.b.nodes_max + 1;          /* more than it can visit */
    T_CHECK(count_bounds_check_counts(&f.b, &r, why, sizeof why) == 0);
    r.total += 8;
    T_CHECK(count_bounds_check_counts(&f.b, &r, why, sizeof why) == -1);
    T_CHECK(strstr(why, "not 8 x unique") != NULL);
    r = f.r;
    r.total = 8 * (uint64_t)(f.b.leaves_max + 1), r.unique = r.total / 8;
    T_CHECK(count_bounds_check_counts(&f.b, &r, why, sizeof why) == -1);
    T_CHECK(strstr(why, "admit at most") != NULL);
}

T_RUN_ALL()
