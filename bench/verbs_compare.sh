#!/bin/sh
# SPDX-License-Identifier: MIT
# The verbs drop-in against the ND API on the same transport, in one run, interleaved:
#   perftest ib_send_lat -R (8 B, its average half round trip, which --output=latency prints
#   with six decimals where its table has two) against nd_pingpong -S 8 (its mean
#   half round trip), and ib_write_bw -R (1 MiB, BW average) against nd_rping -w -S 1 MiB,
#   both at the same depth, on shm and on iwarp; medians of $RUNS runs, and the median of
#   the runs' ratios drop-in / ND, each of a pair run back to back (latency: lower is better;
#   bandwidth: higher is better).
# perftest enables inline data only on devices it lists by vendor, so nd_pingpong runs with -I
# (no inline) as well as with its usual inline Sends. Its own order re-posts a receive after
# the Send, off the round trip; ib_send_lat re-posts before it, then waits for the Send's
# completion. nd_pingpong -N -I -q 512 makes those calls in that order, with perftest's 512
# receives posted. Between a message's completion and its Send ib_send_lat also stores a
# time stamp and divides by its CQ moderation (tools/perftest_turn.h), which at a 0.2 us
# half round trip is a tenth of it: with -T nd_pingpong does that work too. That is the
# like-for-like run, whose ratio the bar is for; the row without -T shows the work's weight.
# bench/sw_verbs_pingpong -f makes ib_send_lat's calls through the drop-in with nothing of
# perftest's around them, against nd_pingpong -N without -T: the drop-in alone.
# Over shm a 1 MiB Write is one process_vm_writev into the target's buffer, whose speed is
# the pinning of its pages: nd_rping's buffer holds whole 2 MiB blocks, which netdirect
# collapses into huge pages after registration (docs/design-shm.md), and perftest's
# (2 MiB, page-aligned) does not. Over iwarp the pages count too, less: the engine threads
# copy between the socket and the buffers at both ends, through the TLB. Both run again
# with ND_MR_HUGE_PAGES=0, on the same 4 KiB pages: the like-for-like bandwidth pair, on
# either transport. Then the ND path's own instruction count
# per half round trip: bench/sw_pingpong under callgrind, of CG_BUILD (default: the build
# dir; a Release build is the meaningful one) and, with BASE_BUILD=<a build of the commit
# before the drop-in>, of that one beside it.
# Usage: bench/verbs_compare.sh [build-dir]   (RUNS=5 by default)
set -u
build=${1:-build}
RUNS=${RUNS:-5}
ITERS=100000
BW_ITERS=10000   # 1 MiB each: long enough (0.5 s on shm) that one scheduling hiccup does not decide a run
DEPTH=16
PORT_BASE=29000
. "$(dirname "$0")/lib.sh"
run="$build/tools/netdirect-run"
command -v ib_send_lat > /dev/null || { echo "perftest is not installed" >&2; exit 1; }

# perf_pair <transport> <program> <column> <args...>: one perftest run over the drop-in;
# prints the client's <column> of its result row, or with column 0 its one bare number.
perf_pair() {
    tr=$1 prog=$2 col=$3
    shift 3
    next_port
    ND_TRANSPORT=$tr "$run" "$prog" -R -p "$port" "$@" > /dev/null 2>&1 &
    wait_listen "$port" || { echo "$prog server did not listen" >&2; return 1; }
    ND_TRANSPORT=$tr "$run" "$prog" -R -p "$port" "$@" 127.0.0.1 2>/dev/null |
        awk -v c="$col" 'c == 0 && NF == 1 && $1 ~ /^[0-9.]+$/ { print $1 }
                         c > 0 && $1 ~ /^[0-9]+$/ && NF > 4 { print $c }'
    wait
}

# One measurement each (ND tool or drop-in) on transport $t; prints one number.
nd_lat() { ND_TRANSPORT=$t nd_pair nd_pingpong -S 8 -i "$ITERS" | field latency_us; }
nd_lat_noinl() { ND_SERVER_ARGS=-I ND_TRANSPORT=$t nd_pair nd_pingpong -S 8 -i "$ITERS" -I | field latency_us; }
nd_lat_same() {
    ND_SERVER_ARGS="-N -I -q 512" ND_TRANSPORT=$t nd_pair nd_pingpong -S 8 -i "$ITERS" -N -T -I -q 512 | field latency_us
}
nd_lat_calls() {
    ND_SERVER_ARGS="-N -I -q 512" ND_TRANSPORT=$t nd_pair nd_pingpong -S 8 -i "$ITERS" -N -I -q 512 | field latency_us
}
vb_lat() { perf_pair "$t" ib_send_lat 0 -s 8 -n "$ITERS" --output=latency; }
# The drop-in in perftest's call order with none of perftest's own work around the calls.
vb_lat_bare() { ND_TRANSPORT=$t "$build/bench/sw_verbs_pingpong" -f -I -i "$ITERS" --json | field latency_us; }
nd_bw() {
    ND_TRANSPORT=$t nd_pair nd_rping -w -S 1048576 -q "$DEPTH" -i "$BW_ITERS" | field bytes_per_sec |
        awk '{ print $1 / 1048576 }'
}
# BW average (MiB/s, perftest's MB) is the fourth column of ib_write_bw's row.
vb_bw() { perf_pair "$t" ib_write_bw 4 -s 1048576 -n "$BW_ITERS" -t "$DEPTH"; }
nd_bw_4k() { ND_MR_HUGE_PAGES=0 nd_bw; }
vb_bw_4k() { ND_MR_HUGE_PAGES=0 vb_bw; }

# run_ratio <ND figure> <drop-in figure>: one run's ratio drop-in / ND, with the precision a
# median of ratios needs (nothing for a run that failed).
run_ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.4f\n", b / a }'; }

# paired <key> <ND function> <drop-in function>: one run of each, back to back, the ND tool
# first in odd runs and second in even ones; keeps both figures and their ratio. The host
# moves the CPUs between runs by more than the gaps measured here, so a pair run together
# is what a ratio compares: the table's ratio is the median of the runs' ratios.
paired() {
    if [ $((r % 2)) -eq 1 ]; then
        a=$($2) b=$($3)
    else
        b=$($3) a=$($2)
    fi
    echo "$a" >> "$tmp/nd-$1"
    echo "$b" >> "$tmp/vb-$1"
    run_ratio "$a" "$b" >> "$tmp/ratio-$1"
}

for t in shm iwarp; do
    for r in $(seq "$RUNS"); do
        paired "lat-same-$t" nd_lat_same vb_lat
        paired "lat-bare-$t" nd_lat_calls vb_lat_bare
        # The other orders, against the drop-in's figure of this run; the ND tool without
        # perftest's work has just run, in the pair above.
        b=$(tail -n 1 "$tmp/vb-lat-same-$t")
        for v in lat_calls lat lat_noinl; do
            if [ "$v" = lat_calls ]; then a=$(tail -n 1 "$tmp/nd-lat-bare-$t"); else a=$(nd_$v); fi
            echo "$a" >> "$tmp/nd-$v-$t"
            run_ratio "$a" "$b" >> "$tmp/ratio-$v-$t"
        done
        paired "bw-$t" nd_bw vb_bw
        paired "bw-4k-$t" nd_bw_4k vb_bw_4k
    done
done

# cg_count <build> [program]: instructions per half round trip of sw_pingpong (or of
# <program>, say sw_verbs_pingpong), two runs' difference, so set-up and teardown cancel out.
cg_count() {
    for n in 2000 12000; do
        valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.$n" "$1/bench/${2:-sw_pingpong}" -i "$n" \
            > /dev/null 2>&1 || return 1
    done
    a=$(awk '/^summary:/ { print $2 }' "$tmp/cg.2000")
    b=$(awk '/^summary:/ { print $2 }' "$tmp/cg.12000")
    awk -v a="$a" -v b="$b" 'BEGIN { printf "%.0f", (b - a) / 10000 / 2 }'
}

echo "## The verbs drop-in against the ND API ($(date -u +%Y-%m-%d), $(nproc) CPUs, medians of $RUNS runs; ratio: the median of the runs' paired ratios)"
echo
echo "| transport | test | ND tool | drop-in (perftest -R) | ratio | bar |"
echo "|---|---|---|---|---|---|"
mratio() { median < "$tmp/ratio-$1" | awk '{ printf "%.2f", $1 }'; }
row() { echo "| $t | $2 | $(median < "$tmp/nd-$1") | $(median < "$tmp/vb-$1") | $(mratio "$1") | $3 |"; }
for t in shm iwarp; do
    row "lat-same-$t" "8 B half round trip (us): nd_pingpong -N -T -I -q 512 (perftest's calls, order and work per turn) / ib_send_lat average" "<= 1.10"
    echo "| $t | the same against nd_pingpong -N -I -q 512 (perftest's calls and order, not its work) | $(median < "$tmp/nd-lat_calls-$t") | | $(mratio "lat_calls-$t") | |"
    row "lat-bare-$t" "the drop-in alone: nd_pingpong -N -I -q 512 / sw_verbs_pingpong -f -I (perftest's calls and order, neither its work)" ""
    echo "| $t | the same against nd_pingpong (its own order: receive re-posted after the Send) | $(median < "$tmp/nd-lat-$t") | | $(mratio "lat-$t") | |"
    echo "| $t | the same against nd_pingpong -I (its own order, no inline) | $(median < "$tmp/nd-lat_noinl-$t") | | $(mratio "lat_noinl-$t") | |"
    row "bw-$t" "1 MiB Write bandwidth (MiB/s), depth $DEPTH: nd_rping -w / ib_write_bw" ""
    # A Write's speed is partly the buffers' page size (see above): the bar is for the
    # 4 KiB row, where both have the same pages.
    row "bw-4k-$t" "the same, both targets on 4 KiB pages (ND_MR_HUGE_PAGES=0)" ">= 0.95"
done
echo
if command -v valgrind > /dev/null; then
    now=$(cg_count "${CG_BUILD:-$build}")
    echo "sw_pingpong (shm, one process), instructions per half round trip under callgrind: $now (${CG_BUILD:-$build})"
    # The same turn through the drop-in (two CQs a side, as perftest): what the front end adds.
    vb=$(cg_count "${CG_BUILD:-$build}" sw_verbs_pingpong)
    echo "sw_verbs_pingpong (the same through verbs): $vb, $(ratio "$vb" "$now") of sw_pingpong"
    if [ -n "${BASE_BUILD:-}" ]; then
        base=$(cg_count "$BASE_BUILD")
        echo "against $base ($BASE_BUILD): $(ratio "$now" "$base")"
    fi
fi
