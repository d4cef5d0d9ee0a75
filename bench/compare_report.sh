# SPDX-License-Identifier: MIT
# Sourced by bench/compare: the markdown report and the gnuplot plots of one run.
# Expects $tmp (the run's samples), $results, $RUNS, $ITERS, $elapsed and lib.sh's helpers.

gbps() { awk -v a="$1" 'BEGIN { if (a == "n/a" || a == "") print "n/a"; else printf "%.2f", a / 1e9 }'; }

# row <label> <key of this row> <key of the netdirect figure it is compared with>, per size
lat_row() {
    label=$1 kind=$2 anchor=$3 nd=$4
    a8=$(med "${kind}_${anchor}_8") a4=$(med "${kind}_${anchor}_4096")
    n8=$(med "${kind}_${nd}_8") n4=$(med "${kind}_${nd}_4096")
    echo "| $label | $a8 | $a4 | $(ratio "$n8" "$a8") | $(ratio "$n4" "$a4") |"
}

bw_row() {
    label=$1 anchor=$2 nd=$3
    a64=$(med "bw_${anchor}_65536") a1=$(med "bw_${anchor}_1048576")
    n64=$(med "bw_${nd}_65536") n1=$(med "bw_${nd}_1048576")
    echo "| $label | $(gbps "$a64") | $(gbps "$a1") | $(ratio "$n64" "$a64") | $(ratio "$n1" "$a1") |"
}

notify_field() { grep "\"cqs\":$1," "$tmp/notify" | field "$2"; }

report() {
    echo "# netdirect compared, $(date -u +%Y-%m-%d)"
    echo
    echo "Host: $(uname -srm), $(nproc) CPUs, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)," \
         "$(. /etc/os-release 2> /dev/null && echo "$PRETTY_NAME"). All on this host, over loopback and shared memory;"
    echo "medians of $RUNS rounds (every tool once per round), $ITERS round trips per latency run;"
    echo "\`bench/compare\` took $elapsed s. Ratios are netdirect / the row's figure in the same run"
    echo "(latency: below 1 is faster than the row; bandwidth and rates: above 1 is faster)."
    echo "CPU placement by round (raw shared-memory spin, 8 B half round trip at its start and end,"
    echo "us; near below 0.1, far above; docs/performance.md, \"CPU placement\"):" \
         "$(awk '{ s = ($1 < 0.1 && $2 < 0.1) ? "near" : ($1 >= 0.1 && $2 >= 0.1) ? "far" : "mixed"
                   printf "%s%s/%s %s", (NR == 1 ? "" : ", "), $1, $2, s }' "$tmp/placement")."
    echo
    echo "## Latency, polling: half round trip (us)"
    echo
    echo "| | 8 B | 4 KiB | netdirect / this, 8 B | 4 KiB |"
    echo "|---|---|---|---|---|"
    lat_row "raw shared-memory spin, message in the next line (two lines a message)" p raw_shm nd_shm
    lat_row "raw shared-memory spin, message in the sequence word's line (floor: one line)" p raw_shm1 nd_shm
    lat_row "**netdirect shm** (nd_pingpong -p)" p nd_shm nd_shm
    lat_row "libfabric fi_pingpong -p shm" p fi_shm nd_shm
    lat_row "ucx_perftest tag_lat, posix" p ucx_posix nd_shm
    lat_row "ucx_perftest tag_lat, sm (posix/sysv/cma)" p ucx_sm nd_shm
    lat_row "raw TCP, busy-poll (floor)" p raw_tcp nd_iwarp
    lat_row "**netdirect iwarp** (nd_pingpong -p)" p nd_iwarp nd_iwarp
    lat_row "libfabric fi_pingpong -p tcp" p fi_tcp nd_iwarp
    lat_row "ucx_perftest tag_lat, tcp" p ucx_tcp nd_iwarp
    echo
    echo "## Latency, blocking (sleep until woken): half round trip (us)"
    echo
    echo "| | 8 B | 4 KiB | netdirect / this, 8 B | 4 KiB |"
    echo "|---|---|---|---|---|"
    lat_row "raw eventfd ping-pong (sleeps every time)" b raw_efd nd_shm
    lat_row "**netdirect shm** (nd_pingpong -b: CQ notify + GetOverlappedResult wait)" b nd_shm nd_shm
    lat_row "ucx_perftest tag_lat -E sleep, posix" b ucx_posix nd_shm
    lat_row "raw TCP, blocking sockets" b raw_tcp nd_iwarp
    lat_row "**netdirect iwarp** (nd_pingpong -b)" b nd_iwarp nd_iwarp
    lat_row "ucx_perftest tag_lat -E sleep, tcp" b ucx_tcp nd_iwarp
    echo
    echo "## System calls per 8 B round trip, per side (perf, raw_syscalls:sys_enter)"
    echo
    echo "| | polling | blocking |"
    echo "|---|---|---|"
    echo "| **netdirect shm**, client (counted by nd_pingpong) | $(med sys_p_nd_shm_8) | $(med sys_b_nd_shm_8) |"
    echo "| **netdirect shm**, server (whole process, perf stat) | $(med srv_p_nd_shm_8) | $(med srv_b_nd_shm_8) |"
    echo "| **netdirect iwarp** | $(med sys_p_nd_iwarp_8) | $(med sys_b_nd_iwarp_8) |"
    echo "| raw eventfd ping-pong | - | 2 (write + read) |"
    echo "| raw TCP | 2 + the empty polls | 2 (send + recv) |"
    echo "| ucx_perftest -E sleep, posix | - | $(med sys_b_ucx_posix_8) |"
    echo
    echo "## Bandwidth, one direction (GB/s)"
    echo
    echo "| | 64 KiB | 1 MiB | netdirect / this, 64 KiB | 1 MiB |"
    echo "|---|---|---|---|---|"
    bw_row "memcpy of the same size (floor)" memcpy nd_shm_write
    bw_row "**netdirect shm RDMA Write** (nd_rping -w)" nd_shm_write nd_shm_write
    bw_row "**netdirect shm Send** (nd_ping)" nd_shm_send nd_shm_send
    bw_row "**netdirect shm RDMA Write**, nd_alloc_memory buffers (nd_rping -w -a)" nd_shm_write_alloc nd_shm_write_alloc
    bw_row "**netdirect shm Send**, nd_alloc_memory buffers (nd_ping -a)" nd_shm_send_alloc nd_shm_send_alloc
    bw_row "ucx_perftest tag_bw, sm" ucx_sm nd_shm_write
    bw_row "ucx_perftest ucp_put_bw, sm (buffers from ucp_mem_map, which the peer maps: against nd_alloc_memory Writes)" ucx_sm_put nd_shm_write_alloc
    bw_row "raw TCP stream" raw_tcp nd_iwarp_write
    bw_row "**netdirect iwarp RDMA Write** (nd_rping -w)" nd_iwarp_write nd_iwarp_write
    bw_row "**netdirect iwarp Send** (nd_ping)" nd_iwarp_send nd_iwarp_send
    bw_row "ucx_perftest tag_bw, tcp" ucx_tcp nd_iwarp_write
    echo
    echo "## Connection set-up (connections/s, 2 s per run; ratios against raw unix with 4 KiB each way at the same concurrency)"
    echo
    echo "| | at once | per second | raw / this |"
    echo "|---|---|---|---|"
    r1=$(med conn_raw_unix4k)
    r2=$(med conn_raw_unix4k2)
    echo "| raw unix connect/accept/close, no data | 1 | $(med conn_raw_unix) | |"
    echo "| raw unix connect, 4 KiB each way, close | 1 | $r1 | 1.00 |"
    echo "| raw unix connect, 4 KiB each way, close | 2 | $r2 | 1.00 |"
    echo "| raw TCP connect/accept/close, no data | 1 | $(med conn_raw_tcp) | |"
    echo "| **netdirect nd_conn, shm** (QP + connect + 4 KiB each way + disconnect) | 1 | $(med conn_nd_shm1) | $(ratio "$r1" "$(med conn_nd_shm1)") |"
    echo "| **netdirect nd_conn, shm** | 2 | $(med conn_nd_shm2) | $(ratio "$r2" "$(med conn_nd_shm2)") (raw at 1: $(ratio "$r1" "$(med conn_nd_shm2)")) |"
    echo "| **netdirect nd_conn, iwarp** | 1 | $(med conn_nd_iwarp1) | $(ratio "$r1" "$(med conn_nd_iwarp1)") |"
    echo
    echo "## CQ notification: one thread waits on one port for N armed CQs"
    echo
    echo "| CQs | delivery median (us) | p90 (us) |"
    echo "|---|---|---|"
    for n in 1 100 10000; do
        echo "| $n | $(notify_field "$n" median_us) | $(notify_field "$n" p90_us) |"
    done
    echo
    echo "Median at 10,000 CQs / at 1: $(grep ratio_10000_to_1 "$tmp/notify" | field ratio_10000_to_1)"
    echo
    echo "Plots: latency_vs_size.png, bandwidth_vs_size.png, connection_rate.png (this directory)."
}

plots() {
    command -v gnuplot > /dev/null || { echo "gnuplot missing: no plots" >&2; return 0; }
    printf '"raw unix" %s\n"raw unix 4K x1" %s\n"raw unix 4K x2" %s\n"raw TCP" %s\n"nd shm x1" %s\n"nd shm x2" %s\n"nd iwarp" %s\n' \
        "$(med conn_raw_unix)" "$(med conn_raw_unix4k)" "$(med conn_raw_unix4k2)" "$(med conn_raw_tcp)" \
        "$(med conn_nd_shm1)" "$(med conn_nd_shm2)" "$(med conn_nd_iwarp1)" | sed 's/n\/a/NaN/' > "$tmp/conn.dat"
    gnuplot <<EOF
set terminal pngcairo size 900,560 noenhanced
set grid
set key top left
set logscale x 2
set format x "%.0b %BB"
set xlabel "message size"
set output "$results/latency_vs_size.png"
set title "Half round trip, polling ($(date -u +%Y-%m-%d), $(nproc) CPUs)"
set ylabel "microseconds"
set logscale y
plot "$tmp/lat.dat" u 1:2 w lp lw 2 t "netdirect shm", "" u 1:3 w lp lw 2 t "netdirect iwarp", \
     "" u 1:4 w lp t "raw shared-memory spin", "" u 1:5 w lp t "raw TCP busy-poll", \
     "" u 1:6 w lp t "ucx tag_lat posix", "" u 1:7 w lp t "ucx tag_lat tcp"
set output "$results/bandwidth_vs_size.png"
set title "One-direction bandwidth ($(date -u +%Y-%m-%d))"
set ylabel "GB/s"
set logscale y
plot "$tmp/bw.dat" u 1:(\$2/1e9) w lp lw 2 t "netdirect shm Write", "" u 1:(\$3/1e9) w lp lw 2 t "netdirect iwarp Write", \
     "" u 1:(\$4/1e9) w lp t "memcpy", "" u 1:(\$5/1e9) w lp t "raw TCP stream", "" u 1:(\$6/1e9) w lp t "ucx tag_bw sm"
set output "$results/connection_rate.png"
set title "Connections per second, one at a time ($(date -u +%Y-%m-%d))"
unset logscale x
unset logscale y
set format x "%g"
unset xlabel
set ylabel "connections/s"
set style fill solid 0.6
set boxwidth 0.6
set yrange [0:*]
plot "$tmp/conn.dat" u 0:2:xtic(1) w boxes notitle
EOF
}
