#!/bin/sh
# SPDX-License-Identifier: MIT
# The test suite, as CI runs it: gcc and clang build with -Werror; the whole suite runs on
# the release build (what the demo and the benchmarks run), under ASan+UBSan and under
# TSan (stress tests shortened there: label "stress"); then each fuzz target for a short
# run over its kept corpus. Usage: ./test.sh [quick]   (quick: the gcc build and its suite)
set -eu
cd "$(dirname "$0")"
scripts/deps.sh
jobs=$(nproc)
fuzz_seconds=${ND_FUZZ_SECONDS:-20}

build() {
    dir=$1
    shift
    cmake -S . -B "$dir" -DND_WERROR=ON "$@" > /dev/null
    cmake --build "$dir" -j"$jobs" > "$dir.log" 2>&1 || { cat "$dir.log"; exit 1; }
}

suite() {
    dir=$1
    shift
    echo "== $dir"
    (cd "$dir" && ctest -j"$jobs" --output-on-failure --timeout 300 "$@")
}

build build-ci/gcc -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++
if [ "${1:-}" = quick ]; then
    suite build-ci/gcc
    exit 0
fi
# Both compilers build with -Werror; the one unsanitised suite runs on the release build.
build build-ci/clang -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++

build build-ci/asan -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DND_SANITIZE=address,undefined -DND_FUZZ=ON
suite build-ci/asan

build build-ci/tsan -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DND_SANITIZE=thread
TSAN_OPTIONS=die_after_fork=0 suite build-ci/tsan

# The build the benchmarks and the demo run: link-time and (GCC) profile-guided optimised
# after a training mix on loopback (scripts/release_build.sh), the whole suite against it.
scripts/release_build.sh build-ci/release -DND_WERROR=ON
suite build-ci/release

echo "== fuzz (${fuzz_seconds}s per target)"
scripts/fuzz.sh "$fuzz_seconds" build-ci/asan/tests/fuzz/fuzz_*
echo "all test configurations passed"
