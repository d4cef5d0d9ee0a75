#!/bin/sh
# SPDX-License-Identifier: MIT
# Run conformance tests across two network namespaces joined by a veth pair: the test
# process in one (198.51.100.2), every peer it forks in the other (198.51.100.1). Both
# namespaces, the pair and the addresses exist only for this run and are removed after.
# Usage: netns_run.sh <test program>...   (exit 77 when namespaces cannot be made here)
set -u
. "$(dirname "$0")/netns_lib.sh"

run() {
    ND_TEST_ADDR=198.51.100.2 ND_TEST_PEER_ADDR=198.51.100.1 ND_TEST_CHILD_NETNS=/run/netns/$ns_a \
        ip netns exec "$ns_b" "$@"
}
for t in "$@"; do
    # Forced iwarp, and once with the automatic choice, which must find no shm peer in
    # another namespace and pick iwarp by itself.
    ND_TRANSPORT=iwarp run "$t" || { echo "FAIL: $t across namespaces (iwarp)"; exit 1; }
done
ND_TRANSPORT=auto run "$1" || { echo "FAIL: $1 across namespaces (automatic choice)"; exit 1; }
echo "across namespaces: $# test programs passed"
