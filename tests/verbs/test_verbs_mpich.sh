#!/bin/sh
# SPDX-License-Identifier: MIT
# Debian's MPICH (ch4:ucx), unmodified, across two network namespaces ("hosts" hosta at
# 198.51.100.1 and hostb at 198.51.100.2) on netdirect's nd0: UCX_TLS=rc,self (rc_verbs,
# with ud_verbs for UCX's wire-up). mpiexec.hydra starts in hosta under netdirect-run and
# reaches hostb through a launcher agent that enters its namespace.
#   - an allreduce check on 4 ranks, 2 per host;
#   - NetPIPE (NPmpich2) between the hosts, integrity-checking every size up to 1 MiB.
# Every rank must exit 0, and UCX must name rc_verbs on nd0 for its endpoints.
# Usage: test_verbs_mpich.sh NETDIRECT_RUN   (77 without MPICH, NetPIPE or root)
set -u
. "$(dirname "$0")/foreign_lib.sh"
nd_run=$(realpath "$1")
for p in mpiexec.hydra mpicc.mpich NPmpich2; do
    command -v $p > /dev/null || { echo "$p not installed (mpich, libmpich-dev, netpipe-mpich2)"; exit 77; }
done
places netns
mpicc.mpich -O2 -o "$tmp/allreduce_check" "$foreign_dir/mpi/allreduce_check.c" || exit 1
netns_mpi_agent "$tmp/agent"
# mpiexec HOSTS NP OUT PROGRAM...: from hosta, bounded in time.
mpiexec_in_hosta() {
    hosts=$1 np=$2 out=$3
    shift 3
    # shellcheck disable=SC2154  # set by netns_lib.sh
    ip netns exec "$ns_a" unshare -u sh -c 'hostname hosta && exec "$@"' mpiexec \
        timeout 180 "$nd_run" mpiexec.hydra -launcher ssh -launcher-exec "$tmp/agent" -localhost 198.51.100.1 \
        -hosts "$hosts" -n "$np" -genv UCX_TLS rc,self -genv UCX_NET_DEVICES nd0:1 -genv UCX_LOG_LEVEL info \
        "$@" > "$out" 2>&1
}
if ! mpiexec_in_hosta 198.51.100.1:2,198.51.100.2:2 4 "$tmp/ar" "$tmp/allreduce_check" ||
    [ "$(grep -c 'allreduce 10, expected 10' "$tmp/ar")" != 4 ] ||
    ! grep -q 'tag(rc_verbs/nd0:1)' "$tmp/ar" || [ "$(grep -c 'on hostb:' "$tmp/ar")" != 2 ]; then
    cat "$tmp/ar"
    echo "FAIL: MPICH allreduce across namespaces"
    exit 1
fi
if ! mpiexec_in_hosta 198.51.100.1:1,198.51.100.2:1 2 "$tmp/np" NPmpich2 -i -n 20 -u 1048576 -o "$tmp/np.out" ||
    grep -q "Integrity check failed" "$tmp/np" || ! grep -q "786433 bytes .*Integrity check passed" "$tmp/np"; then
    cat "$tmp/np"
    echo "FAIL: NPmpich2 across namespaces"
    exit 1
fi
echo "MPICH (ch4:ucx, rc_verbs on nd0) across namespaces: allreduce on 4 ranks and NPmpich2 integrity to 1 MiB"
