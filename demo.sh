#!/bin/sh
# SPDX-License-Identifier: MIT
# The main job: install build dependencies, build, and run the two-process demo on this
# host: a server and a client process connect over netdirect's shared-memory transport,
# then nd_conn measures connection set-up and nd_pingpong Send/Receive latency, 8 B to
# 1 MiB, polling and blocking; then the same over the iWARP transport (TCP, loopback).
set -eu
cd "$(dirname "$0")"
scripts/deps.sh
echo "== building: release, profile-guided (scripts/release_build.sh, about a minute)"
scripts/release_build.sh build
[ -e /sys/kernel/tracing/events/raw_syscalls ] || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
port=$((26000 + $$ % 4000))     # below the ephemeral port range

echo "== nd_info"
./build/tools/nd_info | sed -n '1,12p'
echo

# Where the VM's CPUs sit moves every cross-CPU figure (bench/host_state.sh): a cache line
# moves in ~0.04 us when they are near, ~0.2 us when far, and loopback TCP of 16 KiB and
# more runs ~3x slower when far. The raw spin says which, before and after the figures.
placement() {
    ./build/bench/raw_shm_pingpong -S 8 -i 200000 --json |
        sed 's/.*"latency_us":\([0-9.]*\).*/\1/' |
        awk -v when="$1" '{ printf "== CPU placement %s: raw shared-memory spin %.3f us a half round trip (%s)\n\n", when, $1, $1 < 0.1 ? "near" : "far" }'
}
placement before

# Each transport in turn: shm (the automatic choice on one host) and iwarp (TCP, forced).
for transport in shm iwarp; do
    export ND_TRANSPORT=$transport
    port=$((port + 1))
    echo "== $transport: connection set-up, nd_conn, one connection at a time, 3 s" \
         "(create QP, connect, 4 KiB each way, disconnect, destroy)"
    ./build/tools/nd_conn -s "127.0.0.1:$port" 2>/dev/null &
    server=$!
    ./build/tools/nd_conn -c "127.0.0.1:$port" -d 3
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    echo
    for mode in p b; do
        port=$((port + 1))
        echo "== $transport: Send/Receive latency, nd_pingpong -$mode" \
             "($( [ $mode = p ] && echo polling || echo 'blocking: CQ notify + wait'))"
        ./build/tools/nd_pingpong -s "127.0.0.1:$port" 2>/dev/null &
        ./build/tools/nd_pingpong -c "127.0.0.1:$port" -$mode -M 1048576 -i 20000
        wait
        echo
    done
done
placement after
