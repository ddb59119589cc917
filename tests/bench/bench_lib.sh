# Shared by the benchmark scripts here: source it, don't run it.
#   . "$(dirname "$0")/bench_lib.sh"

# The median of the numbers on stdin, one a line (the mean of the middle two for an even count).
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

# free_port: a TCP port nobody listens on, below the ephemeral range.
# shellcheck source=tests/tools/free_port.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tools/free_port.sh"

# wait_broker NQ EP: until the broker at control endpoint EP answers (30 s at most). A client is
# told at once when nothing listens yet, so a script waits for the broker before its first call.
wait_broker() {
    local i
    for i in $(seq 300); do "$1" list --broker "$2" >/dev/null 2>&1 && return 0; sleep 0.1; done
    echo "no broker answered at $2" >&2; return 1
}
