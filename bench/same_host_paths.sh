#!/bin/sh
# SPDX-License-Identifier: MIT
# Two processes of this host as containers and CI runners may have to run them, side by
# side in one run: perftest's ib_send_lat (8 B, polling: typical us) and ib_write_bw
# (1 MiB: MB/s), with rdma_cm (-R), under netdirect-run with the automatic transport choice:
#   shm           nothing refused
#   no-pidfd      pidfd_getfd refused (EPERM: Docker's default seccomp profile)
#   no-cma        process_vm_readv/writev refused too (EPERM)
#   iwarp         iwarp forced, over loopback
# Each row names the transport the connections took (the library's log). Rounds are
# interleaved ROUNDS times; medians and the ratios against shm are printed.
# Usage: bench/same_host_paths.sh NETDIRECT_RUN SECCOMP_EXEC [ROUNDS]
set -u
nd_run=$(realpath "$1")
seccomp=$(realpath "$2")
rounds=${3:-3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
port=$((27000 + $$ % 300 * 10))
configs="shm no-pidfd no-cma iwarp"

# one CONFIG PROGRAM SIZE: the client's figure; the transport taken goes to $out/took.
one() {
    port=$((port + 1))
    wrap= tr=auto
    case $1 in
    no-pidfd) wrap="$seccomp fetch --" ;;
    no-cma) wrap="$seccomp all --" ;;
    iwarp) tr=iwarp ;;
    esac
    $wrap timeout 60 "$nd_run" env ND_TRANSPORT=$tr ND_LOG=cm:info "$2" -R -s "$3" -n 5000 -p $port > "$out/s" 2>&1 &
    i=0
    until ss -Hltn "sport = :$port" | grep -q LISTEN || [ $i -ge 200 ]; do sleep 0.05; i=$((i + 1)); done
    $wrap timeout 60 "$nd_run" env ND_TRANSPORT=$tr ND_LOG=cm:info "$2" -R -s "$3" -n 5000 -p $port 127.0.0.1 \
        > "$out/c" 2>&1
    wait
    sed -n 's/.*connections of this process take \([a-z]*\).*/\1/p' "$out/c" | head -1 > "$out/took.$1"
    # ib_send_lat: t_typical is the fifth column; ib_write_bw: the average MB/s, the fourth.
    case $2 in
    ib_send_lat) awk -v s="$3" '$1 == s && $2 == 5000 { print $5 }' "$out/c" ;;
    *) awk -v s="$3" '$1 == s && $2 == 5000 { print $4 }' "$out/c" ;;
    esac
}

for r in $(seq "$rounds"); do
    for c in $configs; do
        echo "$c lat $(one "$c" ib_send_lat 8)" >> "$out/all"
        echo "$c bw $(one "$c" ib_write_bw 1048576)" >> "$out/all"
    done
done
med() { grep "^$1 $2 " "$out/all" | awk '{ print $3 }' | sort -g | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : "n/a" }'; }
lat0=$(med shm lat) bw0=$(med shm bw)
echo "| configuration | transport taken | ib_send_lat 8 B (us) | vs shm | ib_write_bw 1 MiB (MB/s) | vs shm |"
echo "|---|---|---|---|---|---|"
for c in $configs; do
    l=$(med "$c" lat) b=$(med "$c" bw)
    echo "| $c | $(cat "$out/took.$c") | $l | $(awk -v a="$l" -v b="$lat0" 'BEGIN { printf "%.2f", a / b }') | $b |" \
         "$(awk -v a="$b" -v b="$bw0" 'BEGIN { printf "%.2f", a / b }') |"
done
