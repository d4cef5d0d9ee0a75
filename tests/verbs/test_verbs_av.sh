#!/bin/sh
# SPDX-License-Identifier: MIT
# Debian's programs that connect their QPs themselves (ibv_modify_qp to RTR with an address
# vector, QP numbers and GIDs swapped over their own TCP socket), unmodified, under
# netdirect-run: ibv_rc_pingpong (polling with its buffer check, asleep on CQ events, 64 B
# messages) and perftest without -R. On this host over shm and over iwarp, or (netns)
# between two network namespaces over iwarp. Both sides must exit 0 and report their
# figures, ib_atomic_lat and ib_atomic_bw too (a row for their 8 B).
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
    for prog in ib_atomic_lat ib_atomic_bw; do
        port=$((port + 1))
        run_pair "$prog" 0 "" "" -- "$prog" -x $gid -n 1000 -p PORT -- "$prog" -x $gid -n 1000 -p PORT ADDR
        grep -Eq '^ *8 +1000 ' "$tmp/c" || { cat "$tmp/c"; echo "$transport $prog: no row for 8 B"; exit 1; }
        echo "$prog (no -R) $transport: ok ($(grep -E '^ *8 +1000 ' "$tmp/c" | tr -s ' \t' ' '))"
    done
done
