/*
 * Where verified solve solutions live: small permutations inline in the DB
 * (as uint32 little-endian), large ones in a file beside the DB
 * (<db>.solutions/<hash>.nqsol, nq's binary solution format), named by a
 * content hash so the same solution found twice is stored once.
 *
 * The hash is BLAKE2b with a 32-byte digest (libsodium's crypto_generichash, no key) over
 * n as a u64 little-endian, then each column as a u32 little-endian; written as 64 lowercase
 * hex digits. In Python: hashlib.blake2b(struct.pack("<Q", n) + struct.pack("<%dI" % n, *cols),
 * digest_size=32).hexdigest().
 */
#ifndef NQ_SOLSTORE_H
#define NQ_SOLSTORE_H

#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

#define NQ_SOL_INLINE_MAX 100000ull    /* n up to this: inline in the DB */
#define NQ_SOL_HASH_BYTES 32
#define NQ_SOL_HASH_HEX (2 * NQ_SOL_HASH_BYTES)

/* The content hash of a permutation (see above), NQ_SOL_HASH_HEX digits and a NUL. */
void solstore_hash(const uint32_t *cols, uint64_t n, char out[NQ_SOL_HASH_HEX + 1]);
/* Hashes; for large n writes the file (unless already there) and sets path (relative to the DB's
   folder); for small n sets path to "". 0, or -1 with why. */
int solstore_save(const char *db_path, const uint32_t *cols, uint64_t n, char *hash, size_t hashlen, char *path,
                  size_t pathlen, char *why, size_t whylen);
/* malloc'd uint32 little-endian copy (4n bytes). */
uint8_t *solstore_pack(const uint32_t *cols, uint64_t n);
/* ---- solstore_path.c: where the files are ---- */

/* The folder of the DB file, for resolving stored paths. */
void solstore_dir(const char *db_path, char *out, size_t outlen);
/* "<DB's folder>/<db file name>.solutions": the folder of a DB's solution files. */
void solstore_files_dir(const char *db_path, char *out, size_t outlen);
/* "<db file name>.solutions/<hash>.nqsol": where a large solution's file is, from the DB's folder. */
void solstore_file_name(const char *db_path, const char *hash, char *out, size_t outlen);

/* Where this DB finds a row's file: "<this DB's .solutions folder>/<the row's file name>". The row
   names the folder it was written in (after its DB's name then), so a DB restored or moved under
   another name, with its folder, still finds its files. 0, or -1: the row's path is not
   "FOLDER/FILE" (it comes from a file on disk: nothing outside the folder is followed). */
int solstore_row_file(const char *db_path, const char *row_path, char *out, size_t outlen);

/* ---- solstore_check.c: whether a stored solution is whole ---- */

/* The row's permutation (its inline blob, or else the file at `file`) hashes to the row's hash
   (BLAKE2b, 64 digits). 0 it does, 1 it does not or cannot be read (why says
   which: missing, damaged, another solution). */
int solstore_verify(const char *hash, uint64_t n, const void *blob, size_t bloblen, const char *file,
                    char *why, size_t whylen);

/* ---- solstore_copy.c: a backup's copy of the files ---- */

/* Copies every large solution file that `copy` (a snapshot of the DB at src_db) names, from
   src_db's folder into dest_dir (an empty folder), and verifies each copy against its row. 0
   (*files and *bytes set), or -1 with why (dest_dir may hold part of the copy). */
int solstore_copy(const char *src_db, sqlite3 *copy, const char *dest_dir, uint64_t *files, uint64_t *bytes,
                  char *why, size_t whylen);
/* Removes dir and the files in it (a copy that failed). */
void solstore_copy_remove(const char *dir);

#endif
