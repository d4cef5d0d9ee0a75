#!/bin/sh
# SPDX-License-Identifier: MIT
# The manual: every page under man/ renders with man -l and no warning; every tool has a
# section 1 page; every function the public headers declare is described in a section 3
# page. Usage: check_man.sh <source dir> <tools dir>
set -u
src=$1 tools=$2
command -v man > /dev/null || { echo "man is not installed"; exit 77; }
fail=0
for page in "$src"/man/*.[137]; do
    warn=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$page" 2>&1 > /dev/null)
    [ -z "$warn" ] || { echo "$(basename "$page"): $warn"; fail=1; }
    [ -n "$(LC_ALL=C.UTF-8 MANWIDTH=80 man -l "$page" 2> /dev/null | grep -m1 DESCRIPTION)" ] ||
        { echo "$(basename "$page"): renders no DESCRIPTION"; fail=1; }
done
for tool in "$tools"/nd_* "$tools"/netdirect-run; do
    [ -x "$tool" ] || continue
    name=$(basename "$tool")
    [ -f "$src/man/$name.1" ] || { echo "$name has no man page"; fail=1; }
done
for fn in $(sed -n 's/^[a-z][a-z_ ]*[ *]\(nd_[a-z0-9_]*\)(.*/\1/p' "$src"/include/netdirect/*.h); do
    grep -q "^\.B $fn\$" "$src"/man/*.3 || { echo "$fn is in no section 3 page"; fail=1; }
done
[ "$fail" = 0 ] && echo "man pages ok: $(ls "$src"/man | wc -l) pages"
exit "$fail"
