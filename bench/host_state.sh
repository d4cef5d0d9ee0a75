#!/bin/sh
# SPDX-License-Identifier: MIT
# How this VM's two CPUs sit relative to each other changes while it runs: at times a cache
# line moves between them in ~35 ns ("near"), at times in ~210 ns ("far"), and every
# cross-CPU figure moves with it (loopback TCP included). Each round here first takes the
# raw shared-memory spin (the state), then the ping-pongs and 1 MiB streams, so each ratio compares figures
# taken in one state (the spin is taken again at the end: a round whose state changed on the
# way is left out); the summary gives per-state medians of the per-round ratios.
#   bench/host_state.sh [build-dir]        ROUNDS=20 by default
set -u
build=${1:-build}
ROUNDS=${ROUNDS:-20}
ITERS=${ITERS:-200000}
TCP_ITERS=${TCP_ITERS:-30000}
PORT_BASE=28500
. "$(dirname "$0")/lib.sh"

spin() { raw_spin "$1" "$ITERS"; }
tcp() { "$build/bench/raw_tcp" pingpong -S "$1" -i "$2" | field half_rtt_us; }
nd() {  # <transport> <size> <iterations>
    ND_TRANSPORT=$1 nd_pair nd_pingpong -p -S "$2" -i "$3" | field latency_us
}
stream() { "$build/bench/raw_tcp" stream -S 1048576 -t 1 | field bytes_per_s; }
nd_bw() { ND_TRANSPORT=iwarp nd_pair "$@" -S 1048576 | field bytes_per_sec; }   # <tool> [-w]

for r in $(seq "$ROUNDS"); do
    s8=$(spin 8)
    n8=$(nd shm 8 "$ITERS")
    t8=$(tcp 8 "$TCP_ITERS")
    i8=$(nd iwarp 8 "$TCP_ITERS")
    t64=$(tcp 65536 3000)
    i64=$(nd iwarp 65536 3000)
    up=$(ITERS=$TCP_ITERS ucx_run posix,self); ut=$(ITERS=$TCP_ITERS ucx_run tcp,self)
    bs=$(stream); bw=$(nd_bw nd_rping -w); bsend=$(nd_bw nd_ping)
    s8b=$(spin 8)
    # A round whose placement changed on the way (the spins disagree) is left out.
    state=$(awk -v s="$s8" -v t="$s8b" 'BEGIN { print (s < 0.1 && t < 0.1 ? "near" : s >= 0.1 && t >= 0.1 ? "far" : "mixed") }')
    echo "$state $s8 $n8 $t8 $i8 $t64 $i64 ${up:-0} ${ut:-0} $bs $bw $bsend" >> "$tmp/rounds"
done

echo "## Host state: figures grouped by CPU placement ($(date -u +%Y-%m-%d), $ROUNDS rounds)"
echo
echo "Per-state medians; ratios are medians of the per-round ratios (both figures of a ratio come"
echo "from one round). near: the raw spin's half round trip under 0.1 us; far: above."
echo
for st in near far; do
    grep "^$st " "$tmp/rounds" > "$tmp/$st" || : > "$tmp/$st"
    echo "$st $(wc -l < "$tmp/$st")" >> "$tmp/counts"
done
col() { awk -v c="$2" '$c > 0 { print $c }' "$tmp/$1" | median; }
rat() { awk -v a="$2" -v b="$3" '$a > 0 && $b > 0 { printf "%.4f\n", $a / $b }' "$tmp/$1" | median; }
row() {  # <label> <kind: col|rat> <fields...>
    label=$1; kind=$2; shift 2
    echo "| $label | $($kind near "$@") | $($kind far "$@") |"
}
echo "| (us, or ratio) | near ($(awk '$1 == "near" { print $2 }' "$tmp/counts") rounds) | far ($(awk '$1 == "far" { print $2 }' "$tmp/counts") rounds) |"
echo "|---|---|---|"
row "raw shared-memory spin, 8 B" col 2
row "netdirect shm, 8 B" col 3
row "**shm / raw spin**" rat 3 2
row "ucx_perftest tag_lat posix, 8 B" col 8
row "**shm / UCX posix**" rat 3 8
row "raw TCP busy-poll, 8 B" col 4
row "netdirect iwarp, 8 B" col 5
row "**iwarp / raw TCP, 8 B**" rat 5 4
row "ucx_perftest tag_lat tcp, 8 B" col 9
row "**iwarp / UCX tcp**" rat 5 9
row "raw TCP busy-poll, 64 KiB" col 6
row "netdirect iwarp, 64 KiB" col 7
row "**iwarp / raw TCP, 64 KiB**" rat 7 6
gb() { awk -v c="$2" '$c > 0 { printf "%.2f\n", $c / 1e9 }' "$tmp/$1" | median; }
row "raw TCP stream, 1 MiB (GB/s)" gb 10
row "netdirect iwarp RDMA Write, 1 MiB (GB/s)" gb 11
row "**iwarp Write / raw TCP stream**" rat 11 10
row "netdirect iwarp Send, 1 MiB (GB/s)" gb 12
row "**iwarp Send / raw TCP stream**" rat 12 10
echo
echo "Rounds (state (mixed: left out), raw spin, shm, raw TCP 8 B, iwarp 8 B, raw TCP 64 KiB, iwarp 64 KiB, UCX posix, UCX tcp (0: not installed), then 1 MiB streams in bytes/s: raw TCP, iwarp Write, iwarp Send):"
echo
sed 's/^/    /' "$tmp/rounds"
