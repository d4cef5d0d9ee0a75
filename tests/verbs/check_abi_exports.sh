#!/bin/sh
# SPDX-License-Identifier: MIT
# Every default-version name of Debian's installed libibverbs.so.1, librdmacm.so.1,
# libmlx5.so.1 and libefa.so.1 (and every version node they define) is exported by ours
# in the same node: a program or Python module linked against rdma-core then loads on
# netdirect whatever it imports. Not installed: a skip (77).
# Usage: check_abi_exports.sh LIBDIR   (netdirect's private library directory)
set -u
dir=$1
sysdir=/usr/lib/x86_64-linux-gnu
# "NODE NAME" for each defined symbol of default version (objdump puts others in parentheses).
exports() {
    objdump -T "$1" | awk 'NR > 4 && !/\*UND\*/ && NF >= 4 && $(NF-1) !~ /^\(/ { print $(NF-1), $NF }' | sort -u
}
checked=0 missing=0
for lib in libibverbs.so.1 librdmacm.so.1 libmlx5.so.1 libefa.so.1; do
    [ -e "$sysdir/$lib" ] || continue
    ours=$(exports "$dir/$lib")
    for pair in $(exports "$sysdir/$lib" | tr ' ' '@'); do
        checked=$((checked + 1))
        if ! printf '%s\n' "$ours" | grep -qx "${pair%@*} ${pair#*@}"; then
            echo "$lib: missing ${pair#*@}@${pair%@*}"
            missing=$((missing + 1))
        fi
    done
done
[ "$checked" -gt 0 ] || { echo "rdma-core's libraries are not installed"; exit 77; }
[ "$missing" -eq 0 ] || exit 1
echo "all $checked default-version names of rdma-core's libraries are exported, each in its node"
