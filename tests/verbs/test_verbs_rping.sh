#!/bin/sh
# SPDX-License-Identifier: MIT
# Debian's rping (rdmacm-utils), unmodified, under netdirect-run: server and client as two
# processes on this host, 1000 ping-pongs (Send, RDMA Read, RDMA Write each) with the data
# verified (-V), 64 B and 64 KiB - 1 (the largest rping takes), over shm and over iwarp;
# both must exit 0.
# Usage: test_verbs_rping.sh NETDIRECT_RUN   (77 without rdmacm-utils)
set -u
. "$(dirname "$0")/foreign_lib.sh"
nd_run=$1
command -v rping > /dev/null || { echo "rdmacm-utils not installed"; exit 77; }
# Below the ephemeral range (32768 and up), apart from test_verbs_cm.sh's.
port=$((30000 + $$ % 2000))
fail() { echo "rping: $*"; exit 1; }

for transport in shm iwarp; do
    for size in 64 65535; do
        port=$((port + 1))
        log=$(mktemp)
        # shellcheck disable=SC2086
        timeout 120 "$nd_run" env $pre ND_TRANSPORT=$transport rping -s -a 127.0.0.1 -p "$port" -C 1000 -V -S "$size" \
            > "$log" 2>&1 &
        server=$!
        wait_listen "$port" "$server" || { cat "$log"; fail "$transport $size B: the server did not listen"; }
        # shellcheck disable=SC2086
        out=$(timeout 120 "$nd_run" env $pre ND_TRANSPORT=$transport rping -c -a 127.0.0.1 -p "$port" -C 1000 -V \
              -S "$size" 2>&1)
        crc=$?
        wait "$server"
        src=$?
        if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
            echo "client:"; echo "$out"; echo "server:"; cat "$log"
            rm -f "$log"
            fail "$transport $size B: client rc=$crc server rc=$src"
        fi
        rm -f "$log"
        echo "rping $transport $size B x1000 -V: ok"
    done
done
