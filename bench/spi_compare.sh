#!/bin/sh
# SPDX-License-Identifier: MIT
# The ND SDK's ndpingpong / ndrpingpong (built unchanged on the SPI by scripts/nd-sdk-build.sh)
# against netdirect's own nd_pingpong / nd_rpingpong, polling, one host, interleaved in one
# run, each tool in the SDK program's order of calls (nd_pingpong -N, nd_rpingpong -W), so
# that the difference is the SPI's: median half round trip of $RUNS runs each, for 8 B and 64 B, on shm and on iwarp,
# and the ratio SDK / ND. The SDK programs sweep every size from 1 B to 4 MiB; their 8 B and
# 64 B rows are taken. ndrpingpong prints the whole round trip (ndpingpong and both of ours
# print half of it): its figure is halved here. ndrpingpong runs on shm only: it reads its
# memory without polling, so over iwarp each Write waits for the receiving process's
# progress thread to get a CPU from the spinning threads (nd_rpingpong -W shows the same),
# and its 1.5 million round trips do not finish on a small host.
# Usage: bench/spi_compare.sh SDK_BIN_DIR [build-dir]
set -u
sdk=$1
build=${2:-build}
RUNS=${RUNS:-5}
ITERS=100000              # the SDK programs' x_MaxIterations, so both do as many round trips
PORT_BASE=30500
. "$(dirname "$0")/lib.sh"

# sdk_pair <program> <transport> <divisor>: one SDK run; prints "<size> <half round trip us>"
# for 8 and 64.
sdk_pair() {
    next_port
    ND_TRANSPORT=$2 "$sdk/$1" -s -p "127.0.0.1:$port" > /dev/null 2>&1 &
    wait_listen "$port" || { echo "$1 server did not listen" >&2; return 1; }
    ND_TRANSPORT=$2 "$sdk/$1" -c -p "127.0.0.1:$port" 2>/dev/null |
        awk -v d="$3" '$1 == "8l" || $1 == "64l" { print $1 + 0, $3 / d }'
    wait
}

# nd_run <tool> <transport> <size> [options]: netdirect's tool, as many round trips.
nd_run() {
    tool=$1 tr=$2 size=$3
    shift 3
    ND_TRANSPORT=$tr nd_pair "$tool" -S "$size" -i "$ITERS" "$@" | field latency_us
}

# nd_pingpong -N sweeps the sizes as ndpingpong does (1 B up to 64 B here), on queues as
# deep as ndpingpong's: its 64 B row is then the first lap of the message slots for both.
nd_sweep() {   # transport
    next_port
    ND_TRANSPORT=$1 "$build/tools/nd_pingpong" -s "127.0.0.1:$port" -N 2>/dev/null &
    wait_listen "$port" || { echo "nd_pingpong server did not listen" >&2; return 1; }
    ND_TRANSPORT=$1 "$build/tools/nd_pingpong" -c "127.0.0.1:$port" -p -N -a -M 64 -i "$ITERS" --json
    wait
}

for t in shm iwarp; do
    for r in $(seq "$RUNS"); do
        nd_sweep "$t" > "$tmp/out"
        for s in 8 64; do
            grep "\"size\":$s," "$tmp/out" | field latency_us >> "$tmp/nd-pp-$t-$s"
            [ "$t" = shm ] && nd_run nd_rpingpong "$t" "$s" -W >> "$tmp/nd-rpp-$t-$s"
        done
        sdk_pair ndpingpong "$t" 1 > "$tmp/out"
        for s in 8 64; do awk -v s="$s" '$1 == s { print $2 }' "$tmp/out" >> "$tmp/sdk-pp-$t-$s"; done
        [ "$t" = shm ] || continue
        sdk_pair ndrpingpong "$t" 2 > "$tmp/out"
        for s in 8 64; do awk -v s="$s" '$1 == s { print $2 }' "$tmp/out" >> "$tmp/sdk-rpp-$t-$s"; done
    done
done

echo "## ND SDK programs on the SPI against netdirect's tools ($(date -u +%Y-%m-%d), $(nproc) CPUs, medians of $RUNS interleaved runs)"
echo
echo "| transport | test | size | ND tool (us) | SDK program (us) | SDK / ND |"
echo "|---|---|---|---|---|---|"
for t in shm iwarp; do
    for p in pp rpp; do
        [ "$p" = rpp ] && [ "$t" != shm ] && continue
        case $p in pp) name="nd_pingpong -N / ndpingpong" ;; *) name="nd_rpingpong -W / ndrpingpong" ;; esac
        for s in 8 64; do
            a=$(median < "$tmp/nd-$p-$t-$s")
            b=$(median < "$tmp/sdk-$p-$t-$s")
            echo "| $t | $name | $s B | $a | $b | $(ratio "$b" "$a") |"
        done
    done
done
