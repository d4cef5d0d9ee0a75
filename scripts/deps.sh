#!/bin/sh
# SPDX-License-Identifier: MIT
# Install the Debian packages that building and testing need; only what is missing.
set -eu
# libibverbs-dev/librdmacm-dev: the rdma-core 44 headers the verbs drop-in is built against;
# ibverbs-utils, rdmacm-utils, perftest, libfabric-bin: the programs tests/verbs runs on it;
# ucx-utils: UCX's IB modules, whose imports tests/verbs/check_verbs_imports.sh checks.
pkgs="cmake make gcc g++ clang libclang-rt-14-dev pkg-config libibverbs-dev librdmacm-dev iproute2 linux-perf
      man-db groff-base ibverbs-utils rdmacm-utils perftest libfabric-bin ucx-utils"
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
