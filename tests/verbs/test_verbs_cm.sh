#!/bin/sh
# SPDX-License-Identifier: MIT
# Debian's rdma_cm programs (rdmacm-utils), unmodified, under netdirect-run, server and
# client as two processes, on this host over shm and over iwarp, or (netns) between two
# network namespaces over iwarp:
#   ucmatose -C 100 (100 Sends each way on one connection), ucmatose -c 10 (ten connections),
#   rdma_server / rdma_client (synchronous ids, the library's own PD and CQs),
#   rdma_xserver / rdma_xclient (the same; the client posts inline data it never asked room for),
#   cmtime -c 100 (100 connections made and torn down; its server never exits: stopped),
#   qperf -cm1 rc_lat rc_bw rc_rdma_write_lat rc_rdma_read_bw (ids bound to port 0, which
#   the server tells the client; the bandwidth sides ask for no room in one direction; its
#   server never exits: stopped).
# Each side must exit 0 (cmtime's client only) and print its success line.
# Usage: test_verbs_cm.sh NETDIRECT_RUN [local|netns]   (77 without rdmacm-utils)
set -u
. "$(dirname "$0")/foreign_lib.sh"
nd_run=$1
command -v ucmatose > /dev/null || { echo "rdmacm-utils not installed"; exit 77; }
places "${2:-local}"
# Below the ephemeral range (32768 and up): a listener cannot take a port a connection left
# in TIME_WAIT.
port=$((12000 + $$ % 1000 * 8))

for transport in $transports; do
    port=$((port + 1))
    run_pair "ucmatose -C 100" 0 "^test complete" "^test complete" -- ucmatose -b ADDR -p PORT -C 100 -- \
        ucmatose -s ADDR -p PORT -C 100
    echo "$transport ucmatose -C 100: ok"
    port=$((port + 1))
    run_pair "ucmatose -c 10" 0 "^test complete" "^test complete" -- ucmatose -b ADDR -p PORT -c 10 -- \
        ucmatose -s ADDR -p PORT -c 10
    echo "$transport ucmatose -c 10: ok"
    port=$((port + 1))
    run_pair "rdma_server/rdma_client" 0 "rdma_client: end 0" "rdma_server: end 0" -- rdma_server -p PORT -- \
        rdma_client -s ADDR -p PORT
    echo "$transport rdma_server/rdma_client: ok"
    port=$((port + 1))
    run_pair "rdma_xserver/rdma_xclient" 0 "rdma_xclient: end 0" "rdma_xserver: end 0" -- rdma_xserver -p PORT -- \
        rdma_xclient -s ADDR -p PORT
    echo "$transport rdma_xserver/rdma_xclient: ok"
    port=$((port + 1))
    run_pair "cmtime -c 100" 1 "^connect +:" "" -- cmtime -b ADDR -p PORT -c 100 -- \
        cmtime -s ADDR -p PORT -c 100
    echo "$transport cmtime -c 100: ok"
    port=$((port + 1))
    run_pair "qperf -cm1" 1 "rc_rdma_read_bw:" "" -- qperf -lp PORT -- \
        qperf ADDR -lp PORT -cm1 -t 1 rc_lat rc_bw rc_rdma_write_lat rc_rdma_read_bw
    [ "$(grep -Ec '^ +(latency|bw) += +[0-9.]+ [a-zA-Z]+/?[a-z]*$' "$tmp/c")" -eq 4 ] || { cat "$tmp/c"; exit 1; }
    echo "$transport qperf -cm1: ok ($(grep -E '^ +(latency|bw)' "$tmp/c" | tr -s ' ' | tr '\n' ';'))"
done
