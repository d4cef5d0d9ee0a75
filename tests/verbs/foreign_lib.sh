# SPDX-License-Identifier: MIT
# Sourced by the tests that run Debian's programs under netdirect-run. Sets $pre (a sanitized
# build's runtime to preload into those programs, or nothing); exits 77 where that runtime
# cannot be preloaded (TSan).
[ -n "${ND_TEST_FOREIGN_SKIP:-}" ] && { echo "not in this build (sanitizer runtime)"; exit 77; }
pre=${ND_TEST_FOREIGN_PRELOAD:+LD_PRELOAD=$ND_TEST_FOREIGN_PRELOAD}

# wait_listen PORT PID: until something listens on TCP PORT (a netdirect listener always
# does), or PID exits. The CM's listener is ready then; no sleep stands in for it.
wait_listen() {
    i=0
    while [ $i -lt 200 ]; do
        ss -Hltn "sport = :$1" 2> /dev/null | grep -q LISTEN && return 0
        kill -0 "$2" 2> /dev/null || return 1
        sleep 0.05
        i=$((i + 1))
    done
    return 1
}
