#!/usr/bin/env bash
# Soak test: mixed load through pith for several minutes while faults are injected, with RSS,
# file descriptors and the outcome of every fault recorded, and a verdict at the end.
#
# Starts, all on 127.0.0.1:
#   - the shared perf origin (../shared/perf/origin.sh: nginx on :18080 serving the 181 pages
#     of ../shared/bench/scrapinghub, dated 30 days back so pith's cache keeps them), or reuses
#     one already running from the harness's default run dir with the same pages;
#   - a misbehaving origin (scripts/soak/fault_origin.py) on :18131;
#   - pith with a soak config (in a temp dir) with three listeners at once: declutter on :18121,
#     reader on :18122, pass on :18123; a 1 MiB cache so pages are evicted all the time;
#     short upstream timeouts and header read timeout so stalls and slowloris end quickly;
#     no destination deny rules (the origins are on loopback).
# Then, for --secs seconds: wrk (../shared/perf/load.sh) on the three listeners at once, in
# phases (a warm-up, then the cycle plain / gzip / burst run twice, so the two halves carry the
# same load), while scripts/soak/faults.py asks pith for every fault in a loop (resets,
# stalls, lying lengths, bad chunking, bad gzip, a 5 GiB gzip bomb, a 100,000-deep page,
# 10,000 attributes, oversized heads, slowloris, CONNECT to a closed or forbidden port) and
# checks each outcome; scripts/soak/sample.sh records pith's RSS, fds, CPU and cache every
# --interval seconds. Afterwards it waits for pith's fds to fall back to their baseline,
# checks that pith still serves a normal page on every listener, and scripts/soak/report.py
# prints the tables and the verdict (see scripts/soak/README.md).
# Then the attack phase (--attack-secs, 60 by default): scripts/soak/attack.py opens 200 clients
# that never read an oversized page, idle CONNECT tunnels and 16 clients fetching 15 MiB pages
# at once, from their own loopback addresses, while wrk (healthy clients on 127.0.0.1) keeps
# using the declutter and pass listeners; the verdict asks for their p99 under --p99-ms and for
# pith's RSS under limits.rewrite_memory_bytes (--budget-mib) plus 64 MiB. Exit status 0 only when the
# verdict passes; 1 when it fails; 2 on a usage error.
#
# Usage: scripts/soak.sh [--secs N] [--no-build | --bin PATH] [--release] [--interval S]
#                        [--workers N] [--bomb-gib N] [--out DIR] [--attack-secs N]
#                        [--only-attacks] [--budget-mib N] [--p99-ms N] [--conn-keys auto|on|off]
#   --secs N      seconds of load and faults (default 300; at least 60)
#   --no-build    use the binary already built for the chosen profile
#   --bin PATH    use this pith binary (implies --no-build)
#   --release     build and use the release profile (default: --profile fast, release without
#                 LTO, much quicker to build)
#   --interval S  seconds between RSS/fd samples (default 5)
#   --workers N   fault requests in flight at once (default 3)
#   --bomb-gib N  what the gzip bomb expands to, in GiB (default 5)
#   --out DIR     where the results are kept (default target/soak/soak-DATE)
#   --attack-secs N   seconds of the attack phase after the load (default 60, at least 20; 0
#                 leaves it out)
#   --only-attacks    a 10 s warm-up, then the attack phase alone (no fault injector, no cycles):
#                 about two minutes in all
#   --budget-mib N    limits.rewrite_memory_bytes in MiB (default 256, the default of pith)
#   --p99-ms N        healthy clients' p99 allowed during the attacks (default 100)
#   --conn-keys MODE  the connection limits of the soak config (client_write_timeout_ms,
#                 tunnel_idle_timeout_ms, max_connections_per_client): on, off, or auto (the
#                 default: on when this pith accepts them, else off with a warning)
#
# Needs nginx, wrk, curl, openssl (installed with apt-get when missing, as scripts/perf.sh
# does) and python3 (3.11, standard library only). Every process it starts is stopped on exit,
# by PID; every step has a timeout, so it ends by itself (about --secs plus --attack-secs plus a
# minute or two: some 7 minutes with the defaults).
# Set PITH_SHARED to use a shared/ folder other than the one beside the repository.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
soak_dir=$repo_root/scripts/soak
shared=${PITH_SHARED:-$repo_root/../shared}
perf_dir=$shared/perf
pages=$shared/bench/scrapinghub
declare -A port=([declutter]=18121 [reader]=18122 [pass]=18123)
fault_port=18131
closed_port=18139
secs=300
build=1
profile=fast
bin=""
interval=5
workers=3
bomb_gib=5
out=""
page_age=30
attack_secs=60
only_attacks=0
budget_mib=256
p99_ms=100
conn_keys=auto
sink_port=18132
# The connection limits under attack: slow and silent clients are closed within seconds, and
# one client address holds at most this many connections (attackers use 127.0.0.2 and up).
write_timeout_ms=10000
tunnel_idle_ms=10000
per_client=32
header_timeout_ms=5000
body_idle_ms=3000
response_timeout_ms=5000
pool_idle_ms=5000
cache_max_bytes=1048576
cache_entry_bytes=262144

while [ $# -gt 0 ]; do
    case "$1" in
        --secs) secs=$2; shift 2;;
        --no-build) build=0; shift;;
        --bin) bin=$2; build=0; shift 2;;
        --release) profile=release; shift;;
        --interval) interval=$2; shift 2;;
        --workers) workers=$2; shift 2;;
        --bomb-gib) bomb_gib=$2; shift 2;;
        --out) out=$2; shift 2;;
        --attack-secs) attack_secs=$2; shift 2;;
        --only-attacks) only_attacks=1; shift;;
        --budget-mib) budget_mib=$2; shift 2;;
        --p99-ms) p99_ms=$2; shift 2;;
        --conn-keys) conn_keys=$2; shift 2;;
        -h|--help) sed -n '2,56p' "$0" | sed 's/^# \{0,1\}//'; exit 0;;
        *) echo "soak.sh: unknown argument $1 (see --help)" >&2; exit 2;;
    esac
done
for n in secs interval workers bomb_gib budget_mib p99_ms; do
    [[ "${!n}" =~ ^[1-9][0-9]*$ ]] || { echo "soak.sh: --${n//_/-} must be a positive number" >&2; exit 2; }
done
[[ "$attack_secs" =~ ^[0-9]+$ ]] || { echo "soak.sh: --attack-secs must be a number" >&2; exit 2; }
[[ "$conn_keys" =~ ^(auto|on|off)$ ]] || { echo "soak.sh: --conn-keys must be auto, on or off" >&2; exit 2; }
[ "$secs" -ge 60 ] || { echo "soak.sh: --secs must be at least 60" >&2; exit 2; }
[ "$attack_secs" = 0 ] || [ "$attack_secs" -ge 20 ] || { echo "soak.sh: --attack-secs must be 0 or at least 20" >&2; exit 2; }
[ "$only_attacks" = 0 ] || [ "$attack_secs" -gt 0 ] || { echo "soak.sh: --only-attacks needs an attack phase" >&2; exit 2; }
[ -x "$perf_dir/load.sh" ] && [ -x "$perf_dir/origin.sh" ] || { echo "soak.sh: no load harness at $perf_dir (set PITH_SHARED)" >&2; exit 2; }
[ -d "$pages" ] || { echo "soak.sh: no pages at $pages" >&2; exit 2; }
command -v python3 >/dev/null 2>&1 || { echo "soak.sh: python3 is needed" >&2; exit 2; }

# The origin and the client come from Debian packages; install them when they are missing.
install_tools() {
    local missing=() tool
    for tool in nginx wrk curl openssl; do
        command -v "$tool" >/dev/null 2>&1 || [ -x "/usr/sbin/$tool" ] || missing+=("$tool")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "soak.sh: installing ${missing[*]} with apt-get" >&2
    local sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends "${missing[@]}"
}
install_tools
export PATH="$PATH:/usr/sbin"

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for p in "${port[@]}" "$fault_port" "$closed_port" "$sink_port"; do
    if port_busy "$p"; then
        echo "soak.sh: 127.0.0.1:$p is already in use (another soak run?); stop what holds it" >&2
        exit 1
    fi
done

# --- build -------------------------------------------------------------------------------------
target_dir=${CARGO_TARGET_DIR:-$repo_root/target}
if [ -z "$bin" ]; then
    if [ "$build" = 1 ]; then
        (cd "$repo_root" && cargo build --profile "$profile" --bin pith)
    fi
    bin=$target_dir/$profile/pith
fi
[ -x "$bin" ] || { echo "soak.sh: no pith binary at $bin; run without --no-build" >&2; exit 1; }

# --- run dir and cleanup ---------------------------------------------------------------------
run=$(mktemp -d "${TMPDIR:-/tmp}/pith-soak.XXXXXX")
chmod 755 "$run"  # nginx's workers read the pages under it
mkdir -p "$run/load"
if [ -z "$out" ]; then out=$repo_root/target/soak/soak-$(date +%Y%m%d-%H%M%S); fi
mkdir -p "$out"
out=$(cd "$out" && pwd)

groups=()         # running process groups started here (setsid): sampler, fault injector
loads=()          # running load runs (setsid), emptied once a phase has ended
pith_pid="" fault_pid="" own_origin=0
stop_group() { kill -TERM -- "-$1" 2>/dev/null || true; }
cleanup() {
    local g
    trap '' INT TERM   # a second signal must not cut the cleanup short
    for g in "${groups[@]}" "${loads[@]}"; do stop_group "$g"; done
    [ -z "$fault_pid" ] || stop_group "$fault_pid"
    if [ -n "$pith_pid" ] && kill -0 "$pith_pid" 2>/dev/null; then
        kill -TERM "$pith_pid" 2>/dev/null || true
        for _ in $(seq 1 50); do kill -0 "$pith_pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pith_pid" 2>/dev/null || true
    fi
    [ "$own_origin" = 1 ] && "$perf_dir/origin.sh" stop --run "$run" >/dev/null 2>&1 || true
    cp -f "$run"/*.tsv "$run"/*.txt "$run"/*.json "$run"/*.jsonl "$run"/*.log "$run"/*.env "$run"/*.toml "$out"/ 2>/dev/null || true
    cp -rf "$run/load" "$out"/ 2>/dev/null || true
    rm -rf "$run"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { echo "soak.sh: $*" >&2; }

# --- the nginx origin (perf harness), reused when it already serves our pages -----------------
reuse_origin() {
    port_busy 18080 || port_busy 18443 || return 1
    local other=${PERF_RUN:-${TMPDIR:-/tmp}/pith-perf-run} pid="" ours theirs
    ours=$(cd "$pages" && ls -1 ./*.html | sed 's#^\./#/p/#' | sort)
    theirs=$(curl -sf --max-time 5 http://127.0.0.1:18080/pages.txt || true)
    [ -s "$other/origin/nginx.pid" ] && pid=$(cat "$other/origin/nginx.pid")
    if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null || [ "$ours" != "$theirs" ]; then
        log "127.0.0.1:18080 or :18443 is in use by something other than an origin serving $pages; stop it first"
        exit 1
    fi
    log "reusing the origin already on 127.0.0.1:18080 (nginx pid $pid); it is left running"
}
if ! reuse_origin; then
    "$perf_dir/origin.sh" start --pages "$pages" --run "$run" >&2
    own_origin=1
    touch -d "@$(( $(date +%s) - page_age * 86400 ))" "$run/origin/www/p/"*.html "$run/origin/www/p/"*.html.gz
fi

# --- the fault origin ------------------------------------------------------------------------
setsid python3 "$soak_dir/fault_origin.py" serve --port "$fault_port" --bomb-gib "$bomb_gib" \
    --max-hold 120 >"$run/fault-origin.log" 2>&1 &
fault_pid=$!
bomb_wire_len=$(python3 "$soak_dir/fault_origin.py" bomb-info --bomb-gib "$bomb_gib" | sed 's/^wire_len=\([0-9]*\).*/\1/')
for _ in $(seq 1 100); do curl -sf --max-time 2 "http://127.0.0.1:$fault_port/ok" >/dev/null && break; sleep 0.1; done
curl -sf --max-time 2 "http://127.0.0.1:$fault_port/ok" >/dev/null || { log "the fault origin did not start"; cat "$run/fault-origin.log" >&2; exit 1; }

# --- pith ------------------------------------------------------------------------------------
config=$run/soak.toml
cat >"$config" <<EOF
# Soak configuration written by scripts/soak.sh: three profiles at once, a small cache,
# short timeouts so faults end quickly, loopback origins allowed.
[log]
level = "warn"

[[listener]]
address = "127.0.0.1:${port[declutter]}"
profile = "declutter"

[[listener]]
address = "127.0.0.1:${port[reader]}"
profile = "reader"

[[listener]]
address = "127.0.0.1:${port[pass]}"
profile = "pass"

[upstream]
connect_timeout_ms = 3000
response_timeout_ms = $response_timeout_ms
body_idle_timeout_ms = $body_idle_ms
pool_idle_timeout_ms = $pool_idle_ms
# nginx answers requests carrying Via uncompressed (gzip_proxied off), as in scripts/perf.sh.
send_via = false
connect_ports = [443, 18443, $closed_port, $sink_port]
deny = []
deny_private = false

[limits]
header_read_timeout_ms = $header_timeout_ms
max_header_bytes = 65536
max_rewrite_bytes = 16777216
rewrite_memory_bytes = $(( budget_mib << 20 ))
# CONN-KEYS (the lines below are dropped with --conn-keys off)
client_write_timeout_ms = $write_timeout_ms
tunnel_idle_timeout_ms = $tunnel_idle_ms
max_connections_per_client = $per_client

[cache]
enabled = true
max_bytes = $cache_max_bytes
max_entry_bytes = $cache_entry_bytes
EOF
# The connection limits: kept when this pith knows them (auto), or as --conn-keys says.
drop_conn_keys() { sed -i -e '/^# CONN-KEYS/d' -e '/^client_write_timeout_ms/d' -e '/^tunnel_idle_timeout_ms/d' \
    -e '/^max_connections_per_client/d' "$config"; }
case "$conn_keys" in
    off) drop_conn_keys;;
    auto)
        if ! "$bin" check-config "$config" >"$run/check-config.txt" 2>&1; then
            if grep -qE 'client_write_timeout_ms|tunnel_idle_timeout_ms|max_connections_per_client' "$run/check-config.txt"; then
                log "this pith does not know the connection limits (client_write_timeout_ms, tunnel_idle_timeout_ms," \
                    "max_connections_per_client): running without them, so slow clients and idle tunnels are not cut"
                drop_conn_keys
            fi
        fi;;
esac
conn_keys_on=$(grep -c '^tunnel_idle_timeout_ms' "$config" || true)
"$bin" check-config "$config" >/dev/null
setsid "$bin" serve --config "$config" 2>"$run/pith.log" &
pith_pid=$!
for _ in $(seq 1 300); do
    curl -sf --max-time 1 -o /dev/null "http://127.0.0.1:${port[pass]}/" && break
    kill -0 "$pith_pid" 2>/dev/null || break
    sleep 0.1
done
for l in declutter reader pass; do
    curl -sf --max-time 2 -o /dev/null "http://127.0.0.1:${port[$l]}/" \
        || { log "pith did not start listening on ${port[$l]}"; cat "$run/pith.log" >&2; exit 1; }
done
sleep 1
fds_base=$(find "/proc/$pith_pid/fd" -mindepth 1 -maxdepth 1 | wc -l)
rss_base=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pith_pid/status")
log "pith pid $pith_pid ($bin) on declutter ${port[declutter]}, reader ${port[reader]}, pass ${port[pass]}; baseline $fds_base fds, RSS $((rss_base / 1024)) MiB"

# --- load, faults, samples -------------------------------------------------------------------
warm=$(( secs / 10 > 10 ? secs / 10 : 10 ))
[ "$only_attacks" = 0 ] || warm=10
phase_secs=$(( (secs - warm) / 6 ))
start=$(date +%s)
until=$(( start + secs ))
[ "$only_attacks" = 0 ] || until=$(( start + warm ))
{
    echo "pith_pid=$pith_pid"; echo "bin=$bin"; echo "secs=$secs"; echo "start=$start"
    echo "fds_base=$fds_base"; echo "rss_base_kb=$rss_base"; echo "cache_max_bytes=$cache_max_bytes"
    echo "header_timeout_ms=$header_timeout_ms"; echo "interval=$interval"; echo "bomb_gib=$bomb_gib"
    echo "nproc=$(nproc)"; echo "only_attacks=$only_attacks"; echo "attack_secs=$attack_secs"
    echo "budget_bytes=$(( budget_mib << 20 ))"; echo "p99_ms=$p99_ms"; echo "conn_keys=$conn_keys_on"
    echo "write_timeout_ms=$write_timeout_ms"; echo "tunnel_idle_ms=$tunnel_idle_ms"; echo "per_client=$per_client"
} >"$run/final.env"

setsid "$soak_dir/sample.sh" "$pith_pid" "$run/samples.tsv" "$interval" $(( until + attack_secs + 300 )) \
    "http://127.0.0.1:${port[declutter]}/metrics" &
groups+=($!)
fault_args=(--listeners "declutter=127.0.0.1:${port[declutter]},reader=127.0.0.1:${port[reader]},pass=127.0.0.1:${port[pass]}"
    --origin "127.0.0.1:$fault_port" --closed-port "$closed_port"
    --header-timeout $(( header_timeout_ms / 1000 )) --body-idle $(( body_idle_ms / 1000 ))
    --response-timeout $(( response_timeout_ms / 1000 )) --bomb-wire-len "$bomb_wire_len")
sampler_pid=${groups[0]}
faults_pid=""
if [ "$only_attacks" = 0 ]; then
    python3 "$soak_dir/faults.py" "${fault_args[@]}" --list >"$run/cases.txt"
    setsid timeout -k 5 $(( secs + 180 )) python3 "$soak_dir/faults.py" "${fault_args[@]}" \
        --until "$until" --workers "$workers" --out "$run/faults.jsonl" 2>"$run/faults-stderr.log" &
    faults_pid=$!
    groups+=("$faults_pid")
fi

# One phase: wrk runs on several listeners at once, each "listener:connections:gzip:path".
phase() {
    local name=$1 cycle=$2 len=$3 spec l c g p pids=() args t0
    shift 3
    t0=$(date +%s.%N | cut -c1-14)
    log "phase $name (cycle $cycle, $len s): $*"
    for spec in "$@"; do
        IFS=: read -r l c g p <<<"$spec"
        args=(--proxy "127.0.0.1:${port[$l]}" --conc "$c" --secs "$len" --label "$name.$cycle.$l")
        [ "$g" = 1 ] && args+=(--gzip)
        [ -z "$p" ] || args+=(--path "$p")
        setsid timeout -k 5 $(( len + 60 )) "$perf_dir/load.sh" "${args[@]}" \
            >"$run/load/$name.$cycle.$l.out" 2>&1 &
        pids+=($!)
        loads+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || true; done
    loads=()
    echo "$name $cycle $t0 $(date +%s.%N | cut -c1-14) $*" >>"$run/phases.tsv"
}
phase warmup 0 "$warm" declutter:8:0: reader:4:1: pass:8:0:
if [ "$only_attacks" = 0 ]; then
    for cycle in 1 2; do
        phase plain "$cycle" "$phase_secs" declutter:16:0: reader:8:0: pass:16:0:
        phase gzip "$cycle" "$phase_secs" declutter:16:1: reader:8:1: pass:16:1:
        phase burst "$cycle" "$phase_secs" declutter:64:1: reader:16:0: pass:4:0:/big.html
    done
    log "load done; waiting for the fault injector to finish its last cases"
    wait "$faults_pid" || log "the fault injector exited with status $?"
fi
groups=("$sampler_pid")

# --- the attack phase: hostile clients beside healthy ones ------------------------------------
if [ "$attack_secs" -gt 0 ]; then
    # VmHWM from here on is the attack phase's peak.
    echo 5 >"/proc/$pith_pid/clear_refs" 2>/dev/null || log "cannot reset pith's VmHWM; the attack peak includes the load before"
    setsid timeout -k 5 $(( attack_secs + 150 )) python3 "$soak_dir/attack.py" --proxy "127.0.0.1:${port[declutter]}" \
        --origin "127.0.0.1:$fault_port" --sink-port "$sink_port" --secs "$attack_secs" \
        --out "$run/attack.json" 2>"$run/attack-stderr.log" &
    attack_pid=$!
    groups+=("$attack_pid")
    sleep 3   # the non-readers and tunnels are open, the big pages under way
    phase attack 3 $(( attack_secs - 5 )) declutter:4:0: pass:4:0:
    wait "$attack_pid" || log "the attack script exited with status $?"
    groups=("$sampler_pid")
    echo "rss_attack_peak_kb=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pith_pid/status" 2>/dev/null || echo NA)" >>"$run/final.env"
fi

# --- after the load: fds back to baseline, still serving ---------------------------------------
alive=0; pith_exit=""
if kill -0 "$pith_pid" 2>/dev/null; then alive=1; else wait "$pith_pid" || pith_exit=$?; pith_pid=""; fi
fds_end=NA; drain_secs=NA
if [ "$alive" = 1 ]; then
    t0=$(date +%s)
    for _ in $(seq 1 60); do
        fds_end=$(find "/proc/$pith_pid/fd" -mindepth 1 -maxdepth 1 | wc -l)
        [ "$fds_end" -le $(( fds_base + 2 )) ] && break
        sleep 1
    done
    drain_secs=$(( $(date +%s) - t0 ))
fi
page=$(head -1 "$run/origin/www/pages.txt" 2>/dev/null || curl -sf --max-time 5 http://127.0.0.1:18080/pages.txt | head -1)
{
    echo "end=$(date +%s)"; echo "alive=$alive"; echo "pith_exit=$pith_exit"
    echo "fds_end=$fds_end"; echo "drain_secs=$drain_secs"
    echo "rss_end_kb=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pith_pid/status" 2>/dev/null || echo NA)"
    for l in declutter reader pass; do
        r=$(curl -s --max-time 20 -o /dev/null -D "$run/final-$l.head" -w '%{http_code} %{size_download}' \
            -x "http://127.0.0.1:${port[$l]}" "http://127.0.0.1:18080$page") || true
        echo "final_${l}=\"$r $(grep -ci '^x-pith:' "$run/final-$l.head" 2>/dev/null || true)\""
    done
    echo "final_page=$page"
    echo "panics=$(grep -c 'panicked' "$run/pith.log" || true)"
    echo "load_end=$(cut -d' ' -f1-3 /proc/loadavg)"
} >>"$run/final.env"
sleep "$interval"   # one more sample after the drain

set +e
python3 "$soak_dir/report.py" "$run" | tee "$run/report.txt"
verdict=${PIPESTATUS[0]}
set -e
cp -f "$run/report.txt" "$out/"
log "results in $out"
exit "$verdict"
