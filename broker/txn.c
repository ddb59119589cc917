/*
 * The loop's transactions: the group every write of a round rides (one commit, then the ACKs:
 * results.c), a client's write in a transaction of its own, and the check that the DB file is
 * still the one opened, which comes before every commit.
 */
#include "broker_impl.h"
#include "errf.h"
#include "log.h"

void txn_begin(nq_broker_t *b)
{
    if (b->txn_open || !b->store_ok)
        return;
    if (store_begin(b->store) == 0) {
        b->txn_open = 1;
        b->txn_since = b->now;
        b->txn_changes = sqlite3_total_changes64(store_db(b->store));
    }
}

/* An open group that wrote nothing is closed before the loop waits: BEGIN IMMEDIATE holds
   SQLite's write lock, and an idle broker must not keep `nq export --manifest`, `sqlite3` or a
   backup from writing. Reopening costs no fsync. */
void txn_end_idle(nq_broker_t *b)
{
    store_rollback(b->store);
    b->txn_open = 0;
}

/* Has the open group written anything? An idle broker then sleeps instead of committing nothing. */
int txn_dirty(nq_broker_t *b)
{
    return b->txn_open && (b->ngroup > 0 || sqlite3_total_changes64(store_db(b->store)) != b->txn_changes);
}

/*
 * A DB file removed (or replaced by a restore) under a running broker keeps taking its commits:
 * the unlinked inode accepts them, the broker acknowledges, workers drop their results, and
 * after a restart the jobs are gone. So before every commit, and every quarter second, the path
 * must still name the file opened; when it does not, the broker acknowledges nothing more and
 * stops with exit 3, and the workers keep what was not acknowledged.
 */
int txn_db_check(nq_broker_t *b)
{
    if (b->db_lost)
        return -1;
    if (store_file_check(b->store, b->db_lost_why, sizeof b->db_lost_why) == 0)
        return 0;
    b->db_lost = 1;
    char q[NQ_LOG_QLEN];
    nq_log(NQ_LOG_ERROR, "store.lost", "reason=%s action=\"nothing more is acknowledged; stopping, exit 3\"",
           nq_log_qs(q, sizeof q, b->db_lost_why));
    return -1;
}

/* A client's write (cancel, retry) in a transaction of its own, committed before the client hears
   it was done. The caller has committed the open group first (results_flush: its results were
   taken in order before the write); a store that cannot commit now refuses the write. A cancel
   once answered "cancelled" while its commit failed on a full disk, and the job ran again after a
   restart. */
int txn_write_begin(nq_broker_t *b, char *err, size_t errlen)
{
    if (txn_db_check(b) != 0)
        return nq_errf(err, errlen, "%s; nothing was changed", b->db_lost_why);
    if (!b->store_ok || b->txn_open)
        return nq_errf(err, errlen, "the store cannot commit now (see the broker's log: store.commit_failed); "
                       "nothing was changed, try again later");
    if (store_begin(b->store) != 0)
        return nq_errf(err, errlen, "the store cannot begin a transaction; nothing was changed");
    return 0;
}

int txn_write_end(nq_broker_t *b, int rc, char *err, size_t errlen)
{
    char why[300];
    if (rc != 0) {
        store_rollback(b->store);
        return nq_errf(err, errlen, "the store refused the change; nothing was changed");
    }
    if (txn_db_check(b) != 0) {
        store_rollback(b->store);
        return nq_errf(err, errlen, "%s; nothing was changed", b->db_lost_why);
    }
    if (store_commit(b->store, why, sizeof why) != 0)
        return nq_errf(err, errlen, "%s", why);
    return 0;
}
