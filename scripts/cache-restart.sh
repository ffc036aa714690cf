#!/usr/bin/env bash
# The disk tier's restart hit rate: fills pith's cache from the perf origin (../shared/perf, a
# private nginx on 127.0.0.1 serving real article pages), restarts pith (SIGTERM, or SIGKILL
# with --kill), and counts how the requests of the first minute after the restart are answered.
# Also prints pith's resident memory before and after the fill, and the disk tier's open time.
#
#   scripts/cache-restart.sh [--pith PATH] [--pages DIR] [--secs 60] [--rounds 3] [--kill]
#
# --pith     the pith binary (default target/debug/pith; build it first)
# --pages    the origin's pages (default ../shared/bench/scrapinghub)
# --secs     how long requests run after the restart (default 60)
# --rounds   how many times every page is requested to fill (default 3: the later rounds are
#            memory hits, so RSS after the fill is the memory tier's steady state)
# --kill     restart with kill -9 instead of SIGTERM
#
# The origin runs in its own run folder on its own ports (18180, 18543; pith listens on
# 18130), and its pages are dated 30 days back (scripts/cache-origin.sh, shared with
# cache-memory.sh, says why). Every wait is bounded: curl has --max-time, loops a deadline, and
# everything started is stopped on exit.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
pith="$here/target/debug/pith"
pages="$here/../shared/bench/scrapinghub"
secs=60
rounds=3
signal=TERM
while [ $# -gt 0 ]; do
    case "$1" in
        --pith) pith="$2"; shift 2;;
        --pages) pages="$2"; shift 2;;
        --secs) secs="$2"; shift 2;;
        --rounds) rounds="$2"; shift 2;;
        --kill) signal=KILL; shift;;
        *) echo "cache-restart.sh: unknown option $1" >&2; exit 2;;
    esac
done
[ -x "$pith" ] || { echo "cache-restart.sh: no pith binary at $pith (cargo build first)" >&2; exit 2; }

# shellcheck source=scripts/cache-origin.sh
. "$here/scripts/cache-origin.sh"
port=18130
origin_port=18180
cache_origin_up cache-restart "$origin_port" 18543 "$pages"

cat > "$run/proxy.toml" <<EOF
[[listener]]
address = "127.0.0.1:$port"
profile = "declutter"
[log]
level = "info"
[cache]
max_bytes = 268435456
disk_dir = "$run/cache"
disk_max_bytes = 1073741824
$(sed -n '/^\[profiles\./,$p' "$here/proxy.toml")
EOF

start() { cache_pith_up "$run/proxy.toml" "$port" "$run/pith.log"; }
metric() { cache_metric "$port" "$1"; }
rss_kb() { cache_rss_kb; }
get_all() {
    for p in "${paths[@]}"; do
        curl -s -o /dev/null --max-time 30 -H 'Accept-Encoding: gzip' -x "127.0.0.1:$port" "http://127.0.0.1:$origin_port$p" || true
    done
}

start
rss_empty=$(rss_kb)
for _ in $(seq "$rounds"); do get_all; done
stores=$(metric pith_cache_stores_total)
deadline=$((SECONDS + 60))
until [ "$(metric pith_cache_disk_writes_total)" -ge "$stores" ] || [ $SECONDS -ge $deadline ]; do sleep 0.2; done
rss_full=$(rss_kb)
echo "fill: ${#paths[@]} pages x $rounds rounds; stores=$stores disk_writes=$(metric pith_cache_disk_writes_total) memory_entries=$(metric pith_cache_entries) memory_bytes=$(metric pith_cache_bytes) disk_entries=$(metric pith_cache_disk_entries) disk_bytes=$(metric pith_cache_disk_bytes)"
echo "rss: empty=${rss_empty} KB filled=${rss_full} KB"

kill "-$signal" "$pid"; wait "$pid" 2>/dev/null || true; pid=""
start
rss_restarted=$(rss_kb)
grep 'disk cache opened' "$run/pith.log" | tail -1 | sed 's/^.*disk cache opened/open:/'
end=$((SECONDS + secs))
requests=0
while [ $SECONDS -lt $end ]; do
    for p in "${paths[@]}"; do
        [ $SECONDS -lt $end ] || break
        curl -s -o /dev/null --max-time 30 -H 'Accept-Encoding: gzip' -x "127.0.0.1:$port" "http://127.0.0.1:$origin_port$p" || true
        requests=$((requests + 1))
    done
done
hits=$(metric pith_cache_hits_total); misses=$(metric pith_cache_misses_total); revalidations=$(metric pith_cache_revalidations_total)
echo "after restart (SIG$signal), ${secs}s: requests=$requests hits=$hits revalidations=$revalidations misses=$misses disk_hits=$(metric pith_cache_disk_hits_total) hit_rate=$(awk -v h="$hits" -v r="$requests" 'BEGIN { printf "%.4f", h / r }')"
echo "rss: restarted=${rss_restarted} KB after_minute=$(rss_kb) KB"
