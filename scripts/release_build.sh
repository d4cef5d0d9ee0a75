#!/bin/sh
# SPDX-License-Identifier: MIT
# The release build that the benchmarks and the demo run: -O3, link-time optimised and, with
# GCC, profile-guided. A first build of the library counts its branches while a fixed
# training mix runs on this host (both transports: ping-pong of 1 B to 64 KiB polling and
# blocking, Write, Read and Send streams, connection set-up, the verbs front end's ping-pong,
# all over loopback); the library
# is then compiled again from those counts, in the same directory (GCC names the counts after
# the object files). Another compiler, or ND_PGO=0, gives the plain release build.
# Usage: scripts/release_build.sh <build-dir> [cmake options]     (about a minute on 2 CPUs)
set -eu
cd "$(dirname "$0")/.."
build=${1:?usage: scripts/release_build.sh <build-dir> [cmake options]}
shift
options="$*"
jobs=$(nproc)
cc=$(command -v "${CC:-cc}") || { echo "no C compiler ${CC:-cc}" >&2; exit 1; }
mkdir -p "$build"
counts="$(cd "$build" && pwd)/pgo-counts"

# A cache made with another compiler would be thrown away by CMake at the first configure,
# and the options given with it lost: start such a directory afresh.
if [ -f "$build/CMakeCache.txt" ] &&
   ! grep -q "^CMAKE_C_COMPILER:[A-Z]*=$cc\$" "$build/CMakeCache.txt"; then
    rm -rf "$build/CMakeCache.txt" "$build/CMakeFiles"
fi
configure() {
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER="$cc" $options "$@" > /dev/null
}
compile() {
    cmake --build "$build" -j"$jobs" > "$build.log" 2>&1 || { cat "$build.log"; exit 1; }
}

if [ "${ND_PGO:-1}" = 0 ] || ! "$cc" -v 2>&1 | grep -q "^gcc version"; then
    configure -DND_PGO=OFF
    compile
    exit 0
fi

rm -rf "$counts"
configure -DND_PGO=GENERATE -DND_PGO_DIR="$counts"
compile

# The training mix. Every peer is on 127.0.0.1; each pair gets a fresh port.
port=${ND_PGO_PORT:-27700}
pair() {
    tool=$1
    shift
    port=$((port + 1))
    ND_TRANSPORT=$transport "$build/tools/$tool" -s "127.0.0.1:$port" > /dev/null 2>&1 &
    server=$!
    ND_TRANSPORT=$transport "$build/tools/$tool" -c "127.0.0.1:$port" "$@" > /dev/null 2>&1 || {
        echo "training run failed: $transport $tool $*" >&2
        kill "$server" 2> /dev/null
        exit 1
    }
    # nd_conn's server serves until it is stopped; the others end with their client.
    [ "$tool" = nd_conn ] && kill "$server" 2> /dev/null
    wait "$server" 2> /dev/null || true
}
for transport in shm iwarp; do
    pair nd_pingpong -p -M 65536 -i 5000
    pair nd_pingpong -p -S 8 -i 100000
    pair nd_pingpong -b -S 8 -i 5000
    pair nd_rping -w -M 1048576 -i 200
    pair nd_rping -r -M 1048576 -i 200
    pair nd_ping -M 1048576 -i 200
    pair nd_conn -t 1 -d 1
    # The verbs front end's post and poll (one process, two QPs through rdma_cm; over iwarp
    # each Send waits for the engine to answer its fence, so few turns there).
    iters=20000
    [ "$transport" = iwarp ] && iters=200
    ND_TRANSPORT=$transport "$build/bench/sw_verbs_pingpong" -i "$iters" > /dev/null ||
        { echo "training run failed: $transport sw_verbs_pingpong" >&2; exit 1; }
done

[ -n "$(ls "$counts" 2> /dev/null)" ] || { echo "the training runs left no branch counts in $counts" >&2; exit 1; }
configure -DND_PGO=USE -DND_PGO_DIR="$counts"
compile
