#!/bin/sh
# SPDX-License-Identifier: MIT
# Debian's perftest, unmodified, under netdirect-run with its rdma_cm connection (-R): each of
# ib_{send,write,read}_{lat,bw} as server and client over every size -a takes (2 B to 8 MiB),
# on this host over shm and over iwarp, or (netns) between two network namespaces over
# iwarp. Both sides must exit 0 and the client must report a row for every size from 8 B to
# 1 MiB; then ib_atomic_lat and ib_atomic_bw (-R), a row for their 8 B.
# Usage: test_verbs_perftest.sh NETDIRECT_RUN [local|netns] [PROGRAM...]   (77 without perftest)
set -u
. "$(dirname "$0")/foreign_lib.sh"
nd_run=$1
command -v ib_send_lat > /dev/null || { echo "perftest not installed"; exit 77; }
places "${2:-local}"
shift $(($# < 2 ? $# : 2))
programs=${*:-ib_send_lat ib_send_bw ib_write_lat ib_write_bw ib_read_lat ib_read_bw}
# Below the ephemeral range, apart from the other tests' ports.
port=$((26000 + $$ % 330 * 12))
pair_timeout=240
retry_on="Can't produce a report"

for transport in $transports; do
    for prog in $programs; do
        port=$((port + 1))
        run_pair "$prog" 0 "" "" -- "$prog" -R -a -n 100 -p PORT -- "$prog" -R -a -n 100 -p PORT ADDR
        size=8
        while [ $size -le 1048576 ]; do
            grep -Eq "^ *$size +100 " "$tmp/c" || { cat "$tmp/c"; echo "$transport $prog: no row for $size B"; exit 1; }
            size=$((size * 2))
        done
        echo "$prog -R -a $transport: ok ($(grep -E '^ *1048576 ' "$tmp/c" | tr -s ' \t' ' '))"
    done
    [ $# -eq 0 ] || continue        # the programs named, only
    for prog in ib_atomic_lat ib_atomic_bw; do
        port=$((port + 1))
        run_pair "$prog" 0 "" "" -- "$prog" -R -n 1000 -p PORT -- "$prog" -R -n 1000 -p PORT ADDR
        grep -Eq '^ *8 +1000 ' "$tmp/c" || { cat "$tmp/c"; echo "$transport $prog: no row for 8 B"; exit 1; }
        echo "$prog -R $transport: ok ($(grep -E '^ *8 +1000 ' "$tmp/c" | tr -s ' \t' ' '))"
    done
done
