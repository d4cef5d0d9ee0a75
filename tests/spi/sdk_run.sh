#!/bin/sh
# SPDX-License-Identifier: MIT
# Run the ND SDK's programs, as built by scripts/nd-sdk-build.sh, on netdirect: the pairs
# as a server and a client process, the others alone, over each transport asked for.
#
#   tests/spi/sdk_run.sh BIN_DIR [shm|iwarp|netns|both|all] [ADDRESS]
#
# netns: the server side in one network namespace (198.51.100.1) and the client side in
# another (198.51.100.2), over iwarp, namespaces made for the run and removed after (root);
# ndmpic runs there too (its ranks need an address each). both = shm iwarp; all = all three.
# A line per run: PASS, FAIL or PART (ran correctly, stopped before its end: ndrpingpong
# over iwarp, below), the exit status of each side and the time taken; output
# goes to BIN_DIR/run-TRANSPORT-PROGRAM.{server,client}.log. Exit status 1 if any failed.
# Ports are below Linux's ephemeral range: a listener cannot bind a port that an outgoing
# connection left in TIME_WAIT, and the SDK's defaults (5432x) are inside it. ndmpic's
# ranks listen on its fixed 54322 and up (it runs in fresh namespaces only).
set -u
bin=$(cd "$1" && pwd) || exit 2
modes=${2:-both}
addr=${3:-127.0.0.1}
[ "$modes" = both ] && modes="shm iwarp"
[ "$modes" = all ] && modes="shm iwarp netns"
failed=0
srv= cli= peer=${ND_SDK_PEER:-}
lib=$(dirname "$0")/../netns_lib.sh
case " $modes " in *" netns "*) . "$lib" ;; esac

# The server is ready once its listening TCP socket exists (ND's CM listens on TCP on
# every transport); a server that exits first ends the wait.
wait_listen() {   # port pid
    i=0
    while [ $i -lt 200 ]; do
        $srv ss -Hltn "sport = :$1" 2>/dev/null | grep -q LISTEN && return 0
        kill -0 "$2" 2>/dev/null || return 1
        sleep 0.05
        i=$((i + 1))
    done
    return 1
}

# ND_SDK_ONLY="label,...": run only those (labels as the report prints them, e.g.
# "ndmpic,ndmemorytest NdWriteViolation").
skip() {
    [ -n "${ND_SDK_ONLY:-}" ] || return 1
    case ",$ND_SDK_ONLY," in *",$1,"*) return 1 ;; esac
    return 0
}

# ndmpic's four ranks connect to each other, each side's to the other's: both sides start
# together, as the SDK's scripts start them.
run_both() {   # label, program, server args, client args
    label=$1 prog=$2 sargs=$3 cargs=$4
    skip "$label" && return
    slog=$bin/run-$mode-$label.server.log clog=$bin/run-$mode-$label.client.log
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    $srv env ND_TRANSPORT=$transport timeout 300 "$bin/$prog" $sargs > "$slog" 2>&1 &
    spid=$!
    # shellcheck disable=SC2086
    $cli env ND_TRANSPORT=$transport timeout 300 "$bin/$prog" $cargs > "$clog" 2>&1
    crc=$?
    wait "$spid"
    src=$?
    report_pair "$label" "$src" "$crc"
}

# After a pair ran (t0, slog and clog set): one line from both exit statuses.
report_pair() {   # label, server status, client status
    t=$(echo "$(date +%s.%N) - $t0" | bc)
    if [ "$2" -eq 0 ] && [ "$3" -eq 0 ]; then
        report "$1" PASS "server rc=0 client rc=0 ${t}s"
    else
        report "$1" FAIL "server rc=$2 client rc=$3 ${t}s ($slog, $clog)"
    fi
}

report() {   # name, status, detail
    printf '%-6s %-5s %-34s %s\n' "$mode" "$2" "$1" "$3"
    [ "$2" = PASS ] || [ "$2" = PART ] || failed=$((failed + 1))
}

run_single() {   # label, program, args...
    label=$1 prog=$2
    shift 2
    skip "$label" && return
    log=$bin/run-$mode-$label.log
    t0=$(date +%s.%N)
    $srv env ND_TRANSPORT=$transport timeout 300 "$bin/$prog" "$@" > "$log" 2>&1
    rc=$?
    t=$(echo "$(date +%s.%N) - $t0" | bc)
    [ $rc -eq 0 ] && report "$label" PASS "rc=0 ${t}s" || report "$label" FAIL "rc=$rc ${t}s ($log)"
}

run_pair() {   # label, program, port, server args, client args (each one quoted string)
    label=$1 prog=$2 port=$3 sargs=$4 cargs=$5
    skip "$label" && return
    slog=$bin/run-$mode-$label.server.log clog=$bin/run-$mode-$label.client.log
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    $srv env ND_TRANSPORT=$transport timeout 300 "$bin/$prog" $sargs > "$slog" 2>&1 &
    spid=$!
    if ! wait_listen "$port" "$spid"; then
        wait "$spid"
        src=$?
        if [ $src -ne 0 ]; then
            report "$label" FAIL "server rc=$src before listening ($slog)"
            return
        fi
        # Some of ndmemorytest's cases run each side alone: then so does the client.
        spid=
    fi
    # shellcheck disable=SC2086
    $cli env ND_TRANSPORT=$transport timeout 300 "$bin/$prog" $cargs > "$clog" 2>&1
    crc=$?
    if [ -n "$spid" ]; then
        wait "$spid"
        src=$?
    fi
    report_pair "$label" "$src" "$crc"
}

# ndconn's client waits 5 s for its server, then connects for 60 s; the server stops after
# 65 s and then takes no more connections. A connect the server refuses leaves the client's
# QP waiting for its posted receive, which the program never reaps, so the client waits for
# ever: the client must end before the server. Started together they end within a few ms of
# each other (the client lost that race across namespaces), so the server starts 2 s after
# the client (of its 5 s wait): the program's own timing gives nothing to synchronise on.
run_ndconn() {
    skip ndconn && return
    slog=$bin/run-$mode-ndconn.server.log clog=$bin/run-$mode-ndconn.client.log
    t0=$(date +%s.%N)
    $cli env ND_TRANSPORT=$transport timeout 300 stdbuf -oL "$bin/ndconn" -c "$addr:24321" > "$clog" 2>&1 &
    cpid=$!
    sleep 2
    $srv env ND_TRANSPORT=$transport timeout 300 stdbuf -oL "$bin/ndconn" -s "$addr:24321" > "$slog" 2>&1
    src=$?
    wait "$cpid"
    report_pair ndconn "$src" $?
}

# ndrpingpong reads its memory without polling: over iwarp each Write then waits for the
# receiving process's progress thread to get a CPU from two spinning threads, and its 1.5
# million round trips do not end on a 2-CPU host. It runs for $RPP_SECONDS s; the line
# reports the sizes it got through (stdout line-buffered so that they show).
RPP_SECONDS=${RPP_SECONDS:-90}
run_partial() {   # label, program, port, server args, client args
    label=$1 prog=$2 port=$3 sargs=$4 cargs=$5
    skip "$label" && return
    slog=$bin/run-$mode-$label.server.log clog=$bin/run-$mode-$label.client.log
    # shellcheck disable=SC2086
    $srv env ND_TRANSPORT=$transport timeout "$RPP_SECONDS" "$bin/$prog" $sargs > "$slog" 2>&1 &
    spid=$!
    wait_listen "$port" "$spid" || { wait "$spid"; report "$label" FAIL "server did not listen ($slog)"; return; }
    # shellcheck disable=SC2086
    $cli env ND_TRANSPORT=$transport timeout "$RPP_SECONDS" stdbuf -oL "$bin/$prog" $cargs > "$clog" 2>&1
    crc=$?
    wait "$spid"
    rows=$(grep -Ec '^ +[0-9]+l ' "$clog")
    last=$(grep -E '^ +[0-9]+l ' "$clog" | tail -1 | awk '{ print $1, $3 }')
    if [ "$crc" -eq 124 ] && [ "$rows" -gt 0 ]; then
        report "$label" PART "stopped after ${RPP_SECONDS}s: $rows sizes, the last $last us ($clog)"
    elif [ "$crc" -eq 0 ]; then
        report "$label" PASS "client rc=0, $rows sizes"
    else
        report "$label" FAIL "client rc=$crc, $rows sizes ($clog)"
    fi
}

memtests="NdConnClose NdConnListenClosing NdConnReject NdDualConnection NdDualListen NdInvalidIP
          NdInvalidRead NdInvalidWrite NdLargePrivateData NdLargeQPDepth NdMRDeregister
          NdMRInvalidBuffer NdOverRead NdOverWrite NdQpMax NdReceiveFlushQP NdSendNoReceive
          NdReceiveConnClosed NdWriteViolation"

addr0=$addr
for mode in $modes; do
    transport=$mode srv= cli= addr=$addr0 peer=${ND_SDK_PEER:-}
    if [ "$mode" = netns ]; then
        # shellcheck disable=SC2154  # set by netns_lib.sh
        transport=iwarp srv="ip netns exec $ns_a" cli="ip netns exec $ns_b" addr=198.51.100.1 peer=198.51.100.2
    fi
    run_single ndadapterinfo ndadapterinfo "$addr"
    run_single ndcat ndcat "$addr"
    run_single ndmrlat ndmrlat "$addr"
    run_single ndmrrate ndmrrate "$addr"
    run_single ndcq ndcq "$addr"
    for io in p b; do
        run_pair "ndping -$io" ndping 24324 "-s -$io $addr:24324" "-c -$io $addr:24324"
        run_pair "ndpingpong -$io" ndpingpong 24325 "-s -$io $addr:24325" "-c -$io $addr:24325"
        run_pair "ndrping -$io" ndrping 24326 "-s -$io $addr:24326" "-c -$io $addr:24326"
        if [ "$transport" = shm ]; then
            run_pair "ndrpingpong -$io" ndrpingpong 24327 "-s -$io $addr:24327" "-c -$io $addr:24327"
        else
            run_partial "ndrpingpong -$io" ndrpingpong 24327 "-s -$io $addr:24327" "-c -$io $addr:24327"
        fi
    done
    run_pair "ndrping -r" ndrping 24326 "-s -r $addr:24326" "-c -r $addr:24326"
    run_ndconn
    run_pair ndmval ndmval 24331 "-s $addr:24331" "-c $addr:24331"
    run_pair ndmw ndmw 24323 "-s $addr:24323" "-c $addr:24323"
    [ -n "$peer" ] && run_both ndmpic ndmpic "-s $addr $peer" "-c $peer $addr"
    for t in $memtests; do
        run_pair "ndmemorytest $t" ndmemorytest 24322 "-s -t $t $addr:24322" "-c -t $t $addr:24322"
    done
done
echo "sdk_run: $failed failed"
[ "$failed" -eq 0 ]
