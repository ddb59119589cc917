# free_port: a TCP port nobody listens on, for a test or a benchmark to bind. Source it.
# Random below the kernel's ephemeral range, where no outgoing connection takes its local port:
# 20000-49999, as the scripts once drew, overlapped that range, and a port nobody listened on
# could still be a connection's local end (Prometheus once failed to bind one; a benchmark's
# broker once could not bind and its script waited for it for good).
free_port() {
    local p lo=32768
    read -r lo _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null
    [ "$lo" -gt 11000 ] 2>/dev/null || lo=32768
    for _ in $(seq 50); do
        p=$((10000 + RANDOM % (lo - 10000)))
        (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null || { echo "$p"; return; }
    done
    echo 29999
}
