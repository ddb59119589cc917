/* Text drawing of a board, for `nq bench solve --board` and friends. */
#include "board.h"

int board_print(FILE *f, const uint32_t *cols, uint64_t n)
{
    if (n > BOARD_MAX_N)
        return -1;
    for (uint64_t r = 0; r < n; r++)
        if (cols[r] >= n)
            return -1;
    char line[BOARD_MAX_N + 2];
    for (uint64_t r = 0; r < n; r++) {
        for (uint64_t c = 0; c < n; c++)
            line[c] = (c == cols[r]) ? 'Q' : '.';
        line[n] = '\n';
        line[n + 1] = '\0';
        fputs(line, f);
    }
    return 0;
}
