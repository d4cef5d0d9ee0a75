#!/bin/sh
# SPDX-License-Identifier: MIT
# Debian's libfabric fabtest fi_pingpong, unmodified, under netdirect-run over the verbs
# provider with ofi_rxm on top (FI_EP_RDM: rxm's eager and rendezvous protocols over RC
# connections the verbs provider makes with rdma_cm; with and without rxm's shared receive
# queue), server and client as two processes on this host over shm and over iwarp, or in two
# network namespaces over iwarp. Given no address, libfabric probes "localhost" and, finding
# no device there, advertises the device's interface addresses (as with kernel rxe or siw);
# so locally (as root) the pair runs in a network namespace of its own, where that address is
# 198.51.100.1 on a veth pair, and its traffic stays in the namespace. Both must exit 0 and
# the client must report every size up to 1 MiB.
# Usage: test_verbs_fi_pingpong.sh NETDIRECT_RUN [local|netns]   (77 without libfabric-bin)
set -u
if [ "${2:-local}" = local ] && [ -z "${ND_TEST_ALONE:-}" ] && [ "$(id -u)" = 0 ]; then
    ND_TEST_ALONE=1 "$(dirname "$0")/../alone_run.sh" --address "$0" "$@"
    rc=$?
    [ $rc = 77 ] || exit $rc
fi
. "$(dirname "$0")/foreign_lib.sh"
nd_run=$1
command -v fi_pingpong > /dev/null || { echo "libfabric-bin not installed"; exit 77; }
places "${2:-local}"
export FI_TCP_IFACE=lo FI_NET_IFACE=lo
# Below the ephemeral range, apart from the other tests' ports.
port=$((21000 + $$ % 1000 * 5))

# The side that finishes second can report "Work Request Flushed Error" after every size
# passed: rxm passes a flush of its own receives to the application while it still reads its
# CQ. Such flushes came at once from the peer's disconnect until a RoCE-personality QP kept
# its receives as rxe's does (test_rdmacm_peer_left); since then, only where rxm itself
# closes the connection first, as it may on rxe too (1 run in 90 under three concurrent ASan
# loops of this test across namespaces, none alone). Such a run is run once more; a second
# one fails the test.
retry_on='Work Request Flushed Error'
for transport in $transports; do
    # rxm on the verbs QPs' own receives, then on one shared receive queue (an SRQ).
    for srq in 0 1; do
        port=$((port + 1))
        export FI_OFI_RXM_USE_SRQ=$srq
        # -B: the server's out-of-band port (the pair's listener), -P: the client's peer port.
        run_pair "fi_pingpong verbs;ofi_rxm, SRQ $srq" 0 "^1m +[0-9]+ +=[0-9]+ " "^1m +[0-9]+ +=[0-9]+ " -- \
            fi_pingpong -p "verbs;ofi_rxm" -e rdm -B PORT -- fi_pingpong -p "verbs;ofi_rxm" -e rdm -P PORT ADDR
        echo "fi_pingpong -p verbs;ofi_rxm -e rdm $transport, FI_OFI_RXM_USE_SRQ=$srq: ok ($(grep -E '^1m ' "$tmp/c" | tr -s ' '))"
    done
done
