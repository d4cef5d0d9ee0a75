#!/bin/sh
# SPDX-License-Identifier: MIT
# Every nd_test case, server and client as two processes of this host:
#   nd_test_run.sh <nd_test> shm     forced shm over 127.0.0.1
#   nd_test_run.sh <nd_test> iwarp   forced iwarp over 127.0.0.1
#   nd_test_run.sh <nd_test> netns   iwarp between two network namespaces made for the run
#   nd_test_run.sh <nd_test> restricted <seccomp_exec>
#                                    as a container runs them: pidfd_getfd refused (EPERM,
#                                    Docker's default seccomp profile without CAP_SYS_PTRACE),
#                                    as nobody when we are root; the transport is the
#                                    automatic choice, and each side's log must say shm
#   nd_test_run.sh <nd_test> restricted-cma <seccomp_exec>
#                                    the same with process_vm_readv/writev refused too:
#                                    still shm, what a slot cannot carry going by the
#                                    peer's bounce channel
# The server takes a port the system picks and names it on stderr; the client runs every
# case against it. Both must exit 0.
set -u
nd_test=$1 mode=$2
work=$(mktemp -d)
server=
stop() {
    [ -n "$server" ] && kill "$server" 2> /dev/null
    rm -rf "$work"
}
trap stop EXIT
as_server= as_client= ip=127.0.0.1 transport=$mode
if [ "$mode" = netns ]; then
    . "$(dirname "$0")/netns_lib.sh"
    trap 'stop; netns_cleanup' EXIT
    as_server="ip netns exec $ns_a" as_client="ip netns exec $ns_b" ip=198.51.100.1 transport=iwarp
fi
if [ "$mode" = restricted ] || [ "$mode" = restricted-cma ]; then
    rules=fetch took=shm
    [ "$mode" = restricted-cma ] && rules=all
    wrap="$3 $rules --"
    if [ "$(id -u)" = 0 ]; then
        # nobody must reach the build to run it (a checkout under /root is not reachable)
        setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$nd_test" ||
            { echo "nobody cannot run $nd_test: skipped"; exit 77; }
        wrap="setpriv --reuid=65534 --regid=65534 --clear-groups $wrap"
    fi
    as_server=$wrap as_client=$wrap transport=
    chmod 711 "$work"
    : > "$work/server.pid"
    chmod 666 "$work/server.pid"
    unset ND_TRANSPORT
    export ND_LOG=cm:info
else
    export ND_TRANSPORT=$transport
fi
mkfifo "$work/announce"
# Through sh, so that the PID we may have to kill is the server's, not ip's.
$as_server sh -c 'echo $$ > "$1"; shift; exec "$@"' sh "$work/server.pid" "$nd_test" -s "$ip:0" \
    2> "$work/announce" > "$work/server.log" &
launcher=$!
# The first line names the port; the rest of the server's stderr is kept for the log.
exec 3< "$work/announce"
IFS= read -r line <&3 || { echo "the server did not start"; cat "$work/server.log"; exit 1; }
cat <&3 > "$work/server.err" &
server=$(cat "$work/server.pid")
port=${line##*:}
case $port in ''|*[!0-9]*) echo "unexpected server line: $line"; exit 1 ;; esac
$as_client "$nd_test" -c "$ip:$port" --timeout 90 2> "$work/client.err"
rc=$?
cat "$work/client.err" >&2
[ "$rc" = 0 ] || kill "$server" 2> /dev/null    # it would wait for a client that gave up
wait "$launcher"
src=$?
server=
echo "== server ($mode)"
cat "$work/server.log" "$work/server.err"
[ "$rc" = 0 ] && [ "$src" = 0 ] || exit 1
if [ -n "${took:-}" ]; then
    other=shm
    [ "$took" = shm ] && other=iwarp
    for side in server client; do
        grep -q "take $took" "$work/$side.err" && ! grep -q "take $other" "$work/$side.err" ||
            { echo "the $side's connections did not all take $took"; exit 1; }
    done
    echo "both sides took $took with the calls of '$rules' refused"
fi
