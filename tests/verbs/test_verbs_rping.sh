#!/bin/sh
# SPDX-License-Identifier: MIT
# Debian's rping (rdmacm-utils), unmodified, under netdirect-run: server and client as two
# processes, on this host over shm and over iwarp, or (netns) between two network
# namespaces over iwarp. 1000 ping-pongs (Send, RDMA Read, RDMA Write each) with the data
# verified (-V), 64 B and 64 KiB - 1 (the largest rping takes); both must exit 0.
# Usage: test_verbs_rping.sh NETDIRECT_RUN [local|netns]   (77 without rdmacm-utils)
set -u
. "$(dirname "$0")/foreign_lib.sh"
nd_run=$1
command -v rping > /dev/null || { echo "rdmacm-utils not installed"; exit 77; }
places "${2:-local}"
# Below the ephemeral range (32768 and up), apart from test_verbs_cm.sh's.
port=$((30000 + $$ % 600 * 4))

for transport in $transports; do
    for size in 64 65535; do
        port=$((port + 1))
        run_pair "rping $size B" 0 "" "" -- rping -s -a ADDR -p PORT -C 1000 -V -S "$size" -- \
            rping -c -a ADDR -p PORT -C 1000 -V -S "$size"
        echo "rping $transport $size B x1000 -V: ok"
    done
done
