#!/bin/sh
# SPDX-License-Identifier: MIT
# libnetdirect-spi exports exactly the names of its version script, under NDSPI_0.1.
set -eu
lib=$1 map=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nm -D --defined-only "$lib" | awk '$2 != "A" {print $3}' | sed 's/@.*//' | sort -u > "$tmp/exported"
sed -n '/global:/,/local:/p' "$map" | grep -oE '^ *[A-Za-z_][A-Za-z0-9_]*;' | tr -d ' ;' | sort -u > "$tmp/mapped"
diff -u "$tmp/mapped" "$tmp/exported" || { echo "exports differ from the map"; exit 1; }
nm -D --defined-only "$lib" | awk '$2 != "A" {print $3}' | grep -v '@@NDSPI_0.1$' && { echo "symbols outside NDSPI_0.1"; exit 1; }
echo "$(wc -l < "$tmp/exported") symbols: exports = map, all NDSPI_0.1"
