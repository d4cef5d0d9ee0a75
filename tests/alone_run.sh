#!/bin/sh
# SPDX-License-Identifier: MIT
# Run a command in a network namespace of its own ("unshare -n", gone when the command
# ends): with only lo, as a container without networking, or with --address also a veth
# pair whose one end has 198.51.100.1/24, so that a program that wants an interface other
# than loopback has one and its traffic still stays in the namespace.
# Usage: alone_run.sh [--address] <command> [args...]   (exit 77 where it cannot be made)
set -u
with_address=0
[ "${1:-}" = --address ] && { with_address=1; shift; }
[ "$(id -u)" = 0 ] || { echo "needs root for a network namespace"; exit 77; }
command -v unshare > /dev/null && command -v ip > /dev/null || { echo "needs unshare and ip"; exit 77; }
unshare -n true 2> /dev/null || { echo "cannot create a network namespace"; exit 77; }
exec unshare -n sh -c '
    ip link set lo up || exit 1
    if [ "$0" = 1 ]; then
        ip link add ndv0 type veth peer name ndv1 && ip addr add 198.51.100.1/24 dev ndv0 &&
        ip link set ndv0 up && ip link set ndv1 up || { echo "cannot create a veth pair"; exit 77; }
    fi
    exec "$@"' "$with_address" "$@"
