#!/bin/sh
# Makes the CURVE keys compose.yaml expects (./keys/broker.* and ./keys/worker.*)
# with the nq image itself, so nothing needs installing on the host.
set -eu
cd "$(dirname "$0")"
IMAGE=${NQ_IMAGE:-nq:latest}
mkdir -p keys
for name in broker worker; do
    if [ -e "keys/$name.key" ]; then
        echo "keys/$name.key exists, kept"
        continue
    fi
    docker run --rm --user "$(id -u):$(id -g)" -v "$PWD/keys:/keys" "$IMAGE" keygen "/keys/$name"
done
# The token that guards the broker's --http listener (Prometheus sends it; a browser gives
# it once as ?token=). Letters and digits only: it travels in URLs unescaped.
if [ ! -e keys/http.token ]; then
    od -An -tx1 -N24 /dev/urandom | tr -d ' \n' >keys/http.token
    chmod 600 keys/http.token
fi
# Compose bind-mounts file secrets with their host owner and mode, and the
# image runs as uid 10001: the secret keys must belong to that uid.
if [ "$(id -u)" = 0 ]; then
    chown 10001:10001 keys/broker.key keys/worker.key keys/http.token
else
    echo "now run: sudo chown 10001:10001 $PWD/keys/broker.key $PWD/keys/worker.key $PWD/keys/http.token"
fi
