#!/usr/bin/env bash
# Samples a running pith every few seconds until it exits or a deadline passes, one line each:
#   epoch rss_kb hwm_kb fds threads cpu_ticks load1 cache_bytes cache_entries cache_evictions cache_hits cache_misses
# rss_kb is VmRSS (resident now), hwm_kb VmHWM (peak so far), fds the entries of /proc/PID/fd,
# cpu_ticks utime+stime (clock ticks), load1 the machine's 1-minute load average; the cache
# columns come from pith's own /metrics page (NA when it does not answer within 2 s).
#
#   sample.sh PID OUT INTERVAL_S UNTIL_EPOCH METRICS_URL
set -uo pipefail

pid=$1 out=$2 interval=$3 until=$4 metrics=$5

metric() { # $1 = name, from the text in $m
    awk -v n="$1" '$1 == n { printf "%d", $2; found = 1 } END { if (!found) printf "NA" }' <<<"$m"
}

while kill -0 "$pid" 2>/dev/null && [ "$(date +%s)" -lt "$until" ]; do
    status=$(cat "/proc/$pid/status" 2>/dev/null) || break
    rss=$(awk '/^VmRSS:/ { print $2 }' <<<"$status")
    hwm=$(awk '/^VmHWM:/ { print $2 }' <<<"$status")
    threads=$(awk '/^Threads:/ { print $2 }' <<<"$status")
    fds=$(find "/proc/$pid/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
    stat=$(cat "/proc/$pid/stat" 2>/dev/null) || break
    stat=${stat##*) }
    read -r -a f <<<"$stat"
    ticks=$((f[11] + f[12]))
    read -r load1 _ </proc/loadavg
    m=$(curl -s --max-time 2 "$metrics" 2>/dev/null || true)
    echo "$(date +%s.%N | cut -c1-14) $rss $hwm $fds $threads $ticks $load1 $(metric pith_cache_bytes)" \
        "$(metric pith_cache_entries) $(metric pith_cache_evictions_total) $(metric pith_cache_hits_total)" \
        "$(metric pith_cache_misses_total)" >>"$out"
    sleep "$interval"
done
