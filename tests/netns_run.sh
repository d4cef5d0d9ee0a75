#!/bin/sh
# SPDX-License-Identifier: MIT
# Run conformance tests across two network namespaces joined by a veth pair: the test
# process in one (198.51.100.2), every peer it forks in the other (198.51.100.1). Both
# namespaces, the pair and the addresses exist only for this run and are removed after.
# Usage: netns_run.sh <test program>...   (exit 77 when namespaces cannot be made here)
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for network namespaces"; exit 77; }
command -v ip > /dev/null || { echo "needs ip (iproute2)"; exit 77; }
a=nda$$ b=ndb$$
cleanup() {
    ip netns del "$a" 2> /dev/null
    ip netns del "$b" 2> /dev/null
}
trap cleanup EXIT
trap 'exit 1' INT TERM
ip netns add "$a" && ip netns add "$b" || { echo "cannot create network namespaces"; exit 77; }
ip link add va$$ netns "$a" type veth peer name vb$$ netns "$b" || { echo "cannot create a veth pair"; exit 77; }
ip -n "$a" addr add 198.51.100.1/24 dev va$$ &&
ip -n "$b" addr add 198.51.100.2/24 dev vb$$ &&
ip -n "$a" link set lo up && ip -n "$b" link set lo up &&
ip -n "$a" link set va$$ up && ip -n "$b" link set vb$$ up || exit 1

run() {
    ND_TEST_ADDR=198.51.100.2 ND_TEST_PEER_ADDR=198.51.100.1 ND_TEST_CHILD_NETNS=/run/netns/$a \
        ip netns exec "$b" "$@"
}
for t in "$@"; do
    # Forced iwarp, and once with the automatic choice, which must find no shm peer in
    # another namespace and pick iwarp by itself.
    ND_TRANSPORT=iwarp run "$t" || { echo "FAIL: $t across namespaces (iwarp)"; exit 1; }
done
ND_TRANSPORT=auto run "$1" || { echo "FAIL: $1 across namespaces (automatic choice)"; exit 1; }
echo "across namespaces: $# test programs passed"
