/* The size of a stored solution, without loading it (store_solsize.c). */
#ifndef NQ_STORE_SOLSIZE_H
#define NQ_STORE_SOLSIZE_H

#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

/*
 * *n of the index-th solution of job (0-based, in query_solution's order: by
 * found_at, then hash), read from its row alone: neither the inline columns
 * nor the solution file are read. 0 found, 1 no such solution (or job),
 * -1 DB error with err.
 */
int store_solution_n(sqlite3 *db, uint64_t job, uint64_t index, uint64_t *n, char *err, size_t errlen);

#endif
