#!/bin/sh
# Creates the Secret nq-keys that broker.yaml and worker.yaml mount, from
# fresh 'nq keygen' key pairs made in a private temporary directory.
#   sh deploy/k8s/secret-example.sh [NAMESPACE]
set -eu
ns=${1:-default}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
(cd "$dir" && nq keygen broker && nq keygen worker)
kubectl --namespace "$ns" create secret generic nq-keys \
    --from-file=broker.key="$dir/broker.key" --from-file=broker.pub="$dir/broker.pub" \
    --from-file=worker.key="$dir/worker.key" --from-file=worker.pub="$dir/worker.pub"
echo "secret nq-keys created in namespace $ns; the key files were not kept on this machine"
