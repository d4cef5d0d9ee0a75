#!/bin/sh
# SPDX-License-Identifier: MIT
# The long forms of the hardening tests that CI runs shortened. Each prints its figures.
#   tests/long/run.sh [build-dir] [fuzz seconds per target]
# (the fuzz targets need the ASan+fuzz build: ./test.sh makes it in build-ci/asan; 0 s skips
# them: libFuzzer reads -max_total_time=0 as "no limit")
set -u
cd "$(dirname "$0")/../.."
build=${1:-build}
fuzz_seconds=${2:-600}
fail=0
run() {
    echo "== $*"
    env "$@"
    case $? in
    0) ;;
    77) echo "skipped here: $*" ;;
    *) echo "FAILED: $*"; fail=1 ;;
    esac
}
for tr in shm iwarp; do
    run ND_TRANSPORT=$tr ND_SOAK_MESSAGES=1000000 "$build/tests/test_soak"
    run ND_TRANSPORT=$tr ND_TEST_HELD=10000 "$build/tests/test_many_conns"
    run ND_TRANSPORT=$tr ND_TEST_CONNS=100000 "$build/tests/test_conn_leak"
    run ND_TRANSPORT=$tr "$build/tests/test_kill_points"
done
run ND_TEST_MPI_RUNS=20 tests/verbs/test_verbs_openmpi.sh "$build/tools/netdirect-run"
if [ "$fuzz_seconds" -gt 0 ]; then
    scripts/fuzz.sh "$fuzz_seconds" build-ci/asan/tests/fuzz/fuzz_* || fail=1
fi
exit $fail
