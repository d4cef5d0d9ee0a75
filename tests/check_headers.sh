#!/bin/sh
# SPDX-License-Identifier: MIT
# Every public header compiles on its own, as C11 and as C++11, without warnings.
set -eu
inc=$1 cc=$2 cxx=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
for h in "$inc"/netdirect/*.h; do
    name=netdirect/$(basename "$h")
    printf '#include <%s>\n#include <%s>\nint main(void) { return 0; }\n' "$name" "$name" > "$tmp/t.c"
    "$cc" -std=c11 -Wall -Wextra -Werror -pedantic -I"$inc" -c "$tmp/t.c" -o "$tmp/t.o" || { echo "C: $name"; exit 1; }
    cp "$tmp/t.c" "$tmp/t.cpp"
    "$cxx" -std=c++11 -Wall -Wextra -Werror -I"$inc" -c "$tmp/t.cpp" -o "$tmp/t.o" || { echo "C++: $name"; exit 1; }
    n=$((n + 1))
done
[ "$n" -ge 13 ] || { echo "only $n headers found"; exit 1; }
echo "$n headers compile alone as C11 and C++11"
