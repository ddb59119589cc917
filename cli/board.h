/* Drawing a small solution as text, the way the seed programs print a board. */
#ifndef NQ_BOARD_H
#define NQ_BOARD_H

#include <stdint.h>
#include <stdio.h>

/* Boards wider than this are refused: a line of more than 64 cells helps nobody. */
#define BOARD_MAX_N 64

/*
 * One line per row, 'Q' where the queen stands and '.' elsewhere (cols[r] is
 * the 0-based column of row r). Returns 0, or -1 (printing nothing) when
 * n > BOARD_MAX_N or a column is out of range; the caller says
 * "boards are drawn up to N=64".
 */
int board_print(FILE *f, const uint32_t *cols, uint64_t n);

#endif
