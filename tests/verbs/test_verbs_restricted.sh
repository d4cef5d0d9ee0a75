#!/bin/sh
# SPDX-License-Identifier: MIT
# Debian's rping -V and ib_write_bw -R under netdirect-run as a container runs them:
# pidfd_getfd refused (EPERM) and, when we are root, as nobody. Both sides must exit 0 and
# both must have taken shm (their logs say so), not iwarp.
# Usage: test_verbs_restricted.sh NETDIRECT_RUN   (77 without rdmacm-utils or perftest)
set -u
. "$(dirname "$0")/foreign_lib.sh"
nd_run=$1
command -v rping > /dev/null || { echo "rdmacm-utils not installed"; exit 77; }
command -v ib_write_bw > /dev/null || { echo "perftest not installed"; exit 77; }
places restricted
transport=auto
# Below the ephemeral range, apart from the other tests' ports.
port=$((31000 + $$ % 400 * 4))

for size in 64 65535; do
    port=$((port + 1))
    run_pair "rping $size B" 0 "" "" -- rping -s -a ADDR -p PORT -C 1000 -V -S "$size" -- \
        rping -c -a ADDR -p PORT -C 1000 -V -S "$size"
    check_took_shm "rping $size B"
    echo "rping $size B x1000 -V, pidfd_getfd refused: ok over shm"
done
port=$((port + 1))
run_pair "ib_write_bw" 0 "" "" -- ib_write_bw -R -a -n 100 -p PORT -- ib_write_bw -R -a -n 100 -p PORT ADDR
grep -Eq '^ *1048576 +100 ' "$tmp/c" || { cat "$tmp/c"; echo "ib_write_bw: no row for 1 MiB"; exit 1; }
check_took_shm "ib_write_bw"
echo "ib_write_bw -R -a, pidfd_getfd refused: ok over shm ($(grep -E '^ *1048576 ' "$tmp/c" | tr -s ' \t' ' '))"
