#!/bin/sh
# SPDX-License-Identifier: MIT
# UCX between two network namespaces joined by a veth pair, in one run: ucx_perftest's
# tag_lat (8 B) and tag_bw (1 MiB) over UCX_TLS=rc on netdirect's nd0 (rc_verbs over iwarp,
# ud_verbs for wire-up) and over UCX_TLS=tcp on the veth, interleaved ROUNDS times; prints
# each figure's median and the ratios rc/tcp. Needs root (namespaces) and ucx-utils.
# Usage: bench/ucx_netns.sh NETDIRECT_RUN [ROUNDS]
set -u
nd_run=$(realpath "$1")
rounds=${2:-5}
. "$(dirname "$0")/../tests/netns_lib.sh"
port=$((35000 + $$ % 500 * 10))
out=$(mktemp -d)
trap 'rm -rf "$out"; netns_cleanup' EXIT

# one TLS TEST SIZE: the figure ucx_perftest reports (median latency, or average MB/s).
one() {
    port=$((port + 1))
    if [ "$1" = tcp ]; then da=UCX_NET_DEVICES=va$$ db=UCX_NET_DEVICES=vb$$; else da=UCX_NET_DEVICES=nd0:1 db=$da; fi
    ip netns exec "$ns_a" env "$da" UCX_TLS="$1" timeout 120 "$nd_run" ucx_perftest -p $port > "$out/s" 2>&1 &
    i=0
    until ip netns exec "$ns_a" ss -Hltn "sport = :$port" | grep -q LISTEN || [ $i -ge 100 ]; do sleep 0.05; i=$((i + 1)); done
    ip netns exec "$ns_b" env "$db" UCX_TLS="$1" timeout 120 "$nd_run" ucx_perftest -p $port -t "$2" -s "$3" \
        -n "$4" 198.51.100.1 > "$out/c" 2>&1
    wait
    awk -v t="$2" '/Final:/ { print (t == "tag_lat" ? $3 : $6) }' "$out/c"
}

for r in $(seq "$rounds"); do
    for tls in rc tcp; do
        echo "$tls lat $(one $tls tag_lat 8 20000)" >> "$out/all"
        echo "$tls bw $(one $tls tag_bw 1048576 300)" >> "$out/all"
    done
done
med() { grep "^$1 $2 " "$out/all" | awk '{ print $3 }' | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
rl=$(med rc lat) tl=$(med tcp lat) rb=$(med rc bw) tb=$(med tcp bw)
echo "tag_lat 8 B (us, median of $rounds): rc $rl, tcp $tl, rc/tcp $(echo "$rl $tl" | awk '{ printf "%.2f", $1 / $2 }')"
echo "tag_bw 1 MiB (MB/s, median of $rounds): rc $rb, tcp $tb, rc/tcp $(echo "$rb $tb" | awk '{ printf "%.2f", $1 / $2 }')"
