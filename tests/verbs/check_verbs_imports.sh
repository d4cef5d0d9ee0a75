#!/bin/sh
# SPDX-License-Identifier: MIT
# Every name (and version node) that Debian's RDMA programs (and UCX's IB modules) import from libibverbs.so.1,
# librdmacm.so.1, libmlx5.so.1 and libefa.so.1 is exported by ours: they are linked
# BIND_NOW, so one missing name fails them at load. Programs not installed are left out;
# none at all is a skip (77).
# Usage: check_verbs_imports.sh LIBDIR   (netdirect's private library directory)
set -u
dir=$1
progs="ibv_devices ibv_devinfo ibv_rc_pingpong rping ucmatose rdma_server rdma_client cmtime ib_send_lat ib_send_bw
       ib_write_lat ib_write_bw ib_read_lat ib_read_bw fi_info fi_pingpong"
files=
for p in $progs; do
    f=$(command -v "$p") && files="$files $f"
done
fab=$(ldconfig -p | awk '/libfabric\.so\.1 / { print $NF; exit }')
[ -n "$fab" ] && files="$files $fab"
# UCX's IB transports (ucx-utils): loaded with dlopen, so a missing name only hides them.
for f in /usr/lib/x86_64-linux-gnu/ucx/libuct_ib.so.0 /usr/lib/x86_64-linux-gnu/ucx/libuct_rdmacm.so.0; do
    [ -e "$f" ] && files="$files $f"
done
[ -n "$files" ] || { echo "no Debian RDMA programs installed"; exit 77; }
have=$(objdump -T "$dir/libibverbs.so.1" "$dir/librdmacm.so.1" "$dir/libmlx5.so.1" "$dir/libefa.so.1" | awk '$4 == ".text" { print $(NF-1), $NF }' | tr -d '()')
missing=0
# shellcheck disable=SC2086
for pair in $(objdump -T $files 2>/dev/null | awk '/\*UND\*/ && $(NF-1) ~ /IBVERBS|RDMACM|MLX5|EFA/ { print $(NF-1) "@" $NF }' |
              tr -d '()' | sort -u); do
    node=${pair%@*} name=${pair#*@}
    if ! printf '%s\n' "$have" | grep -qx "$node $name"; then
        echo "missing: $name@$node"
        missing=$((missing + 1))
    fi
done
[ "$missing" -eq 0 ] || exit 1
echo "every IBVERBS, RDMACM, MLX5 and EFA import of $(echo "$files" | wc -w) files is exported"
