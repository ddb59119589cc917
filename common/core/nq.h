/* What every layer of nq agrees on: the kinds of job, the board limits, the exit codes. */
#ifndef NQ_NQ_H
#define NQ_NQ_H

/* The three kinds of work (their numbers are on the wire and in the store). */
typedef enum { NQ_KIND_COUNT = 1, NQ_KIND_SOLVE = 2, NQ_KIND_ENUMERATE = 3 } nq_kind_t;

/* Board sizes. Count shards hold a row per 32-bit mask; enumerate packs a column in 4 bits;
   solve keeps one uint32 column per row and the wire carries N as a number up to 10^9. */
#define NQ_SHARD_MAX_N 32
#define NQ_ENUM_MAX_N  16
#define NQ_SOLVE_MAX_N 1000000000ull
#define NQ_MAX_SPEC    256             /* bytes of an encoded shard descriptor (on the wire: TASK.spec) */
#define NQ_STR_MAX     256             /* longest string field of the wire, including NUL */
#define NQ_THREADS_MAX 4096            /* a worker's threads (HELLO), an audit's, nq run's workers */

/* One result vocabulary: a command's exit status, and the code of a control reply (the
   broker answers with the code its client then exits with). */
enum { NQ_EXIT_OK = 0, NQ_EXIT_NO = 1, NQ_EXIT_USAGE = 2, NQ_EXIT_ERROR = 3 };

#endif
