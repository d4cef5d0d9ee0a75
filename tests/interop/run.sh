#!/bin/bash
# SPDX-License-Identifier: MIT
#
# netdirect against Linux kernel siw: builds netdirect, boots the siw VM of
# ../shared/siw-vm (kernel soft-iWARP, rdma-core 44's rping and ucmatose), and runs
# nd_rping_compat and nd_cmatose on this host against rping and ucmatose in the VM, in both
# directions, MPA CRC off and on, over the VM's loopback forwards (slirp) and over a tap
# device in a namespace the VM harness makes (10.77.0.0/24). One line per scenario, then
# "N passed, N failed". Not part of CI (emulated, minutes); exit 77 where the VM cannot be had.
#
#   tests/interop/run.sh [--runs N] [--mode fwd|tap|both] [--only TEXT] [--debug]
#   (--only: the scenarios whose label holds TEXT; --debug: siw's debug log in the VM's serial log)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SIWVM=${SIWVM_DIR:-$ROOT/../shared/siw-vm}
BUILD=${BUILD_DIR:-$ROOT/build-interop}
RUNS=1
MODES="fwd tap"
ONLY=
DEBUG=()
while [ $# -gt 0 ]; do
  case $1 in
    --runs) RUNS=$2; shift 2 ;;
    --mode) MODES=$2; [ "$MODES" = both ] && MODES="fwd tap"; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    --debug) DEBUG=(--debug); shift ;;
    *) echo "usage: $0 [--runs N] [--mode fwd|tap|both] [--only TEXT] [--debug]" >&2; exit 2 ;;
  esac
done

skip() { echo "skip: $*"; exit 77; }
[ -x "$SIWVM/run.sh" ] && [ -x "$SIWVM/build.sh" ] || skip "no siw VM harness at $SIWVM"
[ "$(id -u)" = 0 ] || skip "the siw VM needs root (debootstrap, tap namespace)"
command -v python3 >/dev/null || skip "python3 not installed"

LOGDIR=$(mktemp -d /tmp/nd-interop.XXXXXX)
echo "logs in $LOGDIR"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >"$LOGDIR/build.log" 2>&1 &&
  cmake --build "$BUILD" -j"$(nproc)" --target nd_rping_compat nd_cmatose >>"$LOGDIR/build.log" 2>&1 ||
  { echo "netdirect build failed: $LOGDIR/build.log"; exit 1; }
"$SIWVM/build.sh" >"$LOGDIR/siwvm-build.log" 2>&1 || skip "the siw VM could not be built ($LOGDIR/siwvm-build.log)"

# The VM's agent: one connection back to the driver per job; the job's output streams
# back and ends with "== rc=N"; "quit" ends the loop.
agent() {
  echo "trap '' PIPE; while :; do exec 3<>/dev/tcp/$1/$2 || { sleep 0.5; continue; };" \
       "read -r c <&3 || { exec 3>&-; sleep 0.5; continue; }; [ \"\$c\" = quit ] && break;" \
       "bash -c \"\$c\" >&3 2>&1 </dev/null; echo \"== rc=\$?\" >&3; exec 3>&-; done"
}

NAMES=()
cleanup() { for n in ${NAMES[@]+"${NAMES[@]}"}; do "$SIWVM/stop.sh" "$n" >/dev/null 2>&1; done; }
trap cleanup EXIT

passed=0 failed=0
for mode in $MODES; do
  name=ndinterop-$mode
  NAMES+=("$name")
  "$SIWVM/stop.sh" "$name" >/dev/null 2>&1
  if [ "$mode" = fwd ]; then
    boot=(-t 17174:7174 -t 17471:7471 -g 7300:17300 -g 7200:17200 -g 7201:17201 -- "$(agent 10.0.2.100 7300)")
    prefix=()
  else
    boot=(--tap -- "$(agent 10.77.0.1 7300)")
    prefix=(ip netns exec "siwvm-$name")
  fi
  if ! "$SIWVM/run.sh" -n "$name" --keep --no-info ${DEBUG[@]+"${DEBUG[@]}"} "${boot[@]}" >"$LOGDIR/boot-$mode.log" 2>&1; then
    echo "FAIL $mode: the VM did not boot ($LOGDIR/boot-$mode.log)"
    failed=$((failed + 1))
    continue
  fi
  "${prefix[@]}" python3 "$ROOT/tests/interop/siw_interop.py" --mode "$mode" --bindir "$BUILD/tools" \
    --logdir "$LOGDIR" --runs "$RUNS" --only "$ONLY" | tee "$LOGDIR/$mode.out"
  p=$(tail -1 "$LOGDIR/$mode.out" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p')
  if [ -z "$p" ]; then
    echo "FAIL $mode: the driver ended early"
    failed=$((failed + 1))
  else
    passed=$((passed + ${p% *})); failed=$((failed + ${p#* }))
  fi
  "$SIWVM/stop.sh" "$name" >/dev/null 2>&1
done
echo "all modes: $passed passed, $failed failed"
[ "$failed" = 0 ]
