#!/bin/sh
# SPDX-License-Identifier: MIT
# The verbs library exports exactly the names of its version script, each in the node the
# script puts it in.
# Usage: check_verbs_symbols.sh LIBRARY MAP
set -u
lib=$1 map=$2
want=$(perl -0pe 's{/\*.*?\*/}{}gs' "$map" | awk '/^[A-Z_0-9.]+ *\{/ { node = $1 } /global:/ { sub(/.*global:/, ""); }
            { gsub(/[{};]/, " "); for (i = 1; i <= NF; i++) if ($i ~ /^[a-z_][a-z_0-9]*$/ && $i != "local" && $i != "global") print node, $i }' | sort)
have=$(objdump -T "$lib" | awk '$2 ~ /g/ && ($4 == ".text" || $4 == ".bss") { print $(NF-1), $NF }' | tr -d '()' | sort)
if [ "$want" != "$have" ]; then
    echo "exports differ from $map:"
    printf '%s\n' "$want" > /tmp/want.$$
    printf '%s\n' "$have" > /tmp/have.$$
    diff /tmp/want.$$ /tmp/have.$$
    rm -f /tmp/want.$$ /tmp/have.$$
    exit 1
fi
echo "$(printf '%s\n' "$have" | wc -l) exports, as $map says"
