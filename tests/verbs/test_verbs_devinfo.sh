#!/bin/sh
# SPDX-License-Identifier: MIT
# Debian's ibv_devices and ibv_devinfo -v, unmodified, under netdirect-run: one device, nd0,
# its port ACTIVE on an Ethernet link layer, the host's addresses as GIDs; the iWARP
# personality changes the transport; in a network namespace of our own the GIDs are that
# namespace's addresses (198.51.100.1 there, and no 127.0.0.1 unless lo is up).
# Usage: test_verbs_devinfo.sh NETDIRECT_RUN   (77 without ibverbs-utils)
set -u
[ -n "${ND_TEST_FOREIGN_SKIP:-}" ] && { echo "not in this build (sanitizer runtime)"; exit 77; }
nd_run=$1
# run PROGRAM ARGS: under netdirect-run, with a sanitized build's runtime preloaded for it.
run() {
    if [ -n "${ND_TEST_FOREIGN_PRELOAD:-}" ]; then
        "$nd_run" env LD_PRELOAD="$ND_TEST_FOREIGN_PRELOAD" "$@"
    else
        "$nd_run" "$@"
    fi
}
command -v ibv_devinfo > /dev/null && command -v ibv_devices > /dev/null || { echo "ibverbs-utils not installed"; exit 77; }
fail() { echo "devinfo: $*"; exit 1; }
# shellcheck disable=SC2329
expect() {   # output, extended regex, what
    printf '%s\n' "$1" | grep -Eq "$2" || { printf '%s\n' "$1"; fail "no $3"; }
}

out=$(run ibv_devices) || fail "ibv_devices failed: $out"
expect "$out" '^ +nd0[[:space:]]+[0-9a-f]{16}$' "nd0 line with its GUID in ibv_devices"

out=$(run ibv_devinfo -v) || fail "ibv_devinfo -v failed: $out"
expect "$out" '^hca_id:[[:space:]]+nd0$' "hca_id nd0"
expect "$out" 'transport:[[:space:]]+InfiniBand \(0\)' "InfiniBand transport (RoCE personality)"
expect "$out" 'fw_ver:[[:space:]]+netdirect ' "firmware version"
expect "$out" 'phys_port_cnt:[[:space:]]+1$' "one port"
expect "$out" 'state:[[:space:]]+PORT_ACTIVE \(4\)' "active port"
expect "$out" 'link_layer:[[:space:]]+Ethernet' "Ethernet link layer"
expect "$out" 'max_qp_wr:[[:space:]]+16384' "queue depth limit"
expect "$out" 'GID\[ *[0-9]+\]:[[:space:]]+::ffff:127\.0\.0\.1, RoCE v2' "loopback's IPv4-mapped GID"

out=$(run env ND_VERBS_PERSONALITY=iwarp ibv_devinfo) || fail "ibv_devinfo (iwarp) failed: $out"
expect "$out" 'transport:[[:space:]]+iWARP \(1\)' "iWARP transport with ND_VERBS_PERSONALITY=iwarp"

# The namespace part needs root and iproute2 (else only the above ran).
if [ "$(id -u)" = 0 ] && command -v ip > /dev/null; then
    (
        . "$(dirname "$0")/../netns_lib.sh"
        # shellcheck disable=SC2154  # set by netns_lib.sh
        out=$(ip netns exec "$ns_a" "$nd_run" env ${ND_TEST_FOREIGN_PRELOAD:+LD_PRELOAD=$ND_TEST_FOREIGN_PRELOAD} ibv_devinfo -v) || fail "ibv_devinfo in a namespace failed: $out"
        expect "$out" 'GID\[ *[0-9]+\]:[[:space:]]+::ffff:198\.51\.100\.1, RoCE v2' "the namespace's address as a GID"
    )
    rc=$?
    [ $rc -eq 0 ] || [ $rc -eq 77 ] || exit 1
fi
echo "ibv_devices and ibv_devinfo -v: nd0 as expected"
