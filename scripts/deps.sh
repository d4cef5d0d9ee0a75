#!/bin/sh
# SPDX-License-Identifier: MIT
# Install the Debian packages that building and testing need; only what is missing.
set -eu
# libibverbs-dev/librdmacm-dev: the rdma-core 44 headers the verbs drop-in is built against;
# ibverbs-utils, rdmacm-utils, perftest, libfabric-bin: the programs tests/verbs runs on it;
# ucx-utils: UCX's IB modules; ibverbs-providers: libmlx5.so.1 and libefa.so.1, whose names
# tests/verbs/check_abi_exports.sh compares with ours; python3-pyverbs: rdma-core's own test
# suite (tests/verbs/rdma_core_suite.sh) and the Python bindings it runs on; openmpi-bin,
# libopenmpi-dev, netpipe-openmpi: Open MPI across namespaces (tests/verbs/test_verbs_openmpi.sh);
# mpich, libmpich-dev, netpipe-mpich2: MPICH (ch4:ucx) the same way (test_verbs_mpich.sh);
# dpkg-dev: the Debian package's library dependencies (scripts/package.sh, tests/check_install.sh).
pkgs="cmake make gcc g++ clang libclang-rt-14-dev pkg-config libibverbs-dev librdmacm-dev iproute2 linux-perf
      man-db groff-base ibverbs-utils rdmacm-utils perftest libfabric-bin ucx-utils ibverbs-providers
      python3-pyverbs qperf openmpi-bin libopenmpi-dev netpipe-openmpi mpich libmpich-dev netpipe-mpich2 dpkg-dev"
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
    echo "missing packages:$missing (run as root, or: sudo apt-get install$missing)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing > /dev/null
