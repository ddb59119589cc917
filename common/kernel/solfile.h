/*
 * Solution files: how a permutation (cols[r] = 0-based column of row r) is
 * written to disk and read back. Two formats, told apart by the first bytes:
 *
 * text    one decimal column per row, one per line ("\n"; the last newline
 *         may be missing). N is the number of lines.
 *
 * binary  for huge N (27 bits per queen at N=1e8 instead of ~9 bytes):
 *           bytes 0..7    magic "NQSOL1\n\0"
 *           bytes 8..15   n, u64 little-endian, 1 <= n <= SOLFILE_MAX_N
 *           payload       n columns of w bits each, w = max(1, ceil(log2 n)),
 *                         packed LSB-first: column i is bits [i*w, (i+1)*w) of
 *                         the payload, bit k being bit (k % 8) of byte k / 8;
 *                         ceil(n*w / 8) bytes, unused high bits of the last byte 0
 *           last 8 bytes  checksum, u64 LE: solfile_checksum over everything before it
 *
 * Reading validates everything (size, magic, checksum, every value < n, no
 * junk) and never trusts a length it has not checked against the file size.
 */
#ifndef NQ_SOLFILE_H
#define NQ_SOLFILE_H

#include <stddef.h>
#include <stdint.h>

#define SOLFILE_MAGIC "NQSOL1\n\0"
#define SOLFILE_MAGIC_LEN 8
#define SOLFILE_MAX_N 4294967295ULL   /* columns are uint32 */

enum {
    SOLFILE_OK = 0,
    SOLFILE_EIO = -1,       /* cannot open, read or write the file (err has errno's reason) */
    SOLFILE_EFORMAT = -2,   /* the file is readable but not a valid solution file */
};

/* Writes cols[0..n) to path (binary != 0: the binary format). Writes a new temporary
 * file beside path (unpredictable name, O_EXCL: a link planted there is never followed)
 * and renames it, so a failed write leaves an existing file alone. The file keeps the
 * mode of the one it replaces (new: 0666 less the umask). A device or FIFO (/dev/stdout)
 * is written in place. */
int solfile_write(const char *path, const uint32_t *cols, uint64_t n, int binary,
                  char *err, size_t errlen);

/* Reads either format. On SOLFILE_OK *cols is malloc'd (caller frees) and *n set;
 * otherwise nothing is allocated and err says why (with the line or row at fault). */
int solfile_read(const char *path, uint32_t **cols, uint64_t *n, char *err, size_t errlen);

/* The binary format's checksum: a 64-bit multiply-rotate hash of 8-byte LE words. */
typedef struct {
    uint64_t h, total;
    uint8_t tail[8];
    unsigned ntail;
} solfile_hash_t;

void solfile_hash_init(solfile_hash_t *s);
void solfile_hash_update(solfile_hash_t *s, const void *data, size_t len);
uint64_t solfile_hash_final(solfile_hash_t *s);

/* Bits per column in the binary format for this n. */
unsigned solfile_bits(uint64_t n);

#endif
