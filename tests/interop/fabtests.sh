#!/bin/sh
# SPDX-License-Identifier: MIT
# libfabric's fabtests over its verbs provider on netdirect: fi_msg_sockets, fi_multi_ep -e
# msg, fi_bw -e msg -T 1 and fi_msg_inject, server and client as two processes, on shm and
# on iwarp, each RUNS times. Debian packages no fabtests: build them from libfabric's own
# source at Debian's version (v1.17.0: its fabtests/ directory, autogen.sh, configure,
# make install; needs libfabric-dev autoconf automake libtool) and name their bin directory.
# The pair runs in a network namespace of its own with 198.51.100.1 on a veth pair (the
# verbs provider wants an interface address; the traffic stays in the namespace). Not part
# of CI (it needs that build). Ends "N passed, N failed".
#   tests/interop/fabtests.sh FABTESTS_BIN [NETDIRECT_RUN] [RUNS]
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
[ "${ND_FABTESTS_INSIDE:-}" ] || ND_FABTESTS_INSIDE=1 exec "$root/tests/alone_run.sh" --address "$0" "$@"
bin=$1 nd_run=${2:-$root/build/tools/netdirect-run} runs=${3:-10} addr=198.51.100.1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0 port=30000
one() {   # one TRANSPORT TEST ARGS...: RUNS server/client pairs, -B/-P ports, -s the address
    transport=$1
    shift
    ok=0
    for i in $(seq "$runs"); do
        port=$((port + 1))
        ND_TRANSPORT=$transport timeout 120 "$nd_run" "$bin/$@" -p verbs -s $addr -B $port > "$tmp/s" 2>&1 &
        srv=$!
        for _ in $(seq 200); do
            ss -Hltn "sport = :$port" | grep -q LISTEN && break
            kill -0 $srv 2> /dev/null || break
            sleep 0.05
        done
        ND_TRANSPORT=$transport timeout 120 "$nd_run" "$bin/$@" -p verbs -s $addr -P $port $addr > "$tmp/c" 2>&1
        crc=$?
        wait $srv
        src=$?
        if [ $crc = 0 ] && [ $src = 0 ]; then
            ok=$((ok + 1))
        else
            echo "  run $i: client rc $crc, server rc $src"
            tail -n 3 "$tmp/c" "$tmp/s" | sed 's/^/    /'
        fi
    done
    echo "$transport $*: $ok of $runs passed"
    if [ $ok = "$runs" ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
}
for transport in shm iwarp; do
    one $transport fi_msg_sockets
    one $transport fi_multi_ep -e msg
    one $transport fi_bw -e msg -T 1
    one $transport fi_msg_inject
done
echo "$passed passed, $failed failed"
[ $failed = 0 ]
