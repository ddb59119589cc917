/* `nq export JOB --manifest FILE --db PATH`: the manifest of a done count job (export_manifest.c). */
#ifndef NQ_EXPORT_MANIFEST_H
#define NQ_EXPORT_MANIFEST_H

#include "cmd_args.h"

/* Writes a.manifest from the DB file a.client.db and keeps its root there; an exit code. */
int export_manifest(const nq_cmd_args_t *a);

#endif
