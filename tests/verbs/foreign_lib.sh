# SPDX-License-Identifier: MIT
# Sourced by the tests that run Debian's programs under netdirect-run. Sets $pre (a sanitized
# build's runtime to preload into those programs, or nothing); exits 77 where that runtime
# cannot be preloaded (TSan).
[ -n "${ND_TEST_FOREIGN_SKIP:-}" ] && { echo "not in this build (sanitizer runtime)"; exit 77; }
# The runtime goes first; netdirect-run's own preload (the device tree, beside the drop-in
# libraries; $1 of the sourcing script is netdirect-run) stays after it.
pre=${ND_TEST_FOREIGN_PRELOAD:+LD_PRELOAD=$ND_TEST_FOREIGN_PRELOAD:$(dirname "$1")/../lib/netdirect/libnetdirect-devtree.so}
foreign_dir=$(dirname "$0")
tmp=$(mktemp -d)
foreign_cleanup() {
    # shellcheck disable=SC2046
    kill $(jobs -p) 2> /dev/null
    rm -rf "$tmp"
}
trap foreign_cleanup EXIT

# places MODE: where a pair's two sides run.
#   local: both on this host, server on 127.0.0.1, over shm and then over iwarp;
#   netns: server in one namespace (198.51.100.1), client in another (netns_lib.sh makes and
#          removes them; exits 77 without root), over iwarp, the only way between them.
# Sets $srv_in/$cli_in (the command prefix that enters a side's namespace), $srv_addr and
# $transports.
places() {
    srv_in='' cli_in='' srv_addr=127.0.0.1 transports=${ND_TEST_TRANSPORTS:-shm iwarp}
    [ "${1:-local}" = restricted ] && { restricted_places "${2:-fetch}"; return; }
    [ "${1:-local}" = netns ] || return 0
    . "$foreign_dir/../netns_lib.sh"
    trap 'foreign_cleanup; netns_cleanup' EXIT
    # shellcheck disable=SC2154  # set by netns_lib.sh
    srv_in="ip netns exec $ns_a" cli_in="ip netns exec $ns_b" srv_addr=198.51.100.1 transports=iwarp
}

# gid_index ADDR: the index of ADDR's GID in the port's table, as the server's namespace
# numbers them.
# Both sides as a container runs them: the calls of seccomp_exec's RULES refused (EPERM;
# fetch: pidfd_getfd, as Docker's default seccomp profile without CAP_SYS_PTRACE; all:
# process_vm_readv/writev too) and, when we are root, as nobody; the transport is the
# automatic choice, and each side's log says which it took (check_took_shm).
restricted_places() {
    wrap="$(dirname "$nd_run")/../tests/seccomp_exec $1 --" transports=auto
    if [ "$(id -u)" = 0 ]; then
        setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$nd_run" ||
            { echo "nobody cannot run $nd_run: skipped"; exit 77; }
        wrap="setpriv --reuid=65534 --regid=65534 --clear-groups $wrap"
    fi
    srv_in=$wrap cli_in=$wrap
    export ND_LOG=cm:info
}

check_took_shm() {
    for f in "$tmp/c" "$tmp/s"; do
        grep -q "take shm" "$f" && ! grep -q "take iwarp" "$f" ||
            { cat "$f"; echo "$1: a side's connections did not all take shm"; exit 1; }
    done
}

gid_index() {
    # shellcheck disable=SC2086
    $srv_in "$nd_run" env $pre ibv_devinfo -v 2> /dev/null | sed -n "s/.*GID\[ *\([0-9]*\)\]:.*:$1,.*/\1/p" | head -1
}

# wait_listen PORT PID: until something listens on TCP PORT in the server's namespace (a
# netdirect listener always does), or PID exits. No sleep stands in for it. With
# wait_proto=u, a UDP socket bound to PORT (a UD listener of rdma_cm).
wait_listen() {
    i=0
    while [ $i -lt 200 ]; do
        $srv_in ss -Hl"${wait_proto:-t}"n "sport = :$1" 2> /dev/null | grep -Eq 'LISTEN|UNCONN' && return 0
        kill -0 "$2" 2> /dev/null || return 1
        sleep 0.05
        i=$((i + 1))
    done
    return 1
}

# run_pair NAME SERVER_STAYS(0/1) CLIENT_PATTERN SERVER_PATTERN -- server args -- client args
# One server/client run on $transport and $port (both set by the caller). PORT and ADDR in
# the arguments become $port and $srv_addr. A server that stays (never exits by itself) is
# stopped after the client. Both must exit 0 and print their pattern (an empty pattern is
# not checked); the outputs stay in $tmp/c and $tmp/s.
# A run that fails with $retry_on (a pattern of the client's or the server's output; unset:
# none) is run once more: perftest gives up on its report when its estimate of the CPU clock
# rate comes out unstable ("Can't produce a report"), as it does on a loaded two-CPU virtual
# machine; when the server gives up, the client's QP flushes and it fails too.
run_pair() {
    if [ -n "${retry_on:-}" ] && (run_pair_once "$@") > "$tmp/first" 2>&1; then
        return 0
    elif [ -n "${retry_on:-}" ] && grep -q "$retry_on" "$tmp/c" "$tmp/s"; then
        echo "$transport $1: \"$retry_on\" from the client or the server, once more"
    elif [ -n "${retry_on:-}" ]; then
        cat "$tmp/first"
        exit 1
    fi
    run_pair_once "$@"
}

run_pair_once() {
    name=$1 stays=$2 cpat=$3 spat=$4
    shift 5
    sargs=
    while [ "$1" != -- ]; do sargs="$sargs $1"; shift; done
    shift
    # shellcheck disable=SC2086
    timeout "${pair_timeout:-120}" $srv_in "$nd_run" env $pre ND_TRANSPORT=$transport \
        $(echo $sargs | sed "s/PORT/$port/g; s/ADDR/$srv_addr/g") > "$tmp/s" 2>&1 &
    server=$!
    wait_listen "$port" "$server" || { cat "$tmp/s"; echo "$transport $name: the server did not listen"; exit 1; }
    # shellcheck disable=SC2046,SC2086
    timeout "${pair_timeout:-120}" $cli_in "$nd_run" env $pre ND_TRANSPORT=$transport \
        $(echo "$@" | sed "s/PORT/$port/g; s/ADDR/$srv_addr/g") > "$tmp/c" 2>&1
    crc=$?
    if [ "$stays" = 1 ]; then
        kill "$server" 2> /dev/null
        wait "$server" 2> /dev/null
        src=0
    else
        wait "$server"
        src=$?
    fi
    if [ $crc -ne 0 ] || [ $src -ne 0 ] || { [ -n "$cpat" ] && ! grep -Eq "$cpat" "$tmp/c"; } ||
       { [ -n "$spat" ] && ! grep -Eq "$spat" "$tmp/s"; }; then
        echo "client:"; cat "$tmp/c"; echo "server:"; cat "$tmp/s"
        echo "$transport $name: client rc=$crc server rc=$src"
        exit 1
    fi
}
