#!/bin/bash
# Static checks of everything under deploy/: YAML parses, the shell scripts
# are clean for ShellCheck, systemd units (the templates, filled in as for prefix /usr, with
# ExecStart pointed at the built binary) pass 'systemd-analyze verify', the Dockerfile's
# stages are well-formed, the man page renders without warnings. A missing tool skips its part, loudly.
set -u
SRC=${NQ_SOURCE_DIR:?NQ_SOURCE_DIR not set}
D=$SRC/deploy
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
skip() { echo "skipped: $*"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ---- YAML -----------------------------------------------------------------------------
mapfile -t yamls < <(find "$D" -name '*.yaml' -o -name '*.yml' | sort)
((${#yamls[@]} >= 3)) || fail "expected compose.yaml and the k8s manifests, found ${#yamls[@]} YAML files"
if command -v yamllint >/dev/null; then
    yamllint --strict -d '{extends: relaxed, rules: {line-length: {max: 120}}}' "${yamls[@]}" \
        || fail "yamllint"
elif python3 -c 'import yaml' 2>/dev/null; then
    for y in "${yamls[@]}"; do
        python3 -c 'import sys, yaml; list(yaml.safe_load_all(open(sys.argv[1])))' "$y" || fail "YAML $y"
    done
else
    skip "YAML: neither yamllint nor python3-yaml installed"
fi
# Every Kubernetes document names its apiVersion, kind and metadata.name.
for y in "$D"/k8s/*.yaml; do
    docs=$(grep -c '^kind:' "$y")
    [[ $docs -ge 1 && $(grep -c '^apiVersion:' "$y") -eq $docs ]] || fail "$y: apiVersion/kind per document"
done

# ---- shell scripts --------------------------------------------------------------------
mapfile -t scripts < <(find "$D" -type f \( -name '*.sh' -o -name '*.sbatch' \) | sort;
                       find "$D/debian" -type f | sort)
if command -v shellcheck >/dev/null; then
    shellcheck -x "${scripts[@]}" || fail "shellcheck"
else
    skip "shellcheck not installed"
fi
for s in "${scripts[@]}"; do
    [[ -x $s ]] || fail "$s is not executable"
    head -1 "$s" | grep -Eq '^#!(/bin/|/usr/bin/env )(ba)?sh$' || fail "$s: first line must start a POSIX shell or bash"
done

# ---- systemd units --------------------------------------------------------------------
if command -v systemd-analyze >/dev/null; then
    # verify checks that ExecStart's program exists: use the built nq, or /bin/true.
    exe=${NQ:-/bin/true}
    [[ -x $exe ]] || exe=/bin/true
    # the templates as `cmake --install --prefix /usr` fills them, but with that nq
    unit() { sed "s#@NQ_BINDIR@/nq#$exe#; s#@NQ_CONFDIR@#/etc/nq#g; s#@NQ_DOCDIR@#/usr/share/doc/nq#" "$1"; }
    unit "$D/systemd/nq-broker.service.in" > "$tmp/nq-broker.service"
    unit "$D/systemd/nq-worker@.service.in" > "$tmp/nq-worker@.service"
    unit "$D/systemd/nq-gpu-worker@.service.in" > "$tmp/nq-gpu-worker@.service"
    cp "$tmp/nq-worker@.service" "$tmp/nq-worker@broker.example.org.service"
    cp "$tmp/nq-gpu-worker@.service" "$tmp/nq-gpu-worker@broker.example.org.service"
    out=$(cd "$tmp" && systemd-analyze verify --man=no ./nq-broker.service \
          ./nq-worker@.service ./nq-worker@broker.example.org.service ./nq-gpu-worker@.service \
          ./nq-gpu-worker@broker.example.org.service 2>&1)
    rc=$?
    # Unknown keys and bad values are only warnings there: any output is a failure.
    [[ $rc -eq 0 && -z $out ]] || fail "systemd-analyze verify: $out"
    for u in nq-broker.service nq-worker@broker.example.org.service nq-gpu-worker@broker.example.org.service; do
        # Hardening: exposure 2.0 or less ('OK') in systemd's own scoring.
        if ! (cd "$tmp" && systemd-analyze security --offline=yes --threshold=20 "./$u" >/dev/null 2>&1); then
            fail "systemd-analyze security: $u is exposed more than 2.0"
        fi
    done
else
    skip "systemd units: systemd-analyze not installed"
fi
for u in "$D"/systemd/*.service.in; do
    for key in DynamicUser=yes ProtectSystem=strict ProtectHome=yes NoNewPrivileges=yes \
               PrivateTmp=yes Restart=on-failure KillSignal=SIGTERM TimeoutStopSec= EnvironmentFile=@NQ_CONFDIR@/ ExecStart=@NQ_BINDIR@/nq; do
        grep -q "^$key" "$u" || fail "$u lacks $key"
    done
done
grep -q '^StateDirectory=nq$' "$D/systemd/nq-broker.service.in" || fail "broker unit lacks StateDirectory=nq"

# ---- Dockerfile: named stages, FROM first, the run stage copies from the build stage ----
df=$D/container/Dockerfile
first=$(grep -v '^\s*#' "$df" | grep -v '^\s*$' | head -1)
[[ $first == FROM* ]] || fail "Dockerfile: first instruction is not FROM ($first)"
grep -q '^FROM debian:bookworm AS build$' "$df" || fail "Dockerfile: no 'FROM debian:bookworm AS build'"
grep -q '^FROM debian:bookworm-slim AS run$' "$df" || fail "Dockerfile: no 'FROM debian:bookworm-slim AS run'"
grep -q '^COPY --from=build ' "$df" || fail "Dockerfile: the run stage copies nothing from the build stage"
grep -q '^USER [1-9]' "$df" || fail "Dockerfile: no non-root USER"
bad=$(grep -Ev '^\s*(#|$)|^(FROM|RUN|COPY|WORKDIR|USER|ENV|EXPOSE|VOLUME|ENTRYPOINT|CMD|STOPSIGNAL|ARG|LABEL) |^\s+' "$df")
[[ -z $bad ]] || fail "Dockerfile: unknown instruction(s): $bad"
# Continuation lines end a RUN: the last line of every RUN block has no trailing backslash.
awk '/^[A-Z]+ /{if (cont) bad=1} {cont = /\\$/} END{exit (bad || cont)}' "$df" \
    || fail "Dockerfile: a line continuation runs into the next instruction"
# Every path the build stage COPYs exists in the repository.
while read -r _ path _; do
    [[ -e $SRC/$path ]] || fail "Dockerfile copies '$path', which does not exist"
done < <(grep '^COPY [^-]' "$df")
[[ -x $D/container/entrypoint.sh ]] || fail "entrypoint.sh is not executable"

# ---- man page -------------------------------------------------------------------------
if command -v groff >/dev/null; then
    out=$(groff -man -ww -z "$D/nq.1" 2>&1)
    [[ -z $out ]] || fail "groff warnings in nq.1: $out"
else
    skip "man page: groff not installed"
fi
for c in broker worker submit status list workers result run keygen; do
    grep -q "^\.B.* $c\b\|^\.B $c\$\|^\.BI \"$c \|^\.BR $c " "$D/nq.1" || fail "nq.1 does not document '$c'"
done

if ((fails)); then
    echo "$fails check(s) failed"
    exit 1
fi
echo "deploy lint: all checks passed"
