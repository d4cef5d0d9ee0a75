#!/bin/sh
# SPDX-License-Identifier: MIT
# The shared library exports exactly the symbols of the map, and the map lists exactly the
# functions the public headers declare.
set -eu
lib=$1 map=$2 inc=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nm -D --defined-only "$lib" | awk '$2 != "A" {print $3}' | sed 's/@.*//' | sort -u > "$tmp/exported"
sed -n '/global:/,/local:/p' "$map" | grep -oE 'nd_[a-z0-9_]+' | sort -u > "$tmp/mapped"
cat "$inc"/netdirect/*.h | tr '\n' ' ' | grep -oE '[a-z_0-9 *]+ \**nd_[a-z0-9_]+\(' |
    grep -oE 'nd_[a-z0-9_]+\($' | tr -d '(' | sort -u > "$tmp/declared"
diff -u "$tmp/mapped" "$tmp/exported" || { echo "exports differ from the map"; exit 1; }
diff -u "$tmp/mapped" "$tmp/declared" || { echo "map differs from the headers"; exit 1; }
echo "$(wc -l < "$tmp/exported") symbols: exports = map = headers"
