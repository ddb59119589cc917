/*
 * Usage texts of every command, in one place so `nq --help`, `nq help CMD`
 * and the docs stay in step. One entry per command: name, function,
 * summary, full usage.
 */
#ifndef NQ_USAGE_H
#define NQ_USAGE_H

#define NQ_COMMAND_TABLE \
    { "bench", cmd_bench, "run a kernel in-process and time it", \
      "usage: nq bench count N [--threads K] [--depth D] [--gpu [all] | --gpu-device I[,J...]|list]\n" \
      "                        [--gpu-kernel fast|parity] [--json]\n" \
      "       nq bench solve N [--seed S] [--algo NAME] [--out FILE] [--format text|bin] [--board] [--json]\n" \
      "\n" \
      "count: count all solutions of the N x N board (1 <= N <= 32) with K threads\n" \
      "       (default: all cores) pulling shards; prints total, unique, nodes, seconds, nodes/s.\n" \
      "       --depth D fixes rows 0..D-1 besides the border in each shard (0 = auto from N).\n" \
      "       --gpu counts on the first GPU through OpenCL (CUDA where NQ_GPU_CUDA names nq's\n" \
      "       libnq_cuda.so), --gpu all on every GPU; the threads feed them. A GPU only: a CPU\n" \
      "       OpenCL device (pocl) is refused (exit 3) unless named by --gpu-device I[,J...],\n" \
      "       which picks devices by index ('list' lists them).\n" \
      "       --gpu-kernel: fast (default; same results, nodes of its own) or parity (the\n" \
      "       CPU kernels' nodes too); NQ_GPU_KERNEL sets it as well.\n" \
      "solve: find one solution by local search (4 <= N <= 1e9 for qs4), verify it,\n" \
      "       print seconds and peak memory; --out writes it (text: one 0-based column per\n" \
      "       line; bin: compact binary). 'nq bench solve --algo list' lists the methods.\n" }, \
    { "estimate", cmd_estimate, "estimate the nodes and core-hours a count needs", \
      "usage: nq estimate count N [--sample K] [--node-sample M] [--paths P] [--seed S] [--depth D]\n" \
      "                           [--gpu [all] | --gpu-device I[,J...]|list] [--gpu-kernel fast|parity]\n" \
      "                           [--json]\n" \
      "\n" \
      "Nodes: random paths down the kernel's own search tree (P per shard, default 16)\n" \
      "of every shard, or of M shards drawn at random (default 100000), with a 95%\n" \
      "interval. Nodes do not depend on the machine or its load: plan with them.\n" \
      "Rate: K timed counts (default 200): whole shards where they are short, else Knuth\n" \
      "probes (a random shard and a few more random levels, counted whole); nodes/s is\n" \
      "their nodes over their CPU seconds, each weighted by its choices.\n" \
      "Core-hours = nodes / rate, the interval from both. When K covers every shard,\n" \
      "everything is counted and exact.\n" \
      "--seed S picks the samples (default 1); --depth D as for 'nq bench count'.\n" \
      "--gpu counts the timed sample on the GPU in one batch and gives GPU-hours: the\n" \
      "nodes over the GPU's nodes/s measured on that batch (--gpu all: every GPU together,\n" \
      "hours of the whole machine's GPUs; --gpu-device as for 'nq bench').\n" }, \
    { "verify", cmd_verify, "check a solution file", \
      "usage: nq verify FILE [--n N]\n" \
      "\n" \
      "Checks a solution file (text: one 0-based column per row; or nq's binary form).\n" \
      "Exit 0 when it is a valid N-Queens solution, 1 with the first clash otherwise.\n" \
      "--n N also requires the board size to be N.\n" }, \
    NQ_COMMAND_TABLE_DIST

/* Commands of the distributed system (broker/, worker/). */
#define NQ_CLIENT_OPTS \
    "  --broker EP        the broker's control endpoint (default: the broker of --db, else $NQ_BROKER,\n" \
    "                     else the broker of ./nq.db)\n" \
    "  --db PATH          ask the broker of this DB (it listens on ipc://PATH.ctl); with none running,\n" \
    "                     list, status, workers, result and export read the file. Each command says\n" \
    "                     on stderr which broker or DB answered\n" \
    "  --key F --broker-key F   CURVE: own key pair and the broker's public key\n" \
    "  --timeout S        seconds to wait for the broker (default 10; submit 60)\n"
#define NQ_JOB_OPTS \
    "  --depth D          count/enumerate: shard depth (default: chosen from N)\n" \
    "  --shard-seconds S  count: the depth whose shards take about S seconds on one\n" \
    "                     AVX-512 core (docs/campaign.md's planning table), instead of --depth\n" \
    "  --priority P       higher runs first (default 0)\n" \
    "  --max-attempts A   a shard that fails A times is FAILED (default 5)\n" \
    "  --quorum Q         results per shard that must agree (default 1)\n" \
    "  --verify-rate P    count: check about P of the results on another worker\n" \
    "                     (adaptive spot-checks; e.g. 0.02; default off). With --quorum 1 and\n" \
    "                     no --verify-rate, a lying worker's own shards can end wrong\n" \
    "                     (docs/security.md)\n" \
    "  solve only:\n" \
    "  --algo A[,B...]    method(s) (default qs4; 'nq bench solve --algo list')\n" \
    "  --restarts R       seeds S0..S0+R-1, one shard each (default 1)\n" \
    "  --seed S0          first seed (default 0)\n" \
    "  --solutions K      stop after K distinct solutions (default 1)\n" \
    "  --all              a study: run every seed, keep per-seed statistics\n" \
    "  --max-steps M      per-seed step limit (default: the method's)\n"
#define NQ_COMMAND_TABLE_DIST \
    { "run", cmd_run, "one machine: embedded broker + local workers", \
      "usage: nq run count|solve|enumerate N [--db PATH] [--workers K] [--json] [--fresh] [job options]\n" \
      "              [--http ADDR [--http-token-file F]]\n" \
      "              [--gpu [all] | --gpu-device I[,J...]|list] [--gpu-kernel fast|parity] [--gpu-only]\n" \
      "\n" \
      "Runs the job on this machine: the broker and K local worker threads (default: all\n" \
      "cores) in one process, results in the DB (default ./nq.db). A progress bar on stderr\n" \
      "when it is a terminal; the result on stdout. Ctrl-C, then the same command again,\n" \
      "resumes; for a finished job it prints the stored result at once (--fresh recomputes).\n" \
      "--http ADDR serves the web view while it runs (as nq broker does) and prints its URL.\n" \
      "--gpu counts on the first GPU through OpenCL (--gpu all: every GPU), fed by the K threads,\n" \
      "which count on the CPU too while the GPUs have enough to do (as nq worker --gpu); --gpu-only:\n" \
      "they only feed them. A CPU OpenCL device only by index (--gpu-device I, as nq worker).\n" \
      "Exit 0 done, 1 failed, 3 the GPU failed (run again to resume), 130 interrupted.\n\njob options:\n" \
      NQ_JOB_OPTS }, \
    { "broker", cmd_broker, "the long-running broker", \
      "usage: nq broker [--bind EP] [--control EP] [--db PATH] [--key F --authorized-keys F|DIR]\n" \
      "                 [--control-keys F|DIR] [--insecure] [--http ADDR [--http-token-file F]]\n" \
      "                 [--heartbeat-ms MS]\n" \
      "                 [--liveness K]\n" \
      "                 [--stall-timeout S] [--grace S] [--max-job-shards K] [--max-store-shards K]\n" \
      "                 [--log-format text|json] [--log-level L]\n" \
      "\n" \
      "  --bind EP          worker endpoint (default tcp://127.0.0.1:7555)\n" \
      "  --control EP       client endpoint (default ipc://DB.ctl beside the DB, DB as an absolute path;\n" \
      "                     a path too long for a unix socket: $XDG_RUNTIME_DIR or /tmp/nq-HASH.ctl)\n" \
      "  --db PATH          the store (default ./nq.db); restarting on it resumes every job\n" \
      "  --key F            the broker's key pair (nq keygen): CURVE on the worker endpoint\n" \
      "  --authorized-keys  the workers' allow-list: a file of public keys or a folder of *.pub\n" \
      "  --control-keys F   the clients' allow-list, apart from the workers' (no key in both):\n" \
      "                     needed with --key when --control is off loopback\n" \
      "  --insecure         allow a non-loopback --bind without keys\n" \
      "  --http ADDR        the web view at http://ADDR/ (jobs, workers, /api/...) and Prometheus\n" \
      "                     metrics at /metrics; loopback only, unless a token guards it\n" \
      "  --http-token-file F  every request must carry this token (Authorization: Bearer, or\n" \
      "                     ?token= once in a browser); required for a non-loopback ADDR\n" \
      "  --heartbeat-ms MS  heartbeat interval (default 1000); --liveness K: dead after K missed (4)\n" \
      "  --stall-timeout S  a shard whose progress stops for S seconds is re-leased (120; 0 = off)\n" \
      "  --grace S          after a restart, leased shards wait S seconds for their worker (10)\n" \
      "  --max-job-shards K refuse a submit of more than K shards (20000000: every count job\n" \
      "                     at its default depth fits; N=28 has 17.5M), before writing a row\n" \
      "  --max-store-shards K  refuse one that takes the shards of all pending and running\n" \
      "                     jobs past K (50000000)\n" }, \
    { "worker", cmd_worker, "run shards for a broker", \
      "usage: nq worker [--connect EP] [--threads K] [--prefetch P] [--key F --broker-key F] [--id ID]\n" \
      "                 [--gpu [all] | --gpu-device I[,J...]|list] [--gpu-kernel fast|parity]\n" \
      "                 [--gpu-only] [--log-format text|json] [--log-level L]\n" \
      "\n" \
      "  --connect EP       the broker's worker endpoint (default tcp://127.0.0.1:7555)\n" \
      "  --threads K        compute threads (default: all cores)\n" \
      "  --prefetch P       shards queued beyond the running ones (default: one a thread, and\n" \
      "                     what the threads finish in a round trip to the broker)\n" \
      "  --gpu              count on the first GPU through OpenCL; the threads feed it (as many as it\n" \
      "                     needs) and count on the CPU while it holds a second of work; it asks for\n" \
      "                     shards to fill the device, then for what its measured rate keeps busy.\n" \
      "                     A GPU only: with no GPU (only CPU OpenCL devices, as pocl) it says\n" \
      "                     which devices it found and exits 3.\n" \
      "  --gpu all          every GPU of the machine, one engine each, fed the hungriest first; a\n" \
      "                     device that fails has its shards counted again by the others or the\n" \
      "                     CPU. When the last GPU fails, its shards are reported as errors (others\n" \
      "                     recount them), those on the CPU finish, and it exits 3.\n" \
      "  --gpu-only         the threads only feed the GPUs, counting nothing on the CPU\n" \
      "  --gpu-device I[,J...]  the OpenCL devices to use, by index, a CPU device too ('list'\n" \
      "                     lists them; default: the first GPU)\n" \
      "  --gpu-kernel K     fast (default: same counts, nodes of its own) or parity (the CPU\n" \
      "                     kernels' nodes too, at about half the speed)\n" \
      "SIGTERM: stop taking work, hand back what is held, exit 0.\n" }, \
    { "submit", cmd_submit, "submit a job to the broker; prints its id", \
      "usage: nq submit count|solve|enumerate N [job options] [--json] [connection options]\n\njob options:\n" \
      NQ_JOB_OPTS "connection options:\n" NQ_CLIENT_OPTS }, \
    { "status", cmd_status, "progress of one job or all", \
      "usage: nq status [JOB] [--watch] [--json] [--db PATH] [connection options]\n" \
      "  --watch            refresh every second until the job ends\n" NQ_CLIENT_OPTS }, \
    { "list", cmd_list, "every job", \
      "usage: nq list [--json] [--db PATH] [connection options]\n" NQ_CLIENT_OPTS }, \
    { "workers", cmd_workers, "workers seen, their rates and flags", \
      "usage: nq workers [--json] [--db PATH] [connection options]\n" NQ_CLIENT_OPTS }, \
    { "result", cmd_result, "a job's answer", \
      "usage: nq result JOB [--json] [--db PATH] [--out FILE [--format text|bin]] [--board]\n" \
      "  --out FILE         solve: write the first solution (text or bin)\n" \
      "  --board            solve: draw the board (N <= 64)\n" NQ_CLIENT_OPTS }, \
    { "cancel", cmd_cancel, "cancel a job (nq retry resumes it)", \
      "usage: nq cancel JOB [connection options]\n" \
      "  stops handing out the job's shards; what is done stays, and nq retry JOB resumes it\n" \
      NQ_CLIENT_OPTS }, \
    { "retry", cmd_retry, "run a failed or cancelled job again", \
      "usage: nq retry JOB [connection options]\n" \
      "  puts the job's failed shards back to pending and runs it: a failed job runs its quorum\n" \
      "  and checks again, and a cancelled one resumes where it stopped (there is no other way to\n" \
      "  resume it). Done shards are kept; a done job is refused.\n" NQ_CLIENT_OPTS }, \
    { "export", cmd_export, "stream a job's rows", \
      "usage: nq export JOB [--format csv|json] [--unique] [--db PATH] [connection options]\n" \
      "       nq export JOB --manifest FILE --db PATH\n" \
      "  count: one row per shard; solve: one row per seed; enumerate: one row per solution\n" \
      "  --manifest FILE    a done count job: every subtotal with a hash tree (nq audit FILE\n" \
      "                     checks it); its root is kept in the DB and shown by nq result\n" \
      "  --unique           enumerate: one representative per symmetry class\n" NQ_CLIENT_OPTS }, \
    { "check", cmd_check, "check a store: every page, every job's sums, every stored solution", \
      "usage: nq check [JOB] --db PATH\n" \
      "\n" \
      "The auditor's check, on the DB file (the broker may be running): SQLite's page check,\n" \
      "then for every job (or JOB) the counts and 128-bit sums kept in its row recomputed\n" \
      "from its shard rows, each done shard's residues against its total, and every stored\n" \
      "solution (in the DB, or in PATH.solutions/) against its hash.\n" \
      "Exit 0 all agree, 1 a disagreement, a damaged page or a missing or damaged solution\n" \
      "(each printed), 2 usage, 3 I/O.\n" }, \
    { "backup", cmd_backup, "copy a store while the broker runs", \
      "usage: nq backup --db PATH OUT\n" \
      "\n" \
      "Writes a compact, consistent copy of the store to OUT (which must not exist) in one\n" \
      "read transaction (VACUUM INTO): the broker keeps writing meanwhile. The solution files\n" \
      "the copy names (PATH.solutions/) go to OUT.solutions/, each checked against its hash;\n" \
      "the copy is page-checked before it is reported. Restore: stop the broker, move OUT and\n" \
      "OUT.solutions/ to PATH and PATH.solutions/.\n" }, \
    { "audit", cmd_audit, "check a job's manifest and count some of its shards again", \
      "usage: nq audit FILE [--sample K | --catch P%] [--seed S] [--shards A-B] [--threads T]\n" \
      "\n" \
      "Checks a manifest (nq export JOB --manifest FILE) with only the file and this program:\n" \
      "its hash tree against its root line, every descriptor against the job's shard list,\n" \
      "every shard's residues against its total and its total, unique and nodes against what\n" \
      "a count of its shard can give, the 128-bit sums against the header; then counts shards\n" \
      "again with the kernel, and says which agree: first the marked lines (those the checks\n" \
      "refuted, those with evidence against a late result and those a tail copy decided\n" \
      "without its holder, up to K of each mark), then K drawn at random.\n" \
      "  --sample K         draw K shards at random to count again (default 10; 0 = none), on\n" \
      "                     top of the marked lines\n" \
      "  --catch P%         draw the sample that catches a manifest with P % of its lines wrong\n" \
      "                     with probability 0.99 (1% draws 459, whatever the file's size); the\n" \
      "                     audit prints that share for every sample it draws\n" \
      "  --seed S           the draw's seed (default: a secure random one, printed): the same\n" \
      "                     seed, the same shards\n" \
      "  --shards A-B       count shards A to B instead (0-based, as in the file)\n" \
      "  --threads T        counting threads (default: all cores)\n" \
      "Exit 0 all agree, 1 a disagreement or a malformed file (named by line), 2 usage,\n" \
      "3 the file cannot be read.\n" }, \
    { "keygen", cmd_keygen, "make a CURVE key pair", \
      "usage: nq keygen NAME\n\nWrites NAME.key (secret, mode 0600) and NAME.pub (public, Z85).\n" },

#endif
