#!/bin/sh
# Container entrypoint of nq: picks the role from the first argument or NQ_ROLE,
# turns NQ_* environment variables into options, and execs nq (so nq is PID 1's
# child of tini, gets SIGTERM directly and exits 0 after a clean shutdown).
#
#   entrypoint.sh broker [EXTRA NQ OPTIONS...]   NQ_BIND NQ_DB NQ_CONTROL (ipc://NQ_DB.ctl) NQ_METRICS
#                                                NQ_KEY_FILE NQ_AUTHORIZED_KEYS NQ_CONTROL_KEYS NQ_INSECURE=1
#   entrypoint.sh worker [EXTRA NQ OPTIONS...]   NQ_CONNECT (required) NQ_THREADS
#                                                NQ_KEY_FILE NQ_BROKER_KEY_FILE
#                                                NQ_GPU=all (every GPU) or NQ_GPU=0,2 (those)
#   entrypoint.sh COMMAND [ARGS...]              any other nq command (submit, status, keygen...)
# Both roles: NQ_LOG_FORMAT (default json), NQ_LOG_LEVEL (default info).
# Keys come from files (container secrets); by default the ones under
# /run/secrets are used when present: nq.key, broker.pub, authorized_keys, control_keys.
set -eu

NQ_BIN=${NQ_BIN:-nq}
SECRETS=${NQ_SECRETS_DIR:-/run/secrets}

die() {
    echo "nq entrypoint: $*" >&2
    exit 2
}

# Prints PATH if set (then it must exist) or DEFAULT if that exists; else nothing.
key_path() {
    what=$1 path=$2 default=$3
    if [ -n "$path" ]; then
        [ -r "$path" ] || die "$what '$path' does not exist or is not readable"
        printf '%s\n' "$path"
    elif [ -e "$default" ]; then
        printf '%s\n' "$default"
    fi
}

broker() {
    key=$(key_path NQ_KEY_FILE "${NQ_KEY_FILE:-}" "$SECRETS/nq.key")
    auth=$(key_path NQ_AUTHORIZED_KEYS "${NQ_AUTHORIZED_KEYS:-}" "$SECRETS/authorized_keys")
    if [ -n "$key" ] && [ -z "$auth" ]; then
        die "the broker has a key but no NQ_AUTHORIZED_KEYS (the workers' public keys)"
    fi
    db=${NQ_DB:-/var/lib/nq/nq.db}
    # The control socket sits beside the database, where NQ_BROKER (set in the
    # image) points 'docker compose exec broker nq status' and the k8s probe.
    set -- --bind "${NQ_BIND:-tcp://0.0.0.0:7555}" --db "$db" \
        --control "${NQ_CONTROL:-ipc://$db.ctl}" "$@"
    [ -n "${NQ_METRICS:-}" ] && set -- "$@" --http "$NQ_METRICS"
    [ -n "$key" ] && set -- "$@" --key "$key" --authorized-keys "$auth"
    ctl=$(key_path NQ_CONTROL_KEYS "${NQ_CONTROL_KEYS:-}" "$SECRETS/control_keys")
    [ -n "$ctl" ] && set -- "$@" --control-keys "$ctl"
    case ${NQ_INSECURE:-0} in
        1|yes|true) set -- "$@" --insecure ;;
        0|no|false|'') ;;
        *) die "NQ_INSECURE must be 1 or 0 (got '$NQ_INSECURE')" ;;
    esac
    exec "$NQ_BIN" broker "$@" --log-format "${NQ_LOG_FORMAT:-json}" \
        --log-level "${NQ_LOG_LEVEL:-info}"
}

# NVIDIA's container toolkit mounts libnvidia-opencl.so.1 (capability compute) but, before its
# 2026-06 releases, no ICD file naming it: without one the loader finds no platform. Where no
# vendor file exists and the library does, write one to a folder of our own (the root file system
# may be read-only) and point OCL_ICD_VENDORS at it, as tests/gpu/device_check.sh does.
gpu_icd() {
    [ -n "${OCL_ICD_VENDORS:-}" ] && return 0
    ls /etc/OpenCL/vendors/*.icd >/dev/null 2>&1 && return 0
    for lib in /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 /usr/lib64/libnvidia-opencl.so.1 \
               /usr/local/nvidia/lib64/libnvidia-opencl.so.1 \
               /usr/lib/aarch64-linux-gnu/libnvidia-opencl.so.1; do
        [ -e "$lib" ] || continue
        dir=${TMPDIR:-/tmp}/nq-icd
        if ! mkdir -p "$dir" || ! printf '%s\n' "$lib" >"$dir/nvidia.icd"; then
            die "cannot write an ICD file in $dir"
        fi
        export OCL_ICD_VENDORS="$dir"
        return 0
    done
}

worker() {
    [ -n "${NQ_CONNECT:-}" ] || die "set NQ_CONNECT to the broker endpoint, e.g. tcp://broker:7555"
    key=$(key_path NQ_KEY_FILE "${NQ_KEY_FILE:-}" "$SECRETS/nq.key")
    bkey=$(key_path NQ_BROKER_KEY_FILE "${NQ_BROKER_KEY_FILE:-}" "$SECRETS/broker.pub")
    if { [ -n "$key" ] && [ -z "$bkey" ]; } || { [ -z "$key" ] && [ -n "$bkey" ]; }; then
        die "a worker needs both NQ_KEY_FILE and NQ_BROKER_KEY_FILE, or neither"
    fi
    set -- --connect "$NQ_CONNECT" "$@"
    [ -n "${NQ_THREADS:-}" ] && set -- "$@" --threads "$NQ_THREADS"
    [ -n "$key" ] && set -- "$@" --key "$key" --broker-key "$bkey"
    case ${NQ_GPU:-} in
        '') ;;
        all) gpu_icd; set -- "$@" --gpu all ;;
        *[!0-9,]*) die "NQ_GPU is all or device indices like 0,2 (got '$NQ_GPU')" ;;
        *) gpu_icd; set -- "$@" --gpu-device "$NQ_GPU" ;;
    esac
    exec "$NQ_BIN" worker "$@" --log-format "${NQ_LOG_FORMAT:-json}" \
        --log-level "${NQ_LOG_LEVEL:-info}"
}

role=${NQ_ROLE:-}
[ "${1:-}" = nq ] && shift           # 'docker run IMAGE nq status' reads naturally too
case ${1:-} in
    broker|worker) role=$1; shift ;;
    -*|'') ;;                         # options only: the role comes from NQ_ROLE
    *) exec "$NQ_BIN" "$@" ;;         # any other nq command: submit, status, keygen...
esac
case $role in
    broker) broker "$@" ;;
    worker) worker "$@" ;;
    '') [ $# -gt 0 ] && exec "$NQ_BIN" "$@"      # e.g. --help, --version
        die "no role: give 'broker', 'worker' or an nq command, or set NQ_ROLE" ;;
    *) die "NQ_ROLE must be broker or worker (got '$role')" ;;
esac
