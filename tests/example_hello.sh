#!/bin/sh
# SPDX-License-Identifier: MIT
# The README's example program: its server prints what its client sent, over shm and iwarp.
# Usage: example_hello.sh <hello binary>
set -u
hello=$1
# The example leaves its objects to process exit, on purpose (the close paths are tested
# elsewhere): LeakSanitizer would count them.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; kill $(jobs -p) 2>/dev/null' EXIT
port=$((25000 + $$ % 1000))
for tr in shm iwarp; do
    port=$((port + 1))
    mkfifo "$tmp/ready.$tr"
    ND_TRANSPORT=$tr timeout 20 "$hello" 127.0.0.1 "$port" > "$tmp/out.$tr" 2> "$tmp/ready.$tr" &
    server=$!
    read -r line < "$tmp/ready.$tr"             # the server says "listening" once it is
    [ "$line" = listening ] || { echo "hello server ($tr): $line"; exit 1; }
    ND_TRANSPORT=$tr timeout 20 "$hello" 127.0.0.1 "$port" 127.0.0.1 || { echo "hello client ($tr) failed"; exit 1; }
    wait "$server" || { echo "hello server ($tr) failed"; exit 1; }
    [ "$(cat "$tmp/out.$tr")" = hello ] || { echo "hello ($tr) printed '$(cat "$tmp/out.$tr")'"; exit 1; }
done
echo "example ok on shm and iwarp"
