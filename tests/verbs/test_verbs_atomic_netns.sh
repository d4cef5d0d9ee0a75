#!/bin/sh
# SPDX-License-Identifier: MIT
# test_verbs_atomic across two network namespaces: its server (the counter) in one, its
# four clients at once in the other, over iwarp. The server checks the final count and the
# compare-and-swap rules' word; here the old values of all clients together must be every
# number below the count once.
# Usage: test_verbs_atomic_netns.sh TEST_VERBS_ATOMIC   (77 where namespaces cannot be made)
set -u
bin=$(realpath "$1")
. "$(dirname "$0")/../netns_lib.sh"
out=$(mktemp -d)
trap 'rm -rf "$out"; netns_cleanup' EXIT
# Below the ephemeral range, apart from the other tests' ports.
port=$((5000 + $$ % 500))
clients=4

ip netns exec "$ns_a" timeout 120 "$bin" server 198.51.100.1 $port > "$out/s" 2>&1 &
server=$!
i=0
until ip netns exec "$ns_a" ss -Hltn "sport = :$port" | grep -q LISTEN; do
    i=$((i + 1))
    kill -0 $server 2> /dev/null && [ $i -lt 200 ] || { cat "$out/s"; echo "the server did not listen"; exit 1; }
    sleep 0.05
done
pids=
for c in $(seq 0 $((clients - 1))); do
    ip netns exec "$ns_b" timeout 120 "$bin" client 198.51.100.1 $port "$c" > "$out/c$c" 2> "$out/e$c" &
    pids="$pids $!"
done
fail=0
for p in $pids; do wait "$p" || fail=1; done
wait $server || fail=1
if [ $fail -ne 0 ]; then
    cat "$out/s" "$out"/e*
    echo "a client or the server failed"
    exit 1
fi
total=$(cat "$out"/c* | wc -l)
# Sorted, the old values must be 0, 1, ..., total - 1.
if ! cat "$out"/c* | sort -n | awk '$1 != NR - 1 { print "old value " NR - 1 " is " $1; bad = 1; exit } END { exit bad }'; then
    exit 1
fi
echo "$(cat "$out/s"); $clients clients across namespaces, $total old values each seen once"
