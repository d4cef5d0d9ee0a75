#!/bin/sh
# SPDX-License-Identifier: MIT
# Debian's programs that connect their QPs themselves (ibv_modify_qp to RTR with an address
# vector, QP numbers and GIDs swapped over their own TCP socket), unmodified, under
# netdirect-run: ibv_rc_pingpong (polling with its buffer check, asleep on CQ events, 64 B
# messages) and perftest without -R. On this host over shm and over iwarp, or (netns)
# between two network namespaces over iwarp. Both sides must exit 0 and report their
# figures; ib_atomic_bw (atomics are not offered) must stop with its error, not hang.
# Usage: test_verbs_av.sh NETDIRECT_RUN [local|netns]   (77 without ibverbs-utils)
set -u
. "$(dirname "$0")/foreign_lib.sh"
nd_run=$1
command -v ibv_rc_pingpong > /dev/null || { echo "ibverbs-utils not installed"; exit 77; }
places "${2:-local}"
# The GID of the address the server is reached at.
gid=$(gid_index "$srv_addr")
[ -n "$gid" ] || { echo "no GID for $srv_addr"; exit 1; }
# Below the ephemeral range, apart from the other tests' ports.
port=$((23000 + $$ % 250 * 12))
iters='[0-9]+ iters in [0-9.]+ seconds'
retry_on="Can't produce a report"

for transport in $transports; do
    for opts in "-c" "-e" "-s 64 -n 2000"; do
        port=$((port + 1))
        # shellcheck disable=SC2086
        run_pair "ibv_rc_pingpong $opts" 0 "$iters" "$iters" -- ibv_rc_pingpong -g $gid -p PORT $opts -- \
            ibv_rc_pingpong -g $gid -p PORT $opts ADDR
        echo "ibv_rc_pingpong $opts $transport: ok ($(grep -E "$iters" "$tmp/c"))"
    done
    command -v ib_send_lat > /dev/null || continue
    for prog in ib_send_lat ib_write_bw ib_read_lat; do
        port=$((port + 1))
        run_pair "$prog" 0 "" "" -- "$prog" -x $gid -s 65536 -n 200 -p PORT -- "$prog" -x $gid -s 65536 -n 200 -p PORT ADDR
        grep -Eq '^ *65536 +200 ' "$tmp/c" || { cat "$tmp/c"; echo "$transport $prog: no row for 65536 B"; exit 1; }
        echo "$prog (no -R) $transport: ok ($(grep -E '^ *65536 ' "$tmp/c" | tr -s ' \t' ' '))"
    done
    # Atomics are not offered: the client's first post is refused, and it stops with its
    # error rather than wait for ever (a held request was once dropped unanswered).
    port=$((port + 1))
    pair_timeout=60
    if (run_pair_once ib_atomic_bw 1 "" "" -- ib_atomic_bw -x $gid -n 100 -p PORT -- \
            ib_atomic_bw -x $gid -n 100 -p PORT ADDR) > "$tmp/atomic" 2>&1 ||
       ! grep -q "Couldn't post send" "$tmp/c" || grep -q "rc=124" "$tmp/atomic"; then
        cat "$tmp/atomic" "$tmp/c"
        echo "$transport ib_atomic_bw: no clear error"
        exit 1
    fi
    pair_timeout=120
    echo "ib_atomic_bw (no -R) $transport: fails as it should ($(grep -m1 "Couldn't post send" "$tmp/c"))"
done
