#!/bin/sh
# SPDX-License-Identifier: MIT
# Debian's UCX (ucx-utils), unmodified, on nd0 under netdirect-run: ucx_perftest's UCP tests
# (tag_lat, tag_bw, ucp_put_lat, ucp_get, ucp_am_lat, ucp_add, ucp_fadd) over UCX_TLS=rc
# (rc_verbs, with ud_verbs for its wire-up) on shm and iwarp, its UCT tests on rc_verbs
# (put_lat, get, am_lat, and the device's atomics: fadd, cswap, add_lat), UCP's tag and AM
# tests over ud_verbs alone, and io_demo with its data check (-q)
# over rc, connected through rdma_cm. On this host, or (netns) between two namespaces.
# Every run must end with ucx_perftest's "Final:" line, or io_demo's "status 'OK'".
# Usage: test_verbs_ucx_perftest.sh NETDIRECT_RUN [local|netns]   (77 without ucx-utils)
set -u
. "$(dirname "$0")/foreign_lib.sh"
nd_run=$1
command -v ucx_perftest > /dev/null && command -v io_demo > /dev/null || { echo "ucx-utils not installed"; exit 77; }
places "${2:-local}"
# Below the ephemeral range (32768 and up), apart from the other tests' ports.
port=$((4000 + $$ % 300 * 26))
dev="UCX_NET_DEVICES=nd0:1"
# A UCP listener listens with every connection manager on one port: rdma_cm's ports are TCP
# ports here (as iWARP's are), so UCX's own TCP one would find it taken (docs/verbs.md).
export UCX_SOCKADDR_TLS_PRIORITY=rdmacm

perf() {    # perf TLS TEST [ARGS...]: one ucx_perftest pair
    tls=$1 test=$2
    shift 2
    port=$((port + 1))
    run_pair "ucx_perftest $tls $test" 0 "Final:" "" -- $dev UCX_TLS=$tls ucx_perftest -p PORT -- \
        $dev UCX_TLS=$tls ucx_perftest -p PORT -t "$test" -n 1000 -w 100 "$@" ADDR
    echo "$transport $tls $test $*: $(grep Final: "$tmp/c" | tr -s ' ')"
}

for transport in $transports; do
    for t in tag_lat tag_bw ucp_put_lat ucp_get ucp_am_lat ucp_add ucp_fadd; do
        perf rc "$t"
    done
    for t in fadd cswap add_lat; do
        perf rc_verbs "$t" -d nd0:1 -x rc_verbs
    done
    perf rc "tag_bw" -s 1048576
    perf rc_verbs put_lat -d nd0:1 -x rc_verbs
    perf rc_verbs am_lat -d nd0:1 -x rc_verbs
    perf rc_verbs get -d nd0:1 -x rc_verbs -D zcopy -s 65536
    port=$((port + 1))
    run_pair "io_demo" 1 "status 'OK'" "" -- $dev UCX_TLS=rc io_demo -p PORT -q -i 500 -d 1:65536 \
        -- $dev UCX_TLS=rc io_demo -p PORT -q -i 500 -d 1:65536 -l 60s ADDR
    echo "$transport io_demo -q over rc: ok"
done
# UD goes over UDP whatever the transport: once.
transport=auto
for t in tag_lat tag_bw ucp_am_lat; do
    perf ud_verbs "$t"
done
