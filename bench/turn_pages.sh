#!/bin/sh
# SPDX-License-Identifier: MIT
# How many pages the path from a message in to the reply out touches, counted instruction by
# instruction: nd_pingpong's server (iwarp over loopback, 8 B, polling) runs under valgrind's
# lackey, which logs every instruction and data address; each window runs from the entry of
# libc's recv to the entry of the send that follows it, and its distinct 4 KiB pages are
# counted (median over the windows after the first third), code by object and data.
# On a machine whose system calls flush the TLB each page costs a refill
# (bench/page_cost.sh prices one). Needs valgrind; takes a few minutes.
# Usage: bench/turn_pages.sh [build-dir] [iterations]   (KEEP=dir keeps the per-window counts)
set -u
build=${1:-build}
iters=${2:-600}
port=$((29500 + $$ % 400))
tmp=$(mktemp -d)
trap 'kill "$vpid" 2> /dev/null; [ -n "${KEEP:-}" ] && cp "$tmp/windows" "$tmp/maps" "$KEEP"; rm -rf "$tmp"' EXIT
libc=$(ldd "$build/tools/nd_pingpong" | awk '$1 ~ /^libc\.so/ { print $3 }')
offset() { nm -D "$libc" | awk -v s="$1" '$3 ~ "^" s "@@" { print $1; exit }'; }
recv_off=$(offset recv) send_off=$(offset send)

# Under lackey the server runs some thousand times slower: no timer may end the connection.
export ND_TRANSPORT=iwarp ND_CM_TIMEOUT_MS=600000 ND_IWARP_TIMEOUT_MS=600000
valgrind --tool=lackey --trace-mem=yes --log-file="$tmp/trace" \
    "$build/tools/nd_pingpong" -s "127.0.0.1:$port" > /dev/null 2>&1 &
vpid=$!
i=0
until ss -Hltn "sport = :$port" | grep -q LISTEN || [ $i -ge 600 ]; do sleep 0.1; i=$((i + 1)); done
cp "/proc/$vpid/maps" "$tmp/maps"
"$build/tools/nd_pingpong" -c "127.0.0.1:$port" -p -S 8 -i "$iters" > /dev/null
wait "$vpid"
# Text ranges of the objects, and libc's load base (its first mapping's start).
ranges=$(awk '$2 ~ /x/ && $6 != "" { n = split($6, p, "/"); split($1, r, "-"); printf "%s:%s:%s ", p[n], r[1], r[2] }' "$tmp/maps")
# Functions only the library's own threads run (the engine, the sweeper): a window in which
# one of them ran interleaves another thread's pages (valgrind runs one thread at a time, and
# so slowly that the engine serves connections the application polls) and is left out.
lib=$(awk '$6 ~ /libnetdirect/ { print $6; exit }' "$tmp/maps")
lib_base=$(awk '$6 ~ /libnetdirect/ { split($1, r, "-"); print r[1]; exit }' "$tmp/maps")
others=$(nm -S "$lib" | awk '$3 ~ /^[tT]$/ && $4 ~ /^(engine_main|serve|serve_keys|sweep_main|sweep_once|park_if_polled|set_parked)(\.|$)/ { printf "%s:%s ", $1, $2 }')
libc_base=$(awk -v l="$(basename "$libc")" '$6 ~ l { split($1, r, "-"); print r[1]; exit }' "$tmp/maps")

awk -v ranges="$ranges" -v base="$libc_base" -v others="$others" -v lib_base="$lib_base" -v ro="$recv_off" -v so="$send_off" '
function hex(s,    i, c, v) { v = 0; s = tolower(s); for (i = 1; i <= length(s); i++) { c = index("0123456789abcdef", substr(s, i, 1)) - 1; v = v * 16 + c } return v }
function object(a,    k) { for (k = 1; k <= nr; k++) if (a >= lo[k] && a < hi[k]) return name[k]; return "other" }
BEGIN {
    n = split(ranges, rs, " ")
    for (k = 1; k <= n; k++) { split(rs[k], f, ":"); nr++; name[nr] = f[1]; lo[nr] = hex(f[2]); hi[nr] = hex(f[3]) }
    recv = hex(base) + hex(ro); send = hex(base) + hex(so); open = 0
    n = split(others, os, " ")
    for (k = 1; k <= n; k++) { split(os[k], f, ":"); no++; olo[no] = hex(lib_base) + hex(f[1]); ohi[no] = olo[no] + hex(f[2]) }
}
function other_thread(a,    k) { for (k = 1; k <= no; k++) if (a >= olo[k] && a < ohi[k]) return 1; return 0 }
/^(I|  *[LSM]) / {
    kind = $1; split($2, f, ","); a = hex(f[1])
    if (kind == "I" && a == recv) { open = 1; tainted = 0; delete pg; next }
    if (kind == "I" && a == send && open && tainted) { open = 0; next }
    if (kind == "I" && a == send && open) {
        w++
        cnt["data"] = 0
        for (p in pg) { c = pg[p]; cnt[c]++ }
        printf "%d", w > "/dev/stderr"
        for (c in cnt) printf " %s=%d", c, cnt[c] > "/dev/stderr"
        printf "\n" > "/dev/stderr"
        for (c in cnt) delete cnt[c]
        open = 0; next
    }
    if (!open) next
    p = int(a / 4096)
    if (kind == "I" && !tainted && other_thread(a)) tainted = 1
    if (kind == "I") { if (!(p in pg)) pg[p] = object(a) } else if (!(p in pg)) pg[p] = "data"
}' "$tmp/trace" 2> "$tmp/windows"
# Only windows whose path went through the application (the reply's post), after the first
# third of them: the others are the library sending on its own (under lackey's slowness,
# held fence answers go out on their timer).
total=$(wc -l < "$tmp/windows")
awk -v skip=$((total / 3)) -v app="$(basename "$build/tools/nd_pingpong")" '
    NR > skip && index($0, " " app "=") {
        used++; all = 0
        for (i = 2; i <= NF; i++) { split($i, kv, "="); print kv[1], kv[2]; all += kv[2] }
        print "all", all
    }
    END { print "windows", used > "/dev/stderr" }' "$tmp/windows" 2> "$tmp/used" | sort -k1,1 -k2n > "$tmp/values"
awk '{ v[$1, ++n[$1]] = $2 } END { for (k in n) print k, v[k, int((n[k] + 1) / 2)] }' "$tmp/values" | sort > "$tmp/medians"
echo "## Pages touched from a message in to the reply out (nd_pingpong -s, iwarp, 8 B; $(awk '{ print $2 }' "$tmp/used") windows)"
echo
echo "| pages (median per window) | |"
echo "|---|---|"
awk '{ printf "| %s | %s |\n", ($1 == "data" ? "data (any mapping)" : $1 == "all" ? "all" : "code: " $1), $2 }' "$tmp/medians"
