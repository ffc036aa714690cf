#!/usr/bin/env bash
# What the cache costs in memory when it is full: fills pith's memory tier to twice
# `cache.max_bytes` with distinct entries (rewritten pages through `declutter`, and 2 MiB
# responses streamed through `pass`, both from the perf origin in ../shared/perf, made distinct
# by a query string), and prints pith's resident memory before and after beside the bound, the
# memory tier's own count of its bytes, and the disk tier's entries (whose index is the other
# part of the cache that lives in memory).
#
#   scripts/cache-memory.sh [--pith PATH] [--max-mib 64] [--disk]
#
# --pith     the pith binary (default target/release/pith; build it first)
# --max-mib  cache.max_bytes in MiB (default 64)
# --disk     also give the cache a disk tier (in the run folder), to count its index
#
# The origin runs in its own run folder on its own ports (18190, 18553; pith listens on 18131
# and 18132); its pages are dated 30 days back so that heuristic freshness keeps them. Every
# wait is bounded (curl --max-time, loops with a deadline), and everything started is stopped
# on exit.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
pith="${CARGO_TARGET_DIR:-$here/target}/release/pith"
max_mib=64
disk=""
while [ $# -gt 0 ]; do
    case "$1" in
        --pith) pith="$2"; shift 2;;
        --max-mib) max_mib="$2"; shift 2;;
        --disk) disk=1; shift;;
        *) echo "cache-memory.sh: unknown option $1" >&2; exit 2;;
    esac
done
[ -x "$pith" ] || { echo "cache-memory.sh: no pith binary at $pith (cargo build --release first)" >&2; exit 2; }
[[ "$max_mib" =~ ^[1-9][0-9]*$ ]] || { echo "cache-memory.sh: --max-mib takes a whole number" >&2; exit 2; }

# shellcheck source=scripts/cache-origin.sh
. "$here/scripts/cache-origin.sh"
declutter_port=18131
pass_port=18132
origin_port=18190
cache_origin_up cache-memory "$origin_port" 18553

max_bytes=$((max_mib * 1024 * 1024))
{
    printf '[[listener]]\naddress = "127.0.0.1:%s"\nprofile = "declutter"\n' "$declutter_port"
    printf '[[listener]]\naddress = "127.0.0.1:%s"\nprofile = "pass"\n' "$pass_port"
    printf '[log]\nlevel = "warn"\n[cache]\nmax_bytes = %s\n' "$max_bytes"
    [ -n "$disk" ] && printf 'disk_dir = "%s"\ndisk_max_bytes = %s\n' "$run/cache" $((max_bytes * 4))
    sed -n '/^\[profiles\./,$p' "$here/proxy.toml"
} > "$run/proxy.toml"

cache_pith_up "$run/proxy.toml" "$declutter_port" "$run/pith.log"
metric() { cache_metric "$declutter_port" "$1"; }
rss_kb() { cache_rss_kb; }
hwm_kb() { cache_hwm_kb; }

# One request of each kind first: what a running pith holds before its cache does.
curl -s -o /dev/null --max-time 30 -x "127.0.0.1:$declutter_port" "http://127.0.0.1:$origin_port${paths[0]}?warm" || true
curl -s -o /dev/null --max-time 30 -x "127.0.0.1:$pass_port" "http://127.0.0.1:$origin_port/big.html?warm" || true
sleep 2
rss_empty=$(rss_kb)

# Half the bound's worth of 2 MiB responses, then pages until the tier has evicted as many
# entries as it holds (it has taken in about twice its bound): past the bound every store
# evicts.
big=$((max_bytes / (2 * 1024 * 1024)))
for i in $(seq 1 "$big"); do
    curl -s -o /dev/null --max-time 30 -x "127.0.0.1:$pass_port" "http://127.0.0.1:$origin_port/big.html?v=$i" || true
done
round=0
deadline=$((SECONDS + 600))
turned_over() { local e n; e=$(metric pith_cache_evictions_total); n=$(metric pith_cache_entries); [ "${n:-0}" -gt 0 ] && [ "${e:-0}" -ge "$n" ]; }
while ! turned_over && [ $SECONDS -lt $deadline ]; do
    round=$((round + 1))
    urls=()
    for p in "${paths[@]}"; do urls+=("http://127.0.0.1:$origin_port$p?r=$round"); done
    printf '%s\n' "${urls[@]}" | xargs -P 2 -n 30 curl -s --max-time 60 -H 'Accept-Encoding: gzip' -x "127.0.0.1:$declutter_port" > /dev/null || true
    [ "$round" -lt 2000 ] || break
done
rss_full=$(rss_kb)
# The allocator hands freed pages back after a while (jemalloc's decay, 10 s): what stays is
# what the cache and pith hold.
sleep 15
rss_settled=$(rss_kb)
cache_bytes=$(metric pith_cache_bytes)
entries=$(metric pith_cache_entries)
echo "cache.max_bytes=$max_bytes; filled with $big x 2 MiB through pass and $round rounds of ${#paths[@]} pages through declutter"
echo "memory tier: entries=$entries bytes=$cache_bytes stores=$(metric pith_cache_stores_total) evictions=$(metric pith_cache_evictions_total)"
if [ -n "$disk" ]; then
    echo "disk tier: entries=$(metric pith_cache_disk_entries) bytes=$(metric pith_cache_disk_bytes)"
fi
awk -v e="$rss_empty" -v f="$rss_full" -v s="$rss_settled" -v h="$(hwm_kb)" -v m="$max_bytes" 'BEGIN {
    printf "rss: before=%d KiB right after=%d KiB 15 s later=%d KiB peak=%d KiB; growth %.1f MiB = %.2f x cache.max_bytes\n", e, f, s, h, (s - e) / 1024, (s - e) * 1024 / m
}'
