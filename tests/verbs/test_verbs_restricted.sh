#!/bin/sh
# SPDX-License-Identifier: MIT
# Debian's rping -V and ib_write_bw -R under netdirect-run as a container runs them:
# pidfd_getfd refused (EPERM; RULES fetch) or process_vm_readv/writev refused too (RULES
# all: the bounce path, which ib_read_bw and ib_atomic_bw take as well), and, when we are
# root, as nobody. Both sides must exit 0 and both must have taken shm (their logs say
# so), not iwarp.
# Usage: test_verbs_restricted.sh NETDIRECT_RUN [RULES]   (77 without rdmacm-utils or perftest)
set -u
. "$(dirname "$0")/foreign_lib.sh"
nd_run=$1 rules=${2:-fetch}
command -v rping > /dev/null || { echo "rdmacm-utils not installed"; exit 77; }
command -v ib_write_bw > /dev/null || { echo "perftest not installed"; exit 77; }
places restricted "$rules"
transport=auto
# Below the ephemeral range, apart from the other tests' ports.
port=$((31000 + $$ % 200 * 8))
case $rules in
fetch) refused="pidfd_getfd refused" ;;
*) refused="pidfd_getfd and process_vm_readv/writev refused" ;;
esac

for size in 64 65535; do
    port=$((port + 1))
    run_pair "rping $size B" 0 "" "" -- rping -s -a ADDR -p PORT -C 1000 -V -S "$size" -- \
        rping -c -a ADDR -p PORT -C 1000 -V -S "$size"
    check_took_shm "rping $size B"
    echo "rping $size B x1000 -V, $refused: ok over shm"
done
port=$((port + 1))
run_pair "ib_write_bw" 0 "" "" -- ib_write_bw -R -a -n 100 -p PORT -- ib_write_bw -R -a -n 100 -p PORT ADDR
grep -Eq '^ *1048576 +100 ' "$tmp/c" || { cat "$tmp/c"; echo "ib_write_bw: no row for 1 MiB"; exit 1; }
check_took_shm "ib_write_bw"
echo "ib_write_bw -R -a, $refused: ok over shm ($(grep -E '^ *1048576 ' "$tmp/c" | tr -s ' \t' ' '))"
[ "$rules" = fetch ] && exit 0
port=$((port + 1))
run_pair "ib_read_bw" 0 "" "" -- ib_read_bw -R -a -n 100 -p PORT -- ib_read_bw -R -a -n 100 -p PORT ADDR
grep -Eq '^ *1048576 +100 ' "$tmp/c" || { cat "$tmp/c"; echo "ib_read_bw: no row for 1 MiB"; exit 1; }
check_took_shm "ib_read_bw"
echo "ib_read_bw -R -a, $refused: ok over shm ($(grep -E '^ *1048576 ' "$tmp/c" | tr -s ' \t' ' '))"
port=$((port + 1))
run_pair "ib_atomic_bw" 0 "" "" -- ib_atomic_bw -R -n 1000 -p PORT -- ib_atomic_bw -R -n 1000 -p PORT ADDR
grep -Eq '^ *8 +1000 ' "$tmp/c" || { cat "$tmp/c"; echo "ib_atomic_bw: no row for 8 B"; exit 1; }
check_took_shm "ib_atomic_bw"
echo "ib_atomic_bw -R, $refused: ok over shm ($(grep -E '^ *8 +1000 ' "$tmp/c" | tr -s ' \t' ' '))"
