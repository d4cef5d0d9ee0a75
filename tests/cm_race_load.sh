#!/bin/sh
# SPDX-License-Identifier: MIT
# Same-host connections beside a many-connection load: test_many_conns runs in the
# background while test_cm_shm_late (a dialer caught between the listener's shm bind and
# listen, which must still land on shm and carry a Send each way) runs again and again.
# Usage: cm_race_load.sh TESTS_DIR [RUNS]
set -u
dir=$1
runs=${2:-150}
"$dir/test_many_conns" > /dev/null 2>&1 &
load=$!
fails=0
i=0
while [ "$i" -lt "$runs" ]; do
    i=$((i + 1))
    if ! out=$("$dir/test_cm_shm_late" 2>&1); then
        fails=$((fails + 1))
        echo "run $i failed:"
        echo "$out" | tail -5
    fi
done
wait "$load"
load_rc=$?
echo "$((runs - fails)) passed, $fails failed"
[ "$load_rc" -eq 0 ] || { echo "the load (test_many_conns) failed: $load_rc"; exit 1; }
[ "$fails" -eq 0 ]
