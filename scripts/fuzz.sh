#!/bin/sh
# SPDX-License-Identifier: MIT
# Run libFuzzer targets for a while each, over their kept corpus (tests/fuzz/corpus/NAME),
# and fail when one crashed: by its exit status or by an artifact (crash-, leak-, timeout-,
# oom-) it wrote. Each runs in a temporary directory; a crash's artifacts are kept in
# fuzz-artifacts/NAME/ for reproduction (NAME ARTIFACT replays one).
# Usage: scripts/fuzz.sh [-k] SECONDS TARGET...
#   -k  keep the new corpus entries the run found (copied into tests/fuzz/corpus/NAME)
set -u
cd "$(dirname "$0")/.."
keep=0
if [ "${1:-}" = -k ]; then
    keep=1
    shift
fi
[ $# -ge 2 ] || { echo "usage: $0 [-k] SECONDS TARGET..." >&2; exit 2; }
seconds=$1
shift
failed=0
for f in "$@"; do
    [ -x "$f" ] || { echo "$f: not an executable fuzz target" >&2; failed=1; continue; }
    name=$(basename "$f")
    work=$(mktemp -d)
    mkdir "$work/corpus" "$work/artifacts"
    cp tests/fuzz/corpus/"$name"/* "$work/corpus/" 2> /dev/null
    ND_LOG=none "$f" -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
        "$work/corpus" > "$work/log" 2>&1
    rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log")
    if [ "$rc" -ne 0 ] || [ -n "$(ls "$work/artifacts")" ]; then
        echo "$name: CRASHED (exit $rc) after ${runs:-?} runs"
        grep -E "ERROR|SUMMARY|deadly signal|Test unit written" "$work/log" | head -20
        mkdir -p fuzz-artifacts/"$name"
        cp "$work"/artifacts/* fuzz-artifacts/"$name"/ 2> /dev/null &&
            echo "$name: artifacts kept in fuzz-artifacts/$name/"
        failed=1
    else
        echo "$name: ${runs:-?} runs in ${seconds} s, no crash"
        if [ "$keep" = 1 ]; then
            mkdir -p tests/fuzz/corpus/"$name"
            new=0
            for c in "$work"/corpus/*; do
                [ -e "tests/fuzz/corpus/$name/$(basename "$c")" ] && continue
                cp "$c" tests/fuzz/corpus/"$name"/ && new=$((new + 1))
            done
            echo "$name: $new new corpus entries kept"
        fi
    fi
    rm -rf "$work"
done
exit $failed
