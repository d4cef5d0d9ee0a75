#!/bin/sh
# SPDX-License-Identifier: MIT
# Open MPI between two network namespaces (two "hosts", one rank each), in one run: NetPIPE's
# NPopenmpi latency (its 1 B to 8 B lines) and large-message bandwidth with pml ucx on
# netdirect's nd0 (UCX_TLS=rc,self) against pml ob1 with btl tcp on the veth, interleaved
# ROUNDS times, unbound (each "host" would bind its rank to core 0 of the same two CPUs); the tcp runs without netdirect-run (nothing of netdirect loaded). Needs root,
# openmpi-bin and netpipe-openmpi. ND_BENCH_NP_MAX: NetPIPE's largest size (4 MiB).
# Usage: bench/mpi_netns.sh NETDIRECT_RUN [ROUNDS]
set -u
nd_run=$(realpath "$1")
rounds=${2:-3}
. "$(dirname "$0")/../tests/netns_lib.sh"
out=$(mktemp -d)
trap 'rm -rf "$out"; netns_cleanup' EXIT
netns_mpi_agent "$out/agent"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm_rsh_agent="$out/agent"
run() {     # run NAME LAUNCHER MCA...: NPopenmpi from hosta to hostb, under LAUNCHER (netdirect-run or env)
    name=$1 launcher=$2
    shift 2
    ip netns exec "$ns_a" unshare -u sh -c 'hostname hosta && exec "$@"' mpirun timeout 300 "$launcher" mpirun \
        --host 198.51.100.1:1,198.51.100.2:1 -np 2 --bind-to none --mca oob_tcp_if_include 198.51.100.0/24 "$@" \
        NPopenmpi -u "${ND_BENCH_NP_MAX:-4194304}" -o "$out/$name.np" > "$out/$name.log" 2>&1 || { cat "$out/$name.log"; exit 1; }
}
for r in $(seq "$rounds"); do
    run ucx "$nd_run" --mca pml ucx -x UCX_TLS=rc,self -x UCX_NET_DEVICES=nd0:1
    awk '$1 == 8 { print "ucx lat", $3 } END { print "ucx bw", $2 }' "$out/ucx.np" >> "$out/all"
    run tcp env --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include 198.51.100.0/24
    awk '$1 == 8 { print "tcp lat", $3 } END { print "tcp bw", $2 }' "$out/tcp.np" >> "$out/all"
done
med() { grep "^$1 $2 " "$out/all" | awk '{ print $3 }' | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
# NetPIPE's columns: bytes, Mbps, seconds per one-way message.
ul=$(med ucx lat) tl=$(med tcp lat) ub=$(med ucx bw) tb=$(med tcp bw)
echo "NPopenmpi 8 B one-way (us, median of $rounds): ucx on nd0 $(echo "$ul" | awk '{ printf "%.2f", $1 * 1e6 }'), btl tcp $(echo "$tl" | awk '{ printf "%.2f", $1 * 1e6 }'), ratio $(echo "$ul $tl" | awk '{ printf "%.2f", $1 / $2 }')"
echo "NPopenmpi 4 MiB (Mbps, median of $rounds): ucx on nd0 $ub, btl tcp $tb, ratio $(echo "$ub $tb" | awk '{ printf "%.2f", $1 / $2 }')"
