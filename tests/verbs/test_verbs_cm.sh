#!/bin/sh
# SPDX-License-Identifier: MIT
# Debian's rdma_cm programs (rdmacm-utils), unmodified, under netdirect-run, server and
# client as two processes on this host, over shm and over iwarp:
#   ucmatose -C 100 (100 Sends each way on one connection), ucmatose -c 10 (ten connections),
#   rdma_server / rdma_client (synchronous ids, the library's own PD and CQs),
#   cmtime -c 100 (100 connections made and torn down; its server never exits: stopped).
# Each side must exit 0 (cmtime's client only) and print its success line.
# Usage: test_verbs_cm.sh NETDIRECT_RUN   (77 without rdmacm-utils)
set -u
. "$(dirname "$0")/foreign_lib.sh"
nd_run=$1
command -v ucmatose > /dev/null || { echo "rdmacm-utils not installed"; exit 77; }
# Below the ephemeral range (32768 and up): a listener cannot take a port a connection left
# in TIME_WAIT.
port=$((10000 + $$ % 10000 * 2))
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; kill $(jobs -p) 2> /dev/null' EXIT
fail() { echo "cm: $*"; exit 1; }

# pair NAME SERVER_STAYS(0/1) CLIENT_PATTERN SERVER_PATTERN -- server args -- client args
pair() {
    name=$1 stays=$2 cpat=$3 spat=$4
    shift 5
    sargs=
    while [ "$1" != -- ]; do sargs="$sargs $1"; shift; done
    shift
    port=$((port + 1))
    # shellcheck disable=SC2086
    timeout 120 "$nd_run" env $pre ND_TRANSPORT=$transport $(echo $sargs | sed "s/PORT/$port/") > "$tmp/s" 2>&1 &
    server=$!
    wait_listen "$port" "$server" || { cat "$tmp/s"; fail "$transport $name: the server did not listen"; }
    # shellcheck disable=SC2046
    timeout 120 "$nd_run" env $pre ND_TRANSPORT=$transport $(echo "$@" | sed "s/PORT/$port/") > "$tmp/c" 2>&1
    crc=$?
    if [ "$stays" = 1 ]; then
        kill "$server" 2> /dev/null
        wait "$server" 2> /dev/null
        src=0
    else
        wait "$server"
        src=$?
    fi
    if [ $crc -ne 0 ] || [ $src -ne 0 ] || ! grep -Eq "$cpat" "$tmp/c" || { [ -n "$spat" ] && ! grep -Eq "$spat" "$tmp/s"; }; then
        echo "client:"; cat "$tmp/c"; echo "server:"; cat "$tmp/s"
        fail "$transport $name: client rc=$crc server rc=$src"
    fi
    echo "$transport $name: ok"
}

for transport in shm iwarp; do
    pair "ucmatose -C 100" 0 "^test complete" "^test complete" -- ucmatose -b 127.0.0.1 -p PORT -C 100 -- \
        ucmatose -s 127.0.0.1 -p PORT -C 100
    pair "ucmatose -c 10" 0 "^test complete" "^test complete" -- ucmatose -b 127.0.0.1 -p PORT -c 10 -- \
        ucmatose -s 127.0.0.1 -p PORT -c 10
    pair "rdma_server/rdma_client" 0 "rdma_client: end 0" "rdma_server: end 0" -- rdma_server -p PORT -- \
        rdma_client -s 127.0.0.1 -p PORT
    pair "cmtime -c 100" 1 "^connect +:" "" -- cmtime -b 127.0.0.1 -p PORT -c 100 -- \
        cmtime -s 127.0.0.1 -p PORT -c 100
done
