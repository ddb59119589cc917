/* The SQLite schema, as numbered migrations embedded at build time from schema/NNN_*.sql. */
#ifndef NQ_MIGRATIONS_H
#define NQ_MIGRATIONS_H

typedef struct {
    int version;        /* NNN of the file name */
    const char *name;   /* file name, for messages */
    const char *sql;
} nq_migration_t;

extern const nq_migration_t nq_migrations[];   /* ascending version */
extern const int nq_migrations_count;

#endif
