#!/bin/sh
# SPDX-License-Identifier: MIT
# cmake --install into a scratch prefix, then build a consumer through pkg-config, as C and C++,
# with the .pc file as installed (its paths must point into that prefix).
set -eu
build=$1 cc=$2 cxx=$3 sanitize=${4:-}
extra=""
[ -z "$sanitize" ] || extra="-fsanitize=$sanitize"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" > /dev/null
pc=$(find "$tmp/prefix" -name netdirect.pc)
[ -n "$pc" ] || { echo "no netdirect.pc installed"; exit 1; }
command -v pkg-config > /dev/null || { echo "pkg-config is not installed"; exit 1; }
export PKG_CONFIG_PATH=$(dirname "$pc")
cat > "$tmp/use.c" <<'C'
#include <netdirect/netdirect.h>
#include <stdio.h>
int main(void) { puts(nd_strerror(ND_PENDING)); return 0; }
C
cp "$tmp/use.c" "$tmp/use.cpp"
"$cxx" $extra "$tmp/use.cpp" -o "$tmp/use_cpp" $(pkg-config --cflags --libs netdirect)
"$cc" $extra "$tmp/use.c" -o "$tmp/use" $(pkg-config --cflags --libs netdirect)
out=$(LD_LIBRARY_PATH=$(pkg-config --variable=libdir netdirect) "$tmp/use")
[ "$out" = "ND_PENDING" ] || { echo "consumer printed '$out'"; exit 1; }
# The manual: a page per tool, netdirect(7), the C API's families.
for page in man1/nd_info.1 man1/nd_test.1 man1/nd_rping_compat.1 man7/netdirect.7 man3/nd_qp.3; do
    [ -n "$(find "$tmp/prefix" -path "*/man/$page")" ] || { echo "$page not installed"; exit 1; }
done
# netdirect-run finds the installed verbs library (its private directory) and runs a program.
"$tmp/prefix/bin/netdirect-run" true || { echo "installed netdirect-run did not run"; exit 1; }
# ... and shows nd0's device tree: the device node UCX looks for, and its sysfs directory.
"$tmp/prefix/bin/netdirect-run" sh -c 'test -c /dev/infiniband/uverbs0 && test -r /sys/class/infiniband/nd0/node_guid' ||
    { echo "installed netdirect-run shows no device tree"; exit 1; }
[ -n "$(find "$tmp/prefix" -path '*/netdirect/libibverbs.so.1')" ] || { echo "libibverbs.so.1 not installed"; exit 1; }
echo "installed; consumer built with pkg-config and ran; man pages in place"
# The Debian package (scripts/package.sh makes it with prefix /usr; here from this build):
# what it carries, and no libibverbs/librdmacm outside the drop-in's private directory.
if command -v cpack > /dev/null && command -v dpkg-deb > /dev/null && [ -f "$build/CPackConfig.cmake" ]; then
    (cd "$tmp" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/pkg" > "$tmp/cpack.log" 2>&1) ||
        { cat "$tmp/cpack.log"; echo "cpack failed"; exit 1; }
    deb=$(ls "$tmp"/pkg/netdirect_*.deb)
    dpkg-deb -c "$deb" | awk '{print $6}' > "$tmp/contents"
    for f in bin/netdirect-run bin/nd_info bin/nd_test 'netdirect/libibverbs\.so\.1$' 'netdirect/librdmacm\.so\.1$' \
             'netdirect/libmlx5\.so\.1$' 'netdirect/libefa\.so\.1$' 'netdirect/libnetdirect-devtree\.so$' \
             'libnetdirect\.so\.0$' 'libnetdirect-spi\.so\.0$' \
             pkgconfig/netdirect.pc pkgconfig/netdirect-spi.pc include/netdirect/netdirect.h include/ndspi/ndspi.h \
             man7/netdirect.7 man1/netdirect-run.1 man3/nd_qp.3; do
        grep -q "$f" "$tmp/contents" || { echo "the package lacks $f"; exit 1; }
    done
    if grep -E '/(libibverbs|librdmacm|libmlx5|libefa)\.so' "$tmp/contents" | grep -vq '/netdirect/'; then
        echo "the package puts a drop-in library on the loader's path"; exit 1
    fi
    dpkg-deb -I "$deb" shlibs > /dev/null 2>&1 && { echo "the package offers shlibs (the drop-in would provide libibverbs)"; exit 1; }
    echo "package: $(wc -l < "$tmp/contents") paths, drop-in in its private directory"
fi
