#!/bin/sh
# SPDX-License-Identifier: MIT
# rdma-core's own test suite as Debian ships it (python3-pyverbs: /usr/share/doc/rdma-core/tests),
# copied with its compressed files unpacked and otherwise unchanged, run under netdirect-run
# with `python3 tests/run_tests.py -v` on shm and over iwarp, in both device personalities.
# No test may fail or error; every test rdma_core_suite.pass names (the features the drop-in
# offers) must pass in each run; the rest skip (features not offered).
# Usage: rdma_core_suite.sh NETDIRECT_RUN   (77 without python3-pyverbs)
set -u
. "$(dirname "$0")/foreign_lib.sh"
nd_run=$1
pass_list="$(dirname "$0")/rdma_core_suite.pass"
src=/usr/share/doc/rdma-core/tests
py=/usr/bin/python3             # Debian's, whose dist-packages hold pyverbs
[ -d "$src" ] && "$py" -c 'import pyverbs' 2> /dev/null || { echo "python3-pyverbs not installed"; exit 77; }
cp -r "$src" "$tmp/tests"
gunzip "$tmp/tests"/*.gz
grep -v '^#' "$pass_list" | sort > "$tmp/want"
cd "$tmp" || exit 1
fail=0
for transport in ${ND_TEST_TRANSPORTS:-shm iwarp}; do
    for personality in roce iwarp; do
        log="$tmp/$transport-$personality.log"
        # shellcheck disable=SC2086
        timeout 600 "$nd_run" env $pre ND_TRANSPORT=$transport ND_VERBS_PERSONALITY=$personality \
            "$py" tests/run_tests.py -v > "$log" 2>&1
        rc=$?
        # Verbose unittest: "test_x (tests.mod.Class.test_x) ... ok", or the id on its own
        # line and the docstring's first line ending in "... ok".
        awk '/^test_[A-Za-z0-9_]+ \(tests\.[A-Za-z0-9_.]+\)/ {
                 match($0, /\(tests\.[A-Za-z0-9_.]+\)/); id = substr($0, RSTART + 1, RLENGTH - 2) }
             / \.\.\. ok$/ { print id }' "$log" | sort > "$tmp/passed"
        missing=$(comm -23 "$tmp/want" "$tmp/passed")
        result="$(grep -E '^(OK|FAILED)' "$log" | tail -1), $(wc -l < "$tmp/passed") passed"
        if [ $rc -ne 0 ] || [ -n "$missing" ]; then
            grep -E -A20 '^(ERROR|FAIL):' "$log" | head -100
            [ -z "$missing" ] || printf 'did not pass:\n%s\n' "$missing"
            echo "$transport/$personality: rc=$rc, $result"
            fail=1
        else
            echo "$transport/$personality: $result"
        fi
    done
done
exit $fail
