#!/bin/sh
# SPDX-License-Identifier: MIT
# The tools between two network namespaces joined by a veth pair (made for this run and
# removed after): each server in one (198.51.100.1), its client in the other, over iwarp
# chosen automatically (no shm peer across namespaces). The client's --json line must parse.
# Usage: smoke_tools_netns.sh <tools dir>   (exit 77 without root or iproute2)
set -u
tools=$1
. "$(dirname "$0")/netns_lib.sh"
fail() { echo "smoke (namespaces): $*"; exit 1; }
server_pid=
trap 'kill $server_pid 2> /dev/null; netns_cleanup' EXIT

# pair <port> <tool> <JSON line pattern> <client options...>: a server in $ns_a, the
# client in $ns_b. Ports are free: these namespaces hold nothing else.
pair() {
    port=$1 tool=$2 pattern=$3
    shift 3
    ip netns exec "$ns_a" "$tools/$tool" -s "198.51.100.1:$port" 2> /dev/null &
    server_pid=$!
    out=$(ip netns exec "$ns_b" "$tools/$tool" -c "198.51.100.1:$port" "$@" --json) || fail "$tool $* failed"
    case $tool in nd_conn) kill "$server_pid" 2> /dev/null ;; esac
    wait "$server_pid" 2> /dev/null
    echo "$out" | grep -Eq "$pattern" || fail "$tool $* output: $out"
    echo "$tool $*: $out"
}
num='[0-9.]+'
pair 7001 nd_pingpong "^\\{\"size\":8,\"iterations\":2000,\"latency_us\":$num,.*\"mode\":\"polling\"\\}\$" -S 8 -i 2000
pair 7002 nd_pingpong "\"mode\":\"blocking\"" -b -S 64 -i 500
pair 7003 nd_ping "^\\{\"op\":\"send\",\"size\":4096,\"iterations\":2000,.*\"bytes_per_sec\":[0-9]+" -S 4096 -i 2000
pair 7004 nd_rping "^\\{\"op\":\"write\",\"size\":65536,\"iterations\":200,.*\"bytes_per_sec\":[0-9]+" -w -S 65536 -i 200
pair 7005 nd_rping "^\\{\"op\":\"read\",\"size\":65536,\"iterations\":200,.*\"bytes_per_sec\":[0-9]+" -r -S 65536 -i 200
pair 7006 nd_rpingpong "^\\{\"op\":\"write\",\"size\":64,\"iterations\":2000,\"latency_us\":$num" -S 64 -i 2000
pair 7007 nd_conn "^\\{\"connections\":[1-9][0-9]*,.*\"failures\":0,\"timeouts\":0\\}\$" -d 0.5
echo "tools ok across namespaces"
