#!/bin/sh
# SPDX-License-Identifier: MIT
# Waits for a CPU placement and measures in it. On this kind of host the two CPUs' distance
# changes by the minute (docs/performance.md, "CPU placement"): the raw spin's 8 B half round trip reads
# 0.035-0.045 us "near", 0.06-0.09 "mid", 0.2-0.5 "far", and a placement that fits a target
# may last a minute in an hour. Every $EVERY seconds a short raw spin says where the CPUs
# are; when it reads below the threshold, $ROUNDS interleaved rounds of the raw spin,
# netdirect shm (nd_pingpong, polling; then again with -P, a pause instruction after each
# empty poll, as the raw spin's loop has) and UCX posix (tag_lat) run at once, one line each;
# also the raw spin with its message in the sequence word's line (raw_shm_pingpong -1), the
# tighter floor. The placement classes are the two-line spin's (as everywhere in bench/).
# At the end: per placement class, the median of each round's ratios.
# Usage: bench/shm_watch.sh [build-dir] [minutes] [threshold-us]   (defaults: build 30 0.1)
set -u
build=${1:-build}
minutes=${2:-30}
threshold=${3:-0.1}
ROUNDS=${ROUNDS:-3}
EVERY=${EVERY:-20}
ITERS=${ITERS:-200000}
PORT_BASE=28500
. "$(dirname "$0")/lib.sh"

class() { awk -v s="$1" 'BEGIN { print s < 0.05 ? "near" : s < 0.1 ? "mid" : "far" }'; }

end=$(awk -v now="$(date +%s)" -v m="$minutes" 'BEGIN { printf "%d", now + m * 60 }')
echo "| time | raw spin (us) | one-line spin | placement | netdirect shm | with -P | UCX posix | netdirect / spin |" \
     "netdirect / one-line spin | -P / spin | netdirect / UCX |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
while [ "$(date +%s)" -lt "$end" ]; do
    probe=$(raw_spin 8 20000)
    if awk -v s="$probe" -v t="$threshold" 'BEGIN { exit !(s < t) }'; then
        for r in $(seq "$ROUNDS"); do
            spin=$(raw_spin 8 "$ITERS")
            spin1=$(raw_spin1 8 "$ITERS")
            nd=$(nd_pair nd_pingpong -S 8 -i "$ITERS" | field latency_us)
            ndp=$(ND_SERVER_ARGS=-P nd_pair nd_pingpong -S 8 -i "$ITERS" -P | field latency_us)
            ucx=$(ucx_run posix,self)
            [ -n "$ucx" ] || ucx=n/a
            c=$(class "$spin")
            echo "$c $(ratio "$nd" "$spin") $(ratio "$nd" "$ucx") $(ratio "$ndp" "$spin") $(ratio "$nd" "$spin1")" \
                >> "$tmp/rounds"
            echo "| $(date +%T) | $spin | $spin1 | $c | $nd | $ndp | $ucx | $(ratio "$nd" "$spin") |" \
                 "$(ratio "$nd" "$spin1") | $(ratio "$ndp" "$spin") | $(ratio "$nd" "$ucx") |"
        done
    fi
    sleep "$EVERY"
done
echo
echo "| placement | rounds | netdirect / spin (median) | netdirect / one-line spin | with -P / spin |" \
     "netdirect / UCX (median) |"
echo "|---|---|---|---|---|---|"
for c in near mid far; do
    n=$(awk -v c="$c" '$1 == c' "$tmp/rounds" 2>/dev/null | wc -l)
    [ "$n" -gt 0 ] || continue
    echo "| $c | $n | $(awk -v c="$c" '$1 == c { print $2 }' "$tmp/rounds" | median) |" \
         "$(awk -v c="$c" '$1 == c { print $5 }' "$tmp/rounds" | median) |" \
         "$(awk -v c="$c" '$1 == c { print $4 }' "$tmp/rounds" | median) |" \
         "$(awk -v c="$c" '$1 == c && $3 != "n/a" { print $3 }' "$tmp/rounds" | median) |"
done
