# SPDX-License-Identifier: MIT
# Shared by the bench scripts (sourced, POSIX sh). Expects $build and $ITERS to be set by
# the script; makes $tmp, a scratch directory removed at exit with any tool left running.
export FI_TCP_IFACE=lo FI_NET_IFACE=lo UCX_NET_DEVICES=lo
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; kill $(jobs -p) 2>/dev/null' EXIT

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2); else print "n/a" }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "n/a" || b == "n/a" || b == 0) print "n/a"; else printf "%.2f", a / b }'; }
field() { sed "s/.*\"$1\":\([-0-9.e+]*\).*/\1/"; }
# The raw shared-memory spin's half round trip (us) for <size> bytes over <iterations>: the
# floor of same-host latency, and the sign of where the host put our CPUs (docs/performance.md).
raw_spin() { "$build/bench/raw_shm_pingpong" -S "$1" -i "$2" --json | field latency_us; }
# The same with the message in the sequence word's line (-1): one line a message, the
# tighter floor for messages that fit one (the placement classes stay raw_spin's).
raw_spin1() { "$build/bench/raw_shm_pingpong" -S "$1" -i "$2" -1 --json | field latency_us; }

# A fresh port per run, also from inside pipelines (subshells): the counter lives in a file.
next_port() {
    p=$(cat "$tmp/port" 2>/dev/null || echo "${PORT_BASE:-29000}")
    port=$((p + 1))
    echo "$port" > "$tmp/port"
}

# wait_listen PORT: until something listens on TCP PORT here (a server that is ready: the
# clients of perftest and the SDK programs do not retry), 10 s at most.
wait_listen() {
    i=0
    while [ $i -lt 200 ]; do
        ss -Hltn "sport = :$1" 2>/dev/null | grep -q LISTEN && return 0
        sleep 0.05
        i=$((i + 1))
    done
    return 1
}

# A netdirect tool, server and client on this host; prints the client's JSON line.
# $ND_SERVER_ARGS (say -a) go to the server too.
nd_pair() {
    tool=$1
    shift
    next_port
    "$build/tools/$tool" -s "127.0.0.1:$port" ${ND_SERVER_ARGS:-} 2>/dev/null &
    # The client does not retry a refused connection: a run that raced its server is lost.
    wait_listen "$port" || echo "$tool server did not listen on $port" >&2
    "$build/tools/$tool" -c "127.0.0.1:$port" "$@" --json
    wait
}

# fi_pingpong 8 B with the given provider arguments; prints usec/xfer (a half round trip).
fi_run() {
    command -v fi_pingpong > /dev/null || return 0
    next_port
    fi_pingpong "$@" -S 8 -I "$ITERS" -B "$port" > /dev/null 2>&1 &
    # The server needs a moment to open its control socket; the client retries on refusal.
    for t in 1 2 3 4 5 6 7 8 9 10; do
        out=$(fi_pingpong "$@" -S 8 -I "$ITERS" -P "$port" 127.0.0.1 2>/dev/null) && break
        sleep 0.2
    done
    wait
    echo "$out" | awk '$1 == 8 { print $7 }'
}

# ucx_perftest tag_lat 8 B over UCX_TLS=$1; prints the final latency (us).
ucx_run() {
    command -v ucx_perftest > /dev/null || return 0
    next_port
    UCX_TLS=$1 ucx_perftest -p "$port" -t tag_lat -s 8 -n "$ITERS" > /dev/null 2>&1 &
    for t in 1 2 3 4 5 6 7 8 9 10; do
        out=$(UCX_TLS=$1 ucx_perftest 127.0.0.1 -p "$port" -t tag_lat -s 8 -n "$ITERS" 2>/dev/null) && break
        sleep 0.2
    done
    wait
    echo "$out" | awk '/^Final:/ { print $3 }'
}
