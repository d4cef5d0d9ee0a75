#!/bin/sh
# SPDX-License-Identifier: MIT
# Debian's UCX finds nd0 under netdirect-run as a user without privileges: `ucx_info -d`
# lists the memory domain nd0 with rc_verbs and ud_verbs on nd0:1 (UCX opens /dev/infiniband/uverbs0 to
# decide, src/verbs/devtree.c). Without netdirect-run's device tree it lists none.
# Usage: test_verbs_ucx_info.sh NETDIRECT_RUN   (77 without ucx-utils)
set -u
. "$(dirname "$0")/foreign_lib.sh"
nd_run=$1
command -v ucx_info > /dev/null || { echo "ucx-utils not installed"; exit 77; }
fail() { echo "ucx_info: $*"; exit 1; }
as_user=''
# As root, the run is a user's: nobody, who owns nothing here.
[ "$(id -u)" -eq 0 ] && as_user="setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=$tmp"
chmod 755 "$tmp"
# shellcheck disable=SC2086
out=$($as_user "$nd_run" env $pre UCX_NET_DEVICES=nd0:1 timeout 60 ucx_info -d 2>&1) || fail "failed: $out"
printf '%s\n' "$out" | grep -q 'Memory domain: nd0$' || { printf '%s\n' "$out"; fail "no memory domain nd0"; }
printf '%s\n' "$out" | grep -A2 'Transport: rc_verbs$' | grep -q 'Device: nd0:1$' ||
    { printf '%s\n' "$out"; fail "no rc_verbs on nd0:1"; }
printf '%s\n' "$out" | grep -A2 'Transport: ud_verbs$' | grep -q 'Device: nd0:1$' ||
    { printf '%s\n' "$out"; fail "no ud_verbs on nd0:1"; }
# The control: the same libraries without the device tree's preload (a sanitized build's
# runtime stays) show UCX no device.
out=$($as_user "$nd_run" env LD_PRELOAD="${ND_TEST_FOREIGN_PRELOAD:-}" timeout 60 ucx_info -d 2>&1)
printf '%s\n' "$out" | grep -q 'Memory domain: nd0$' && { printf '%s\n' "$out"; fail "nd0 without its device tree"; }
echo "ucx_info: nd0 with rc_verbs and ud_verbs, as uid $($as_user id -u)"
