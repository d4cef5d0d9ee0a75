#!/bin/sh
# SPDX-License-Identifier: MIT
# Debian's perftest, unmodified, under netdirect-run with its rdma_cm connection (-R): each of
# ib_{send,write,read}_{lat,bw} as server and client on this host over every size -a takes
# (2 B to 8 MiB), over shm and over iwarp. Both sides must exit 0 and the client must report
# a result row for every size from 8 B to 1 MiB.
# Usage: test_verbs_perftest.sh NETDIRECT_RUN [PROGRAM...]   (77 without perftest)
set -u
. "$(dirname "$0")/foreign_lib.sh"
nd_run=$1
shift
programs=${*:-ib_send_lat ib_send_bw ib_write_lat ib_write_bw ib_read_lat ib_read_bw}
command -v ib_send_lat > /dev/null || { echo "perftest not installed"; exit 77; }
# Below the ephemeral range, apart from the other tests' ports.
port=$((26000 + $$ % 2000))
fail() { echo "perftest: $*"; exit 1; }

for transport in ${ND_TEST_TRANSPORTS:-shm iwarp}; do
    for prog in $programs; do
        port=$((port + 1))
        log=$(mktemp)
        # shellcheck disable=SC2086
        timeout 240 "$nd_run" env $pre ND_TRANSPORT=$transport $prog -R -a -n 100 -p "$port" \
            > "$log" 2>&1 &
        server=$!
        wait_listen "$port" "$server" || { cat "$log"; fail "$transport $prog: the server did not listen"; }
        # shellcheck disable=SC2086
        out=$(timeout 240 "$nd_run" env $pre ND_TRANSPORT=$transport $prog -R -a -n 100 -p "$port" \
              127.0.0.1 2>&1)
        crc=$?
        wait "$server"
        src=$?
        missing=""
        size=8
        while [ $size -le 1048576 ]; do
            echo "$out" | grep -Eq "^ *$size +100 " || missing="$missing $size"
            size=$((size * 2))
        done
        if [ $crc -ne 0 ] || [ $src -ne 0 ] || [ -n "$missing" ]; then
            echo "client:"; echo "$out"; echo "server:"; cat "$log"
            rm -f "$log"
            fail "$transport $prog: client rc=$crc server rc=$src, no row for:$missing"
        fi
        rm -f "$log"
        echo "$prog -R -a $transport: ok ($(echo "$out" | grep -E '^ *1048576 ' | tr -s ' '))"
    done
done
