#!/bin/sh
# SPDX-License-Identifier: MIT
# Debian's Open MPI, unmodified, across two network namespaces ("hosts" hosta at
# 198.51.100.1 and hostb at 198.51.100.2) on netdirect: pml cm, mtl ofi, libfabric's
# verbs provider with ofi_rxm, as mpi-path.md found the path. mpirun starts in hosta under
# netdirect-run and reaches hostb through a launcher agent that enters its namespace (with
# its own host name); nothing is preloaded and no hosts file is touched.
#   - an allreduce check on 4 ranks, 2 per host: within a host over shm, across over iwarp;
#   - NetPIPE (NPopenmpi) between the hosts, integrity-checking every size up to 1 MiB.
# Every rank must exit 0 (MPI_Finalize unloads the drop-in's libraries with libfabric) and
# the provider must be verbs;ofi_rxm. ND_TEST_MPI_RUNS repeats both (tests/long: 20).
# With "ucx": pml ucx instead, UCX_TLS=rc,self (rc_verbs, with ud_verbs for its wire-up)
# on nd0, the path most sites run Open MPI on; UCX's choice of transport is checked.
# Usage: test_verbs_openmpi.sh NETDIRECT_RUN [ucx]   (77 without Open MPI, NetPIPE or root)
set -u
. "$(dirname "$0")/foreign_lib.sh"
nd_run=$(realpath "$1")
for p in mpirun mpicc NPopenmpi; do
    command -v $p > /dev/null || { echo "$p not installed (openmpi-bin, libopenmpi-dev, netpipe-openmpi)"; exit 77; }
done
places netns
# shellcheck disable=SC2154  # set by netns_lib.sh
mpicc -O2 -o "$tmp/allreduce_check" "$foreign_dir/mpi/allreduce_check.c" || exit 1
netns_mpi_agent "$tmp/agent"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm_rsh_agent="$tmp/agent"
pml=${2:-ofi}
if [ "$pml" = ucx ]; then
    path_args="--mca pml ucx -x UCX_TLS=rc,self -x UCX_NET_DEVICES=nd0:1 -x UCX_LOG_LEVEL=info -x UCX_PROTO_INFO=y"
    # UCX names the transports each endpoint uses; across the hosts, rc_verbs on nd0.
    path_seen='rc_verbs/nd0:1'
    path_count=1
else
    path_args="--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include verbs;ofi_rxm --mca mtl_ofi_verbose 1"
    path_seen='mtl:ofi:prov: verbs;ofi_rxm'
    path_count=4
fi
# mpirun HOSTS NP OUT PROGRAM...: from hosta, bounded in time.
mpirun_in_hosta() {
    hosts=$1 np=$2 out=$3
    shift 3
    # shellcheck disable=SC2086
    ip netns exec "$ns_a" unshare -u sh -c 'hostname hosta && exec "$@"' mpirun \
        timeout 180 "$nd_run" mpirun --host "$hosts" -np "$np" \
        --mca oob_tcp_if_include 198.51.100.0/24 --mca btl self,vader $path_args \
        "$@" > "$out" 2>&1
}
runs=${ND_TEST_MPI_RUNS:-1}
i=1
while [ $i -le "$runs" ]; do
    if ! mpirun_in_hosta 198.51.100.1:2,198.51.100.2:2 4 "$tmp/ar" "$tmp/allreduce_check" ||
        [ "$(grep -c 'allreduce 10, expected 10' "$tmp/ar")" != 4 ] ||
        [ "$(grep -c "$path_seen" "$tmp/ar")" -lt $path_count ] ||
        [ "$(grep -c 'on hostb:' "$tmp/ar")" != 2 ]; then
        cat "$tmp/ar"
        echo "FAIL: allreduce across namespaces, run $i"
        exit 1
    fi
    if ! mpirun_in_hosta 198.51.100.1:1,198.51.100.2:1 2 "$tmp/np" NPopenmpi -i -n 20 -u 1048576 -o "$tmp/np.out" ||
        grep -q "Integrity check failed" "$tmp/np" || ! grep -q "786433 bytes .*Integrity check passed" "$tmp/np"; then
        cat "$tmp/np"
        echo "FAIL: NPopenmpi across namespaces, run $i"
        exit 1
    fi
    i=$((i + 1))
done
echo "Open MPI (pml $pml) across namespaces: allreduce on 4 ranks and NPopenmpi integrity to 1 MiB, $runs run(s)"
