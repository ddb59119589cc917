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
# Compose bind-mounts file secrets with their host owner and mode, and the
# image runs as uid 10001: the secret keys must belong to that uid.
if [ "$(id -u)" = 0 ]; then
    chown 10001:10001 keys/broker.key keys/worker.key
else
    echo "now run: sudo chown 10001:10001 $PWD/keys/broker.key $PWD/keys/worker.key"
fi
