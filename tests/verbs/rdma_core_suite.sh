#!/bin/sh
# SPDX-License-Identifier: MIT
# rdma-core's own test suite as Debian ships it (python3-pyverbs: /usr/share/doc/rdma-core/tests),
# copied with its compressed files unpacked and otherwise unchanged, run under netdirect-run
# with `python3 tests/run_tests.py -v` on shm and over iwarp, in both device personalities.
# Every test rdma_core_suite.pass names (the features the drop-in offers) must pass in each
# run; the rest skip (features not offered), or fail where rdma_core_suite.fail says they
# fail for that personality and why; a test listed there that no longer fails fails the run,
# so the list stays exact. As root each run has a network namespace of its own with only lo
# up: the tests' rdma_cm cases take the device's address from sysfs (nd0's device/net, the
# device tree netdirect-run shows), which is then 127.0.0.1, never an address of the host's.
# Usage: rdma_core_suite.sh NETDIRECT_RUN   (77 without python3-pyverbs)
set -u
. "$(dirname "$0")/foreign_lib.sh"
nd_run=$1
pass_list="$(dirname "$0")/rdma_core_suite.pass"
fail_list="$(cd "$(dirname "$0")" && pwd)/rdma_core_suite.fail"
src=/usr/share/doc/rdma-core/tests
py=/usr/bin/python3             # Debian's, whose dist-packages hold pyverbs
[ -d "$src" ] && "$py" -c 'import pyverbs' 2> /dev/null || { echo "python3-pyverbs not installed"; exit 77; }
cp -r "$src" "$tmp/tests"
gunzip "$tmp/tests"/*.gz
grep -v '^#' "$pass_list" | sort > "$tmp/want"
cd "$tmp" || exit 1
# in_netns CMD...: CMD in a namespace of its own with lo up, where one can be made.
if unshare -n true 2> /dev/null; then
    in_netns() { unshare -n sh -c 'ip link set lo up && exec "$@"' sh "$@"; }
else
    echo "no network namespace of our own (not root): rdma_cm cases use the host's addresses"
    in_netns() { "$@"; }
fi
fail=0
for transport in ${ND_TEST_TRANSPORTS:-shm iwarp}; do
    for personality in roce iwarp; do
        log="$tmp/$transport-$personality.log"
        # shellcheck disable=SC2086
        in_netns timeout 600 "$nd_run" env $pre ND_TRANSPORT=$transport ND_VERBS_PERSONALITY=$personality \
            "$py" tests/run_tests.py -v > "$log" 2>&1
        rc=$?
        # Verbose unittest: "test_x (tests.mod.Class.test_x) ... ok", or the id on its own
        # line and the docstring's first line ending in "... ok".
        awk '/^test_[A-Za-z0-9_]+ \(tests\.[A-Za-z0-9_.]+\)/ {
                 match($0, /\(tests\.[A-Za-z0-9_.]+\)/); id = substr($0, RSTART + 1, RLENGTH - 2) }
             / \.\.\. ok$/ { print id }' "$log" | sort > "$tmp/passed"
        missing=$(comm -23 "$tmp/want" "$tmp/passed")
        sed -nE 's/^(ERROR|FAIL): test_[A-Za-z0-9_]+ \((tests\.[A-Za-z0-9_.]+)\)$/\2/p' "$log" | sort -u > "$tmp/failed"
        awk -v p="$personality" '$1 == p { print $2 }' "$fail_list" | sort -u > "$tmp/expected"
        unexpected=$(comm -23 "$tmp/failed" "$tmp/expected")
        stale=$(comm -13 "$tmp/failed" "$tmp/expected")
        result="$(grep -E '^(OK|FAILED)' "$log" | tail -1), $(wc -l < "$tmp/passed") passed"
        [ -s "$tmp/expected" ] && result="$result, $(wc -l < "$tmp/expected") failed as listed"
        if { [ $rc -ne 0 ] && [ ! -s "$tmp/failed" ]; } || [ -n "$missing$unexpected$stale" ]; then
            grep -E -A20 '^(ERROR|FAIL):' "$log" | head -100
            [ -z "$missing" ] || printf 'did not pass:\n%s\n' "$missing"
            [ -z "$unexpected" ] || printf 'failed, not listed in %s:\n%s\n' "$fail_list" "$unexpected"
            [ -z "$stale" ] || printf 'listed in %s, did not fail:\n%s\n' "$fail_list" "$stale"
            echo "$transport/$personality: rc=$rc, $result"
            fail=1
        else
            echo "$transport/$personality: $result"
        fi
    done
done
exit $fail
