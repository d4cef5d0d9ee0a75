#!/bin/sh
# SPDX-License-Identifier: MIT
# A against B: the same netdirect tools run against two builds (say, before and after a
# change), rounds interleaved so that the host's drift (CPU placement) hits both alike.
# Prints, per case, the median of each build over $RUNS rounds and B/A; lower is better
# for latency (us), higher for bandwidth (MB/s) and rates. Writes nothing else.
# Usage: bench/ab.sh BUILD_A BUILD_B      (each a build directory with tools/ built)
set -u
cd "$(dirname "$0")/.."
[ $# -eq 2 ] || { echo "usage: $0 BUILD_A BUILD_B" >&2; exit 2; }
A=$1
B=$2
RUNS=${RUNS:-7}
ITERS=${ITERS:-20000}
PORT_BASE=26000    # below the ephemeral range: nd_conn's thousands of connections leave ports in TIME_WAIT
build=$A
. bench/lib.sh

# case: name|transport|tool|field|tool arguments
cases='lat 8 B send, polling|shm|nd_pingpong|latency_us|-p -S 8
lat 4 KiB send, polling|shm|nd_pingpong|latency_us|-p -S 4096
lat 64 B write, polling|shm|nd_rpingpong|latency_us|-S 64
bw 64 KiB send|shm|nd_ping|bytes_per_sec|-p -S 65536
bw 1 MiB write|shm|nd_rping|bytes_per_sec|-w -p -S 1048576
lat 8 B send, polling|iwarp|nd_pingpong|latency_us|-p -S 8
lat 64 B write, polling|iwarp|nd_rpingpong|latency_us|-S 64
bw 1 MiB send|iwarp|nd_ping|bytes_per_sec|-p -S 1048576
bw 1 MiB write|iwarp|nd_rping|bytes_per_sec|-w -p -S 1048576
rate connections/s|iwarp|nd_conn|per_second|-d 2'

one() {  # <build> <transport> <tool> <field> <args...>
    b=$1 tr=$2 tool=$3 f=$4
    shift 4
    next_port
    ND_TRANSPORT=$tr "$b/tools/$tool" -s "127.0.0.1:$port" 2> /dev/null &
    server=$!
    if [ "$tool" = nd_conn ]; then     # timed by its -d; its server runs until stopped
        ND_TRANSPORT=$tr "$b/tools/$tool" -c "127.0.0.1:$port" "$@" --json 2> /dev/null | tail -1 | field "$f"
        kill "$server"
    else
        ND_TRANSPORT=$tr "$b/tools/$tool" -c "127.0.0.1:$port" "$@" -i "$ITERS" --json 2> /dev/null | tail -1 |
            field "$f"
    fi
    wait "$server" 2> /dev/null
}

echo "$cases" > "$tmp/cases"
r=0
while [ "$r" -lt "$RUNS" ]; do
    i=0
    while IFS='|' read -r name tr tool f args; do
        i=$((i + 1))
        # shellcheck disable=SC2086
        one "$A" "$tr" "$tool" "$f" $args >> "$tmp/a$i"
        # shellcheck disable=SC2086
        one "$B" "$tr" "$tool" "$f" $args >> "$tmp/b$i"
    done < "$tmp/cases"
    r=$((r + 1))
done
printf '%-26s %-6s %12s %12s %6s\n' case xport A B B/A
i=0
while IFS='|' read -r name tr tool f args; do
    i=$((i + 1))
    a=$(median < "$tmp/a$i")
    b=$(median < "$tmp/b$i")
    case $f in bytes_per_sec)
        a=$(awk -v v="$a" 'BEGIN { printf "%.0f", v / 1e6 }')
        b=$(awk -v v="$b" 'BEGIN { printf "%.0f", v / 1e6 }') ;;
    esac
    printf '%-26s %-6s %12s %12s %6s\n' "$name" "$tr" "$a" "$b" "$(ratio "$b" "$a")"
done < "$tmp/cases"
