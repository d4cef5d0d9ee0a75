#!/bin/sh
# SPDX-License-Identifier: MIT
# perftest's atomics beside its Write and Read latency, in one run: ib_write_lat, ib_read_lat
# and ib_atomic_lat (8 B, typical latency in us) and ib_atomic_bw (million atomics a
# second), all with rdma_cm (-R), on this host over shm and over iwarp and, as root, between
# two network namespaces (iwarp); interleaved ROUNDS times, medians printed.
# Usage: bench/atomic_perftest.sh NETDIRECT_RUN [ROUNDS]
set -u
nd_run=$(realpath "$1")
rounds=${2:-3}
out=$(mktemp -d)
places="shm iwarp"
if [ "$(id -u)" = 0 ] && command -v ip > /dev/null; then
    . "$(dirname "$0")/../tests/netns_lib.sh"
    places="$places netns"
fi
trap 'rm -rf "$out"; [ -n "${ns_a:-}" ] && netns_cleanup' EXIT
port=$((28000 + $$ % 300 * 10))

# one PLACE PROGRAM: the figure the client reports (typical us, or Mpps for the bw test).
one() {
    port=$((port + 1))
    case $1 in
    netns) sin="ip netns exec $ns_a" cin="ip netns exec $ns_b" addr=198.51.100.1 tr=iwarp ;;
    *) sin= cin= addr=127.0.0.1 tr=$1 ;;
    esac
    case $2 in ib_atomic_*) size= ;; *) size="-s 8" ;; esac
    $sin timeout 60 "$nd_run" env ND_TRANSPORT=$tr "$2" -R $size -n 10000 -p $port > "$out/s" 2>&1 &
    i=0
    until $sin ss -Hltn "sport = :$port" | grep -q LISTEN || [ $i -ge 200 ]; do sleep 0.05; i=$((i + 1)); done
    $cin timeout 60 "$nd_run" env ND_TRANSPORT=$tr "$2" -R $size -n 10000 -p $port $addr > "$out/c" 2>&1
    wait
    # Latency rows: t_typical is the fifth column; the bandwidth row: the message rate.
    awk '$1 == 8 && $2 == 10000 { print $5 }' "$out/c"
}

for r in $(seq "$rounds"); do
    for place in $places; do
        for prog in ib_write_lat ib_read_lat ib_atomic_lat ib_atomic_bw; do
            echo "$place $prog $(one "$place" "$prog")" >> "$out/all"
        done
    done
done
med() { grep "^$1 $2 " "$out/all" | awk '{ print $3 }' | sort -g | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : "n/a" }'; }
echo "| place | ib_write_lat (us) | ib_read_lat (us) | ib_atomic_lat (us) | atomic/read | ib_atomic_bw (Mpps) |"
echo "|---|---|---|---|---|---|"
for place in $places; do
    w=$(med "$place" ib_write_lat) rd=$(med "$place" ib_read_lat) a=$(med "$place" ib_atomic_lat) b=$(med "$place" ib_atomic_bw)
    echo "| $place | $w | $rd | $a | $(awk -v a="$a" -v b="$rd" 'BEGIN { printf "%.2f", a / b }') | $b |"
done
