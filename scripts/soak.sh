#!/usr/bin/env bash
# Soak test: mixed load through pith for several minutes while faults are injected, with RSS,
# file descriptors and the outcome of every fault recorded, and a verdict at the end.
#
# Starts, all on loopback:
#   - the shared perf origin (../shared/perf/origin.sh: nginx on 127.0.0.1:18080 serving the
#     181 pages of ../shared/bench/scrapinghub, dated 30 days back so pith's cache keeps them),
#     or reuses one already running from the harness's default run dir with the same pages;
#     and nginx serving the same pages over TLS on 127.0.6.1:18444, with a certificate of the
#     run's own CA;
#   - a misbehaving origin (scripts/soak/fault_origin.py) on 127.0.0.1:18131, and over TLS on
#     127.0.6.1:18445;
#   - pith with a soak config (in a temp dir) with three listeners at once: declutter on :18121,
#     reader on :18122, pass on :18123; a 1 MiB cache so pages are evicted all the time;
#     short upstream timeouts and header read timeout so stalls and slowloris end quickly;
#     no destination deny rules (the origins are on loopback); HTTPS to 127.0.6.1 intercepted.
# Then, for --secs seconds: the load driver (tools/loadgen, built here) on the three listeners
# at once, in phases (a warm-up, then the cycle plain / gzip / burst / gateway / https run twice,
# so the two halves carry the same load): plain proxying, the URL gateway /read and intercepted
# HTTPS, each listener and way in from loopback addresses of its own (127.0.G.N, at most
# --per-address connections on each), as a LAN's devices. Meanwhile scripts/soak/faults.py,
# from 127.0.9.N, asks pith for every fault in a loop through every way in (resets, stalls,
# lying lengths, bad chunking, bad gzip, a 5 GiB gzip bomb, a 100,000-deep page, 10,000
# attributes, oversized heads, slowloris, CONNECT to a closed or forbidden port), and uses the
# control page (/choose, /once), checking each outcome; scripts/soak/sample.sh records pith's
# RSS, fds, CPU and cache every --interval seconds. Afterwards it waits for pith's fds to fall
# back to their baseline, checks that pith still serves a normal page on every listener, and
# scripts/soak/report.py prints the tables and the verdict (see scripts/soak/README.md).
# Then the attack phase (--attack-secs, 60 by default): scripts/soak/attack.py opens 200 clients
# that never read an oversized page, idle CONNECT tunnels and 16 clients fetching 15 MiB pages
# at once, from their own loopback addresses, while healthy clients keep using the declutter and
# pass listeners; the verdict asks for their p99 under --p99-ms and for pith's RSS under
# limits.rewrite_memory_bytes (--budget-mib) plus 64 MiB. Exit status 0 only when the verdict
# passes; 1 when it fails; 2 on a usage error.
#
# Usage: scripts/soak.sh [--secs N] [--no-build | --bin PATH] [--release] [--interval S]
#                        [--workers N] [--bomb-gib N] [--out DIR] [--attack-secs N]
#                        [--only-attacks] [--budget-mib N] [--p99-ms N] [--conn-keys auto|on|off]
#                        [--per-client N] [--per-address N] [--ci] [--self-test]
#   --secs N      seconds of load and faults (default 300; at least 60)
#   --no-build    use the binary already built for the chosen profile
#   --bin PATH    use this pith binary (implies --no-build)
#   --release     build and use the release profile (default: --profile fast, release without
#                 LTO, much quicker to build)
#   --interval S  seconds between RSS/fd samples (default 5)
#   --workers N   fault requests in flight at once, each from an address of its own (default 3)
#   --bomb-gib N  what the gzip bomb expands to, in GiB (default 5)
#   --out DIR     where the results are kept (default target/soak/soak-DATE)
#   --attack-secs N   seconds of the attack phase after the load (default 60, at least 20; 0
#                 leaves it out)
#   --only-attacks    a 10 s warm-up, then the attack phase alone (no fault injector, no cycles):
#                 about two minutes in all
#   --budget-mib N    limits.rewrite_memory_bytes in MiB (default 256, the default of pith)
#   --p99-ms N        healthy clients' p99 allowed during the attacks (default 100; 500 with --ci)
#   --conn-keys MODE  the connection limits of the soak config (client_write_timeout_ms,
#                 tunnel_idle_timeout_ms, max_connections_per_client): on, off, or auto (the
#                 default: on when this pith accepts them, else off with a warning)
#   --per-client N    limits.max_connections_per_client (default 32)
#   --per-address N   most connections one healthy address opens (default 16)
#   --ci          CI's short soak: 60 s of load and faults through every way in, then 30 s of
#                 attacks, with CI's latency budget; about 3 minutes with the build of the driver
#   --self-test   shows the harness can fail: a 15 s warm-up with max_connections_per_client
#                 a quarter of --per-address; passes (exit 0) only when the soak then fails
#                 because pith refused healthy clients (503)
#
# Needs nginx, squid, curl, openssl (installed with apt-get when missing, as scripts/perf.sh does),
# cargo (for tools/loadgen) and python3 (3.11, standard library only). Every process it starts
# is stopped on exit, by PID; every step has a timeout, so it ends by itself (about --secs plus
# --attack-secs plus a minute or two: some 7 minutes with the defaults).
# Set PITH_SHARED to use a shared/ folder other than the one beside the repository.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
soak_dir=$repo_root/scripts/soak
shared=${PITH_SHARED:-$repo_root/../shared}
perf_dir=$shared/perf
pages=$shared/bench/scrapinghub
declare -A port=([declutter]=18121 [reader]=18122 [pass]=18123 [squid]=18135)
icap_port=18134
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
p99_user=0
ci_p99_ms=500
sink_port=18132
# The TLS origins: nginx's pages and the fault origin's faults, for intercepted HTTPS.
tls_host=127.0.6.1
tls_port=18444
tls_fault_port=18445
# The connection limits under attack: slow and silent clients are closed within seconds, and
# one client address holds at most this many connections (attackers use 127.0.0.2 and up).
write_timeout_ms=10000
tunnel_idle_ms=10000
per_client=32
# Healthy clients come from addresses of their own (127.0.G.N: one group G per listener and
# entry point), at most this many connections on each: half the per-client cap, so a burst of
# 64 connections comes from four addresses, as from a LAN's devices. Fault probes come from
# 127.0.9.N (one per fault worker), attackers from 127.0.0.2-11 (attack.py).
per_address=16
ci=0
self_test=0
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
        --p99-ms) p99_ms=$2; p99_user=1; shift 2;;
        --conn-keys) conn_keys=$2; shift 2;;
        --per-client) per_client=$2; shift 2;;
        --per-address) per_address=$2; shift 2;;
        --ci) ci=1; shift;;
        --self-test) self_test=1; shift;;
        -h|--help) sed -n '2,70p' "$0" | sed 's/^# \{0,1\}//'; exit 0;;
        *) echo "soak.sh: unknown argument $1 (see --help)" >&2; exit 2;;
    esac
done
if [ "$ci" = 1 ]; then
    # CI's short soak: 60 s of load and faults, then 30 s of attacks, on a busy 2-core runner.
    # Its latency budget is that machine's, not a quiet one's (see scripts/soak/README.md).
    secs=60; attack_secs=30; interval=3
    [ "$p99_user" = 1 ] || p99_ms=$ci_p99_ms
fi
if [ "$self_test" = 1 ]; then
    # The harness must fail when pith's own per-client cap is below one healthy address's
    # connections: a warm-up alone, with the cap at a quarter of the addresses' share.
    per_client=$(( per_address / 4 )); attack_secs=0; conn_keys=on
fi
for n in secs interval workers bomb_gib budget_mib p99_ms per_client per_address; do
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
    for tool in nginx curl openssl squid; do
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
for p in "${port[@]}" "$icap_port" "$fault_port" "$closed_port" "$sink_port" "$tls_port" "$tls_fault_port"; do
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
# The load driver (tools/loadgen): binds each connection's source address, which wrk cannot.
loadgen=$target_dir/loadgen/release/loadgen
command -v cargo >/dev/null 2>&1 || { echo "soak.sh: cargo is needed to build tools/loadgen" >&2; exit 2; }
(cd "$repo_root/tools/loadgen" && cargo build --quiet --release --locked --target-dir "$target_dir/loadgen") \
    || { echo "soak.sh: building tools/loadgen failed" >&2; exit 1; }

# --- run dir and cleanup ---------------------------------------------------------------------
run=$(mktemp -d "${TMPDIR:-/tmp}/pith-soak.XXXXXX")
chmod 755 "$run"  # nginx's workers read the pages under it
mkdir -p "$run/load"
if [ -z "$out" ]; then out=$repo_root/target/soak/soak-$(date +%Y%m%d-%H%M%S); fi
mkdir -p "$out"
out=$(cd "$out" && pwd)

groups=()         # running process groups started here (setsid): sampler, fault injector
servers=()        # the TLS origin and Squid (setsid), stopped at exit
loads=()          # running load runs (setsid), emptied once a phase has ended
pith_pid="" fault_pid="" own_origin=0
stop_group() { kill -TERM -- "-$1" 2>/dev/null || true; }
cleanup() {
    local g
    trap '' INT TERM   # a second signal must not cut the cleanup short
    for g in "${groups[@]}" "${loads[@]}" "${servers[@]}"; do stop_group "$g"; done
    [ -z "$fault_pid" ] || stop_group "$fault_pid"
    if [ -n "$pith_pid" ] && kill -0 "$pith_pid" 2>/dev/null; then
        kill -TERM "$pith_pid" 2>/dev/null || true
        for _ in $(seq 1 50); do kill -0 "$pith_pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pith_pid" 2>/dev/null || true
    fi
    for g in "${servers[@]}"; do   # Squid takes its shutdown_lifetime (1 s) to go
        for _ in $(seq 1 50); do kill -0 "$g" 2>/dev/null || break; sleep 0.1; done
    done
    [ "$own_origin" = 1 ] && "$perf_dir/origin.sh" stop --run "$run" >/dev/null 2>&1 || true
    cp -f "$run"/*.tsv "$run"/*.txt "$run"/*.json "$run"/*.jsonl "$run"/*.log "$run"/*.env "$run"/*.toml "$out"/ 2>/dev/null || true
    cp -rf "$run/load" "$out"/ 2>/dev/null || true
    mkdir -p "$out/squid" && cp -f "$run/squid/"*.log "$run/squid/squid.conf" "$out/squid/" 2>/dev/null || true
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

curl -sf --max-time 5 http://127.0.0.1:18080/pages.txt -o "$run/pages.txt" || { log "the origin serves no /pages.txt"; exit 1; }

# --- TLS origins, for intercepted HTTPS ----------------------------------------------------------
# A CA of the run's own (pith trusts it through upstream.extra_root_certificates) and a leaf for
# $tls_host; nginx serves the same pages there over TLS, the fault origin its faults.
make_tls() {
    local d=$run/tls
    mkdir -p "$d"
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=pith soak test CA" \
        -keyout "$d/ca-key.pem" -out "$d/ca.pem" >/dev/null 2>&1
    openssl req -newkey rsa:2048 -nodes -subj "/CN=$tls_host" -keyout "$d/leaf-key.pem" -out "$d/leaf.csr" >/dev/null 2>&1
    printf 'subjectAltName=IP:%s\nbasicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n' \
        "$tls_host" >"$d/leaf.ext"
    openssl x509 -req -in "$d/leaf.csr" -CA "$d/ca.pem" -CAkey "$d/ca-key.pem" -CAcreateserial -days 2 \
        -out "$d/leaf.pem" -extfile "$d/leaf.ext" >/dev/null 2>&1
    [ -s "$d/leaf.pem" ] || { log "openssl could not make the TLS origin's certificate"; exit 1; }
}
make_tls
www=$run/origin/www
[ "$own_origin" = 1 ] || www=${PERF_RUN:-${TMPDIR:-/tmp}/pith-perf-run}/origin/www
mkdir -p "$run/tls/tmp"
cat >"$run/tls/nginx.conf" <<EOF
# The TLS origin of scripts/soak.sh: the pages of the perf origin, over TLS on $tls_host.
worker_processes 1;
daemon off;
pid $run/tls/nginx.pid;
error_log $run/tls/error.log warn;
events { worker_connections 4096; }
http {
  types { text/html html; text/plain txt; }
  default_type application/octet-stream;
  access_log off;
  sendfile on;
  keepalive_requests 1000000;
  client_body_temp_path $run/tls/tmp;
  proxy_temp_path $run/tls/tmp;
  fastcgi_temp_path $run/tls/tmp;
  uwsgi_temp_path $run/tls/tmp;
  scgi_temp_path $run/tls/tmp;
  gzip_static on;
  server {
    listen $tls_host:$tls_port ssl;
    ssl_certificate $run/tls/leaf.pem;
    ssl_certificate_key $run/tls/leaf-key.pem;
    root $www;
    location / { }
  }
}
EOF
setsid nginx -c "$run/tls/nginx.conf" -e "$run/tls/error.log" >"$run/tls/nginx.out" 2>&1 &
servers+=($!)
for _ in $(seq 1 50); do (exec 3<>"/dev/tcp/$tls_host/$tls_port") 2>/dev/null && break; sleep 0.1; done
(exec 3<>"/dev/tcp/$tls_host/$tls_port") 2>/dev/null || { log "the TLS origin did not start"; cat "$run/tls/error.log" "$run/tls/nginx.out" >&2; exit 1; }

# --- the fault origin ------------------------------------------------------------------------
setsid python3 "$soak_dir/fault_origin.py" serve --port "$fault_port" --bomb-gib "$bomb_gib" \
    --tls-host "$tls_host" --tls-port "$tls_fault_port" --cert "$run/tls/leaf.pem" --key "$run/tls/leaf-key.pem" \
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
connect_ports = [443, 18443, $closed_port, $sink_port, $tls_port, $tls_fault_port]
extra_root_certificates = ["$run/tls/ca.pem"]
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

# HTTPS to the TLS origins ($tls_host) is intercepted; 127.0.0.1 (the closed port, the
# attack phase's sink) stays a blind tunnel.
[intercept]
enabled = true
ca_dir = "$run/pith-ca"
never = ["127.0.0.1"]

# The ICAP service Squid sends every response to.
[[icap]]
address = "127.0.0.1:$icap_port"
profile = "declutter"

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
"$bin" ca init --config "$config" >/dev/null
pith_ca=$run/pith-ca/ca.pem
[ -s "$pith_ca" ] || { log "pith made no CA at $pith_ca"; exit 1; }
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

# --- Squid in front of pith's ICAP service -----------------------------------------------------
# No cache: every response goes to pith over ICAP (bypass=off: a failing service fails the
# request instead of being skipped). icap.log has, per transaction, what pith answered Squid.
sq=$run/squid
mkdir -p "$sq"
chmod 777 "$sq"   # Squid started as root runs as the proxy user
cat >"$sq/squid.conf" <<EOF
http_port 127.0.0.1:${port[squid]}
acl localnet src 127.0.0.0/8
http_access allow localnet
http_access deny all
cache deny all
cache_mem 0 MB
cache_log $sq/cache.log
logformat soak %ts.%03tu %>a %Ss/%03>Hs %<st %ru
access_log stdio:$sq/access.log soak
logformat icapsoak %ts.%03tu %icap::to %icap::Hs %icap::<bs %icap::tt %ru
icap_log stdio:$sq/icap.log icapsoak
strip_query_terms off
cache_store_log none
pid_filename $sq/squid.pid
coredump_dir $sq
shutdown_lifetime 1 seconds
pinger_enable off
via off
forwarded_for transparent
max_filedescriptors 8192
read_timeout $(( response_timeout_ms / 1000 + 5 )) seconds
icap_enable on
icap_preview_enable on
icap_persistent_connections on
icap_service pith respmod_precache bypass=off icap://127.0.0.1:$icap_port/respmod
adaptation_access pith allow all
EOF
setsid squid -N -n "pithsoak${port[squid]}" -f "$sq/squid.conf" >"$sq/squid.out" 2>&1 &
servers+=($!)
for _ in $(seq 1 100); do port_busy "${port[squid]}" && break; sleep 0.1; done
curl -sf --max-time 5 -o /dev/null -x "http://127.0.0.1:${port[squid]}" "http://127.0.0.1:$fault_port/ok" \
    || { log "Squid did not start on ${port[squid]}"; cat "$sq/squid.out" "$sq/cache.log" >&2; exit 1; }
sleep 1
fds_base=$(find "/proc/$pith_pid/fd" -mindepth 1 -maxdepth 1 | wc -l)
rss_base=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pith_pid/status")
log "pith pid $pith_pid ($bin) on declutter ${port[declutter]}, reader ${port[reader]}, pass ${port[pass]}; baseline $fds_base fds, RSS $((rss_base / 1024)) MiB"

# --- load, faults, samples -------------------------------------------------------------------
warm=$(( secs / 10 > 10 ? secs / 10 : 10 ))
[ "$only_attacks" = 0 ] || warm=10
[ "$self_test" = 0 ] || warm=15
phase_secs=$(( (secs - warm) / 12 ))
start=$(date +%s)
until=$(( start + secs ))
[ "$only_attacks" = 0 ] && [ "$self_test" = 0 ] || until=$(( start + warm ))
{
    echo "pith_pid=$pith_pid"; echo "bin=$bin"; echo "secs=$secs"; echo "start=$start"
    echo "fds_base=$fds_base"; echo "rss_base_kb=$rss_base"; echo "cache_max_bytes=$cache_max_bytes"
    echo "header_timeout_ms=$header_timeout_ms"; echo "interval=$interval"; echo "bomb_gib=$bomb_gib"
    echo "nproc=$(nproc)"; echo "only_attacks=$only_attacks"; echo "attack_secs=$attack_secs"
    echo "budget_bytes=$(( budget_mib << 20 ))"; echo "p99_ms=$p99_ms"; echo "conn_keys=$conn_keys_on"
    echo "write_timeout_ms=$write_timeout_ms"; echo "tunnel_idle_ms=$tunnel_idle_ms"; echo "per_client=$per_client"
    echo "per_address=$per_address"; echo "ci=$ci"; echo "self_test=$self_test"
} >"$run/final.env"

setsid "$soak_dir/sample.sh" "$pith_pid" "$run/samples.tsv" "$interval" $(( until + attack_secs + 300 )) \
    "http://127.0.0.1:${port[declutter]}/metrics" &
groups+=($!)
fault_args=(--listeners "declutter=127.0.0.1:${port[declutter]},reader=127.0.0.1:${port[reader]},pass=127.0.0.1:${port[pass]}"
    --origin "127.0.0.1:$fault_port" --closed-port "$closed_port"
    --header-timeout $(( header_timeout_ms / 1000 )) --body-idle $(( body_idle_ms / 1000 ))
    --response-timeout $(( response_timeout_ms / 1000 )) --bomb-wire-len "$bomb_wire_len" --sources 127.0.9
    --tls-origin "$tls_host:$tls_fault_port" --pith-ca "$pith_ca"
    --squid "127.0.0.1:${port[squid]}" --icap-log "$sq/icap.log")
sampler_pid=${groups[0]}
faults_pid=""
if [ "$only_attacks" = 0 ] && [ "$self_test" = 0 ]; then
    python3 "$soak_dir/faults.py" "${fault_args[@]}" --list >"$run/cases.txt"
    setsid timeout -k 5 $(( secs + 180 )) python3 "$soak_dir/faults.py" "${fault_args[@]}" \
        --until "$until" --workers "$workers" --out "$run/faults.jsonl" 2>"$run/faults-stderr.log" &
    faults_pid=$!
    groups+=("$faults_pid")
fi

# Healthy clients' addresses: one group (third octet) per listener and entry point, and as many
# addresses in it as keep each at most $per_address connections.
declare -A group_octet=([declutter.proxy]=1 [reader.proxy]=2 [pass.proxy]=3 [declutter.gateway]=4 [reader.gateway]=5
    [declutter.https]=10 [reader.https]=11 [pass.https]=12 [squid.proxy]=13)
sources_for() { # KEY CONNECTIONS -> a comma-separated list of addresses
    local n i out=()
    n=$(( ($2 + per_address - 1) / per_address ))
    for i in $(seq 1 "$n"); do out+=("127.0.${group_octet[$1]}.$i"); done
    (IFS=,; echo "${out[*]}")
}

# One phase: load runs on several listeners at once, each "listener:connections:gzip:path:entry"
# (entry: proxy, the default, or gateway).
phase() {
    local name=$1 cycle=$2 len=$3 spec l c g p m key pids=() args t0
    shift 3
    t0=$(date +%s.%N | cut -c1-14)
    log "phase $name (cycle $cycle, $len s): $*"
    for spec in "$@"; do
        IFS=: read -r l c g p m <<<"$spec"
        m=${m:-proxy}
        key=$l.$m
        args=(--target "127.0.0.1:${port[$l]}" --mode "$m" --conc "$c" --secs "$len" --label "$name.$cycle.$key"
            --sources "$(sources_for "$key" "$c")" --origin 127.0.0.1:18080 --timeout-ms 15000)
        [ "$g" = 1 ] && args+=(--gzip)
        if [ -n "$p" ]; then args+=(--path "$p"); else args+=(--paths "$run/pages.txt"); fi
        [ "$m" != https ] || args+=(--tls-origin "$tls_host:$tls_port" --ca "$pith_ca")
        setsid timeout -k 5 $(( len + 60 )) "$loadgen" "${args[@]}" >"$run/load/$name.$cycle.$key.out" 2>&1 &
        pids+=($!)
        loads+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || true; done
    loads=()
    echo "$name $cycle $t0 $(date +%s.%N | cut -c1-14) $*" >>"$run/phases.tsv"
}
phase warmup 0 "$warm" declutter:8:0: reader:4:1: pass:8:0:
if [ "$only_attacks" = 0 ] && [ "$self_test" = 0 ]; then
    for cycle in 1 2; do
        phase plain "$cycle" "$phase_secs" declutter:16:0: reader:8:0: pass:16:0:
        phase gzip "$cycle" "$phase_secs" declutter:16:1: reader:8:1: pass:16:1:
        phase burst "$cycle" "$phase_secs" declutter:64:1: reader:16:0: pass:4:0:/big.html
        phase gateway "$cycle" "$phase_secs" declutter:16:0::gateway reader:8:1::gateway pass:8:0:
        phase https "$cycle" "$phase_secs" declutter:16:0::https reader:8:1::https pass:8:0::https
        phase icap "$cycle" "$phase_secs" squid:16:0: reader:8:1:
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
if [ "$self_test" = 1 ]; then
    # Passes only when the soak failed, and for the reason given: its healthy load was
    # refused (503) by the per-client cap set below one address's connections.
    refused=$(grep -ho 'statuses=[^ ]*' "$run"/load/warmup.0.*.out | grep -o '503:[0-9]*' | awk -F: '{ n += $2 } END { print n + 0 }')
    if [ "$verdict" = 1 ] && grep -q '^- FAIL load held' "$run/report.txt" && [ "${refused:-0}" -gt 0 ]; then
        log "self-test PASS: with max_connections_per_client = $per_client, below the connections one healthy address opens," \
            "$refused healthy requests were refused 503 and the soak said FAIL, as it must"
        exit 0
    fi
    log "self-test FAIL: the soak should have failed on its healthy load (verdict exit $verdict, $refused refused 503)"
    exit 1
fi
exit "$verdict"
