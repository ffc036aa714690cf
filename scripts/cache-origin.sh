# Sourced by scripts/cache-memory.sh and scripts/cache-restart.sh, not run: the perf origin
# (../shared/perf, a private nginx on 127.0.0.1 serving the real article pages) in a run folder
# of its own, one pith in the background, and the stop of both on exit.
#
#   cache_origin_up NAME ORIGIN_PORT TLS_PORT [PAGES]
#       makes the run folder ($run), starts the origin there on the two ports, dates its files
#       30 days back and lists its pages in $paths; the EXIT trap stops pith (if started), the
#       origin, and removes $run
#   cache_pith_up CONFIG PORT LOG
#       starts `$pith serve --config CONFIG` (logging to LOG), sets $pid, and waits (60 s at
#       most) until it answers http://pith/metrics through 127.0.0.1:PORT
#   cache_metric PORT NAME     one /metrics value
#   cache_rss_kb, cache_hwm_kb  pith's VmRSS and VmHWM
#
# The pages are dated back so that nginx's Last-Modified gives them the heuristic freshness a
# static page of a real site has (RFC 9111 §4.2.2: a tenth of their age); dated now, every kept
# page would be stale at once and a run would count revalidations, not hits. Every wait is
# bounded (curl --max-time, loops with a deadline).
# shellcheck shell=bash

cache_here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache_perf="${PITH_SHARED:-$cache_here/../shared}/perf"
run=""
pid=""
paths=()

cache_cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
    if [ -n "$run" ]; then
        "$cache_perf/origin.sh" stop --run "$run/o" >/dev/null 2>&1 || true
        rm -rf "$run"
    fi
}

cache_origin_up() { # $1 = name, $2 = origin port, $3 = TLS port, $4 = pages
    local name=$1 origin_port=$2 tls_port=$3 pages=${4:-$cache_here/../shared/bench/scrapinghub}
    [ -x "$cache_perf/origin.sh" ] || { echo "$name: no perf origin at $cache_perf (set PITH_SHARED)" >&2; exit 1; }
    run="$(mktemp -d "${TMPDIR:-/tmp}/pith-$name.XXXXXX")"
    # nginx's workers run as another user: they must be able to read the pages under it.
    chmod 755 "$run"
    trap cache_cleanup EXIT
    "$cache_perf/origin.sh" start --pages "$pages" --run "$run/o" --port "$origin_port" --tls-port "$tls_port" >/dev/null
    find "$run/o/origin/www" -type f -exec touch -d '30 days ago' {} +
    mapfile -t paths < <(curl -sf --max-time 10 "http://127.0.0.1:$origin_port/pages.txt" | grep '^/p/')
    [ "${#paths[@]}" -gt 0 ] || { echo "$name: the origin lists no pages" >&2; exit 1; }
}

cache_pith_up() { # $1 = config, $2 = port, $3 = log
    "$pith" serve --config "$1" 2>>"$3" &
    pid=$!
    local deadline=$((SECONDS + 60))
    until curl -s --max-time 2 -x "127.0.0.1:$2" http://pith/metrics >/dev/null 2>&1; do
        [ $SECONDS -lt $deadline ] || { echo "pith did not start" >&2; tail "$3" >&2; exit 1; }
        sleep 0.2
    done
}

cache_metric() { curl -s --max-time 5 -x "127.0.0.1:$1" http://pith/metrics | awk -v m="$2" '$1 == m { print $2 }'; }
cache_rss_kb() { awk '/^VmRSS/ { print $2 }' "/proc/$pid/status"; }
cache_hwm_kb() { awk '/^VmHWM/ { print $2 }' "/proc/$pid/status"; }
