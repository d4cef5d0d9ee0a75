#!/bin/sh
# SPDX-License-Identifier: MIT
# Debian's libfabric (fi_info -p verbs) under netdirect-run finds the device: nd0's FI_EP_MSG
# info (RDMA CM, RC) and verbs;ofi_rxm's FI_EP_RDM infos on top of it.
# Usage: test_verbs_fi_info.sh NETDIRECT_RUN   (77 without libfabric-bin)
set -u
. "$(dirname "$0")/foreign_lib.sh"
nd_run=$1
command -v fi_info > /dev/null || { echo "libfabric-bin not installed"; exit 77; }
export FI_TCP_IFACE=lo FI_NET_IFACE=lo
# shellcheck disable=SC2086
out=$("$nd_run" env $pre fi_info -p verbs 2>&1) ||
    { echo "$out"; echo "fi_info -p verbs failed"; exit 1; }
# One record per provider line: provider, fabric, domain, version, type, protocol.
msg=$(printf '%s\n' "$out" | awk '/^provider:/ { p = $2 } /domain:/ { d = $2 } /type:/ { t = $2 }
                                  /protocol:/ { print p, d, t, $2 }')
printf '%s\n' "$msg" | grep -qx "verbs nd0 FI_EP_MSG FI_PROTO_RDMA_CM_IB_RC" ||
    { echo "$out"; echo "no verbs FI_EP_MSG info on nd0"; exit 1; }
printf '%s\n' "$msg" | grep -qx "verbs;ofi_rxm nd0 FI_EP_RDM FI_PROTO_RXM" ||
    { echo "$out"; echo "no verbs;ofi_rxm FI_EP_RDM info on nd0"; exit 1; }
echo "fi_info -p verbs: $(printf '%s\n' "$msg" | wc -l) infos on nd0, MSG and RDM"
