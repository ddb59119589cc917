/*
 * The control endpoint a DB's broker listens on when none is named: a unix socket beside the DB
 * (ipc://<absolute DB path>.ctl), so that every DB on a machine has its own, and a client that
 * names a DB (or stands beside ./nq.db) reaches that DB's broker and no other. A path too long
 * for a unix socket (sun_path: 107 bytes) gets one in $XDG_RUNTIME_DIR (else /tmp) named by a
 * hash of the DB's absolute path; both sides compute the same name.
 */
#ifndef NQ_CONTROL_EP_H
#define NQ_CONTROL_EP_H

#include <stddef.h>

/* The default control endpoint of the DB at db_path (which need not exist yet; its folder
   should) into out: 0, or -1 with err. */
int control_ep_for_db(const char *db_path, char *out, size_t len, char *err, size_t errlen);

/* For an ipc:// endpoint: 1 when something accepts a connection on its socket now, 0 when
   nothing does (no file, or a file left by a broker that died: refused at once). -1 for any
   other endpoint (only a try tells). */
int control_ep_listens(const char *ep);

#endif
