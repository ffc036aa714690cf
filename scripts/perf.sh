#!/usr/bin/env bash
# Measures pith as a forward proxy beside nginx served directly, in one command.
#
# Builds the release binary, starts pith three times (profile `pass` on 127.0.0.1:18111, profile
# `declutter` with the cache off on 127.0.0.1:18112, so every request is fetched and rewritten,
# and `declutter` with the cache on on 127.0.0.1:18113, so after the warm-up every request is a
# cache hit), and runs the shared load harness (../shared/perf: a private nginx origin on
# 127.0.0.1:18080 serving the 181 real pages of ../shared/bench/scrapinghub, and wrk as the
# client) over `direct` and the pith listeners, then prints the summary table: req/s, latency,
# peak RSS and CPU, and every req/s as a ratio to `direct` taken in the same rep; then a second
# table of requests per CPU-second for every proxy, pith and peers alike: req/s divided by the
# CPU share of the proxy's own process tree during the same run (the `proxy CPU %` the harness
# measures). Ratios to `direct` move with the machine (nginx ran at 9k and 17k req/s an hour
# apart); requests per CPU-second of the proxy itself hold still. Both tables have rows without
# and with gzip (clients sending `Accept-Encoding: gzip`, the origin answering gzip).
#
# The origin sends no Cache-Control, only Last-Modified (and ETag), so pith keeps its pages by
# heuristic freshness: a tenth of the time since Last-Modified. The origin copies the pages at
# start, which would make them "modified just now" and fresh for a fraction of a second; so
# when this script starts the origin itself it dates the copies --page-age days back (default
# 30, as for published articles), making them fresh for days. A reused origin is left as it is.
#
# Usage: scripts/perf.sh [--quick] [--reps N] [--secs S] [--concs "1 16 256"]
#                        [--peers "direct tinyproxy squid"] [--no-extremes] [--out FILE]
#   --quick      one rep of 5 s at 16 connections, no extremes (about a minute): a smoke check
#   --reps N     repetitions of the whole matrix (default 3); ratios are medians over reps
#   --secs S     seconds per wrk run (default 10)
#   --concs "…"  client connections to try (default "1 16 256")
#   --peers "…"  reference peers to run beside pith (default "direct"); a peer whose program is
#                not installed is left out with a note (apt-get install tinyproxy squid ...)
#   --no-extremes  skip the 1 KiB and 2 MiB pages (run at 16 connections by default)
#   --out FILE   raw result lines (default target/perf/results-DATE.txt); the table goes to
#                FILE with .md in place of .txt
#   --pith-ports "P D [C]"  ports of the pass, declutter and declutter+cache listeners
#                (default "18111 18112 18113", moved by --port-base)
#   --port-base N  move every port of the run by N-18000, so that it runs beside other servers:
#                the origin (18080, TLS 18443), the peers (18101-18107) and pith's listeners
#                (18111-18113) become N+80, N+443, N+101-N+107 and N+111-N+113. The shared
#                harness has these ports written in; the run uses a copy of it with them moved.
#                Default 18000 (the harness's own ports, no copy).
#   --pith "…"   which pith listeners to run (default "pass declutter cache")
#   --no-build   use the target/release/pith already built instead of building it (under
#                $CARGO_TARGET_DIR when that is set, as cargo would)
#   --page-age D days to date the origin's pages back when this script starts the origin
#                (default 30; 0 leaves them dated now)
#   --binary PATH  measure this pith binary and build nothing (e.g. a debug build, to check
#                the script itself; its figures are not pith's)
#   --icap       also measure Squid with ICAP services (opt-in; installs squid and c-icap with
#                apt-get when missing): `squid-pith-icap` (Squid on 127.0.0.1:18114, no cache,
#                every response sent to a pith [[icap]] service with profile `declutter`),
#                `squid-pith-204` (18115: the same with profile `pass`, so every answer is 204:
#                pith's ICAP overhead on untouched responses), `squid-cicap-echo` (18116: c-icap's
#                echo service instead of pith), beside `squid` alone (the harness's Squid, no
#                cache) and pith standalone (`pith-declutter`, cache off). Each Squid+ICAP peer
#                is one command (scripts/perf-icap.sh) whose process tree, Squid and the ICAP
#                server both, is what the CPU and RSS columns count. Compare rewritten pages per
#                second per core as req/s ÷ (CPU % ÷ 100). ICAP services listen on 18121-18123.
#   --image      also measure an image (opt-in): a photograph, rocket.jpg from scikit-image's
#                wheel (SpaceX, public domain, as scikit-image's data module documents it; 112 KB,
#                fetched from PyPI with pip when missing and kept in target/perf/photos), put in
#                the origin's folder as /img/rocket.jpg and dated back like the pages, then
#                loaded alone at 16 connections, each rep, `direct` and through each pith
#                listener of --pith: through `pith-cache` every request after the warm-up is a
#                cache hit. Its lines have page=/img/rocket.jpg, so the table gives its req/s as a
#                ratio to direct, like the pages'. The origin serves it as its default type
#                (application/octet-stream: the harness maps html and txt alone), so no profile
#                transcodes it: the run measures the cache, not the image codec.
#
# Needs nginx, wrk, curl, openssl and python3; nginx and wrk (and curl, openssl) are installed
# with apt-get when missing (needs root or sudo). Everything listens on 127.0.0.1 only, and every
# load run is bounded in time by the harness (wrk -d inside timeout), so the script stops by
# itself. An origin that the harness left running on 127.0.0.1:18080 (from its default run dir)
# is reused when it serves the same pages, and left running. Set PITH_SHARED to use a shared/
# folder other than the one beside the repository.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
shared=${PITH_SHARED:-$repo_root/../shared}
perf_dir=$shared/perf
pages=$shared/bench/scrapinghub
pass_port=""
declutter_port=""
cache_port=""
port_base=18000
variants="pass declutter cache"
page_age=30
build=1
icap=0
image=0
binary=""

reps=3
secs=10
concs="1 16 256"
peers="direct"
extremes=1
out=""
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) reps=1; secs=5; concs="16"; extremes=0; shift;;
        --reps) reps=$2; shift 2;;
        --secs) secs=$2; shift 2;;
        --concs) concs=$2; shift 2;;
        --peers) peers=$2; shift 2;;
        --no-extremes) extremes=0; shift;;
        --out) out=$2; shift 2;;
        --pith-ports) read -r pass_port declutter_port cache_port <<<"$2"; shift 2;;
        --port-base) port_base=$2; shift 2;;
        --pith) variants=$2; shift 2;;
        --page-age) page_age=$2; shift 2;;
        --no-build) build=0; shift;;
        -h|--help) sed -n '2,66p' "$0"; exit 0;;
        --binary) binary=$2; build=0; shift 2;;
        --icap) icap=1; shift;;
        --image) image=1; shift;;
        *) echo "perf.sh: unknown argument $1 (see --help)" >&2; exit 2;;
    esac
done
[[ "$reps" =~ ^[1-9][0-9]*$ ]] || { echo "perf.sh: --reps must be a positive number" >&2; exit 2; }
[[ "$secs" =~ ^[1-9][0-9]*$ ]] || { echo "perf.sh: --secs must be a positive number" >&2; exit 2; }
[[ "$port_base" =~ ^[1-9][0-9]*$ ]] && [ "$port_base" -ge 1024 ] && [ "$port_base" -le 65000 ] \
    || { echo "perf.sh: --port-base must be a number from 1024 to 65000" >&2; exit 2; }
shift_port() { echo $(( $1 - 18000 + port_base )); }
pass_port=${pass_port:-$(shift_port 18111)}
declutter_port=${declutter_port:-$(shift_port 18112)}
cache_port=${cache_port:-$(shift_port 18113)}
origin_port=$(shift_port 18080)
tls_port=$(shift_port 18443)
[[ "$pass_port $declutter_port $cache_port" =~ ^[1-9][0-9]*\ [1-9][0-9]*\ [1-9][0-9]*$ ]] \
    || { echo "perf.sh: --pith-ports takes two or three port numbers, e.g. \"18111 18112 18113\"" >&2; exit 2; }
[[ "$page_age" =~ ^[0-9]+$ ]] || { echo "perf.sh: --page-age must be a number of days" >&2; exit 2; }
for v in $variants; do
    case "$v" in pass|declutter|cache) ;; *) echo "perf.sh: --pith takes pass, declutter and/or cache, not $v" >&2; exit 2;; esac
done

[ -x "$perf_dir/peers.sh" ] || { echo "perf.sh: no load harness at $perf_dir (set PITH_SHARED)" >&2; exit 1; }
[ -d "$pages" ] || { echo "perf.sh: no pages at $pages" >&2; exit 1; }

# The origin and the client come from Debian packages; install them when they are missing.
install_tools() {
    local missing=() tool tools=(nginx wrk curl openssl)
    [ "$icap" = 0 ] || tools+=(squid c-icap)
    for tool in "${tools[@]}"; do
        command -v "$tool" >/dev/null 2>&1 || [ -x "/usr/sbin/$tool" ] || missing+=("$tool")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "perf.sh: installing ${missing[*]} with apt-get" >&2
    local sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends "${missing[@]}"
}
install_tools
export PATH="$PATH:/usr/sbin"
command -v python3 >/dev/null 2>&1 || { echo "perf.sh: python3 is needed for the summary" >&2; exit 1; }

# Reference peers other than `direct` are run only when their program is installed. `direct` is
# the reference every ratio is taken against, so it always runs, and first.
declare -A peer_program=([tinyproxy]=tinyproxy [squid]=squid [squid-cache]=squid
                         [privoxy]=privoxy [privoxy-filter]=privoxy
                         [mitmproxy]="${MITMDUMP:-mitmdump}" [mitmproxy-rewrite]="${MITMDUMP:-mitmdump}")
kept="direct"
for peer in $peers; do
    [ "$peer" != direct ] || continue
    program=${peer_program[$peer]:-}
    if [ -z "$program" ]; then
        echo "perf.sh: leaving out $peer: not a peer of the harness ($perf_dir/peers.sh list)" >&2
    elif ! command -v "$program" >/dev/null 2>&1; then
        echo "perf.sh: leaving out $peer: $program is not installed" >&2
    else
        kept="$kept $peer"
    fi
done
peers=$kept
if [ "$icap" = 1 ]; then
    # Squid alone and pith standalone are the references of the ICAP runs.
    [[ " $peers " == *" squid "* ]] || peers="$peers squid"
    [[ " $variants " == *" declutter "* ]] || variants="$variants declutter"
fi

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for port in "$pass_port" "$declutter_port" "$cache_port"; do
    if port_busy "$port"; then
        echo "perf.sh: 127.0.0.1:$port is already in use; stop what holds it or pick free ports" \
            "with --pith-ports \"PASS DECLUTTER CACHE\"" >&2
        exit 1
    fi
done

[ "$build" = 0 ] || (cd "$repo_root" && cargo build --release --bin pith)
pith_bin=${binary:-${CARGO_TARGET_DIR:-$repo_root/target}/release/pith}
[ -x "$pith_bin" ] || { echo "perf.sh: no $pith_bin; run without --no-build" >&2; exit 1; }

run=$(mktemp -d "${TMPDIR:-/tmp}/pith-perf.XXXXXX")
# nginx's workers run as an unprivileged user and must read the pages under the run dir.
chmod 755 "$run"
own_origin=0
trap '[ "$own_origin" = 1 ] && "$perf_dir/origin.sh" stop --run "$run" >&2; rm -rf "$run"' EXIT

# Another port base: a copy of the harness with its written-in ports moved (the origin's, the
# TLS origin's and the peers'), used in place of the shared one for the whole run.
if [ "$port_base" != 18000 ]; then
    mkdir -p "$run/harness"
    cp "$perf_dir"/*.sh "$perf_dir"/*.lua "$perf_dir"/*.py "$run/harness/"
    python3 - "$run/harness" "$port_base" <<'PY'
import pathlib, re, sys
folder, base = pathlib.Path(sys.argv[1]), int(sys.argv[2])
for f in folder.iterdir():
    text = f.read_text()
    f.write_text(re.sub(r"\b(18080|18443|1810[0-9])\b", lambda m: str(int(m.group(1)) - 18000 + base), text))
PY
    chmod +x "$run/harness"/*.sh "$run/harness"/*.py
    perf_dir=$run/harness
fi

# One config per profile. `send_via = false`: nginx's default `gzip_proxied off` refuses to gzip
# (or serve gzip_static files) for any request carrying `Via`, so with Via on, pith would be
# sent identity bodies where `direct` gets gzip; the peers in ../shared/perf also run with Via
# disabled, so the comparison is like for like.
write_config() { # $1 = config name, $2 = profile, $3 = port, $4 = cache on (true/false)
    cat > "$run/pith-$1.toml" <<EOF
[log]
level = "warn"

[[listener]]
address = "127.0.0.1:$3"
profile = "$2"

[upstream]
send_via = false

[cache]
enabled = $4

# wrk is one client with up to 256 connections: above the per-client default of 64.
[limits]
max_connections_per_client = 1024
EOF
    "$pith_bin" check-config "$run/pith-$1.toml" >/dev/null
}
write_config pass pass "$pass_port" false
write_config declutter declutter "$declutter_port" false
write_config cache declutter "$cache_port" true

# The harness's origin has fixed ports (18080, 18443, moved by --port-base). If one is already up from the harness's
# default run dir and serves exactly our pages, hand its PID to this run: peers.sh then neither
# starts nor stops it. Anything else on those ports is an error, not something to measure.
reuse_origin() {
    port_busy "$origin_port" || port_busy "$tls_port" || return 0
    local other=${PERF_RUN:-${TMPDIR:-/tmp}/pith-perf-run} pid="" ours theirs
    ours=$(cd "$pages" && ls -1 ./*.html | sed 's#^\./#/p/#' | sort)
    theirs=$(curl -sf --max-time 5 "http://127.0.0.1:$origin_port/pages.txt" || true)
    [ -s "$other/origin/nginx.pid" ] && pid=$(cat "$other/origin/nginx.pid")
    if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null || [ "$ours" != "$theirs" ]; then
        echo "perf.sh: 127.0.0.1:$origin_port or :$tls_port is in use by something other than an origin" \
            "serving $pages; stop it first" >&2
        exit 1
    fi
    mkdir -p "$run/origin"
    echo "$pid" > "$run/origin/nginx.pid"
    origin_www=$other/origin/www
    echo "perf.sh: reusing the origin already on 127.0.0.1:$origin_port (nginx pid $pid, run dir" \
        "$other); it is left running" >&2
}
origin_www=$run/origin/www
reuse_origin

# Start the origin here (peers.sh then uses it as it is) and date its pages back, unless one
# is being reused.
if [ ! -s "$run/origin/nginx.pid" ]; then
    "$perf_dir/origin.sh" start --pages "$pages" --run "$run" --port "$origin_port" --tls-port "$tls_port" >&2
    own_origin=1
    if [ "$page_age" -gt 0 ]; then
        touch -d "@$(( $(date +%s) - page_age * 86400 ))" "$run/origin/www/p/"*.html "$run/origin/www/p/"*.html.gz
    fi
fi

if [ -z "$out" ]; then
    mkdir -p "$repo_root/target/perf"
    out=$repo_root/target/perf/results-$(date +%Y%m%d-%H%M%S).txt
fi
mkdir -p "$(dirname "$out")"
out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
summary=${out%.txt}.md
[ "$summary" != "$out" ] || summary=$out.md

serve() { # $1 = profile: the command line peers.sh runs in the foreground
    printf '%q serve --config %q' "$pith_bin" "$run/pith-$1.toml"
}
extreme_flag=()
[ "$extremes" = 1 ] || extreme_flag=(--no-extremes)

pith_cmds=()
if [ "$icap" = 1 ]; then
    for port in $(for p in 18114 18115 18116 18121 18122 18123; do shift_port "$p"; done); do
        ! port_busy "$port" || { echo "perf.sh: 127.0.0.1:$port (used by --icap) is already in use" >&2; exit 1; }
    done
    icap_cmd() { # $1 = what, $2 = Squid port, $3 = ICAP port
        printf 'env PITH=%q RUN=%q %q %s %s %s' "$pith_bin" "$run" "$repo_root/scripts/perf-icap.sh" "$1" "$2" "$3"
    }
    s1=$(shift_port 18114) s2=$(shift_port 18115) s3=$(shift_port 18116)
    i1=$(shift_port 18121) i2=$(shift_port 18122) i3=$(shift_port 18123)
    pith_cmds+=(--cmd "squid-pith-icap=$s1=$(icap_cmd pith-declutter "$s1" "$i1")")
    pith_cmds+=(--cmd "squid-pith-204=$s2=$(icap_cmd pith-pass "$s2" "$i3")")
    pith_cmds+=(--cmd "squid-cicap-echo=$s3=$(icap_cmd cicap-echo "$s3" "$i2")")
fi
for v in $variants; do
    case "$v" in
        pass) pith_cmds+=(--cmd "pith-pass=$pass_port=$(serve pass)");;
        declutter) pith_cmds+=(--cmd "pith-declutter=$declutter_port=$(serve declutter)");;
        cache) pith_cmds+=(--cmd "pith-cache=$cache_port=$(serve cache)");;
    esac
done

"$perf_dir/peers.sh" run --pages "$pages" --run "$run" --peers "$peers" \
    "${pith_cmds[@]}" \
    --reps "$reps" --secs "$secs" --concs "$concs" "${extreme_flag[@]}" --out "$out"

# The image: each rep, direct and then each pith listener, one at a time, started and stopped
# by the harness as in its own runs, with an unrecorded warm-up that fills the cache.
photo_path=/img/rocket.jpg
fetch_photo() { # prints the photograph's path, fetching it when missing
    local dir=$repo_root/target/perf/photos wheel
    if [ ! -s "$dir/rocket.jpg" ]; then
        command -v pip >/dev/null 2>&1 && command -v unzip >/dev/null 2>&1 \
            || { echo "perf.sh: --image needs pip and unzip to fetch the photograph" >&2; exit 1; }
        mkdir -p "$dir"
        wheel=$(mktemp -d)
        pip download --quiet --no-deps --only-binary=:all: --dest "$wheel" scikit-image >&2
        unzip -q -j -o "$wheel"/scikit_image-*.whl skimage/data/rocket.jpg -d "$dir"
        rm -rf "$wheel"
    fi
    echo "$dir/rocket.jpg"
}
if [ "$image" = 1 ]; then
    photo=$(fetch_photo)
    mkdir -p "$origin_www/img"
    cp "$photo" "$origin_www$photo_path"
    [ "$page_age" -gt 0 ] && touch -d "@$(( $(date +%s) - page_age * 86400 ))" "$origin_www$photo_path"
    chmod -R a+rX "$origin_www/img"
    curl -sf --max-time 5 -o /dev/null "http://127.0.0.1:$origin_port$photo_path" \
        || { echo "perf.sh: the origin does not serve $photo_path" >&2; exit 1; }
    image_peers=(direct)
    for v in $variants; do image_peers+=("pith-$v"); done
    for rep in $(seq 1 "$reps"); do
        for name in "${image_peers[@]}"; do
            started=()
            case "$name" in
                direct) proxy=direct; image_pid=$(cat "$run/origin/nginx.pid");;
                *)
                    v=${name#pith-}
                    case "$v" in pass) port=$pass_port;; declutter) port=$declutter_port;; cache) port=$cache_port;; esac
                    started=(--run "$run" --cmd "$name=$port=$(serve "$v")")
                    read -r _ _ image_pid < <("$perf_dir/peers.sh" start "$name" "${started[@]}" | tail -n 1)
                    proxy=127.0.0.1:$port;;
            esac
            "$perf_dir/load.sh" --proxy "$proxy" --conc 16 --secs 2 --path "$photo_path" --label warmup >/dev/null || true
            if [ "$proxy" != direct ]; then
                # What the cache did for it after the warm-up (HIT through pith-cache).
                x_cache=$(curl -s --max-time 10 -o /dev/null -D - -x "$proxy" "http://127.0.0.1:$origin_port$photo_path" \
                    | tr -d '\r' | awk -F': ' 'tolower($1) == "x-cache" { print $2 }')
                echo "rep=$rep verify peer=$name page=$photo_path x_cache=${x_cache:-none}" | tee -a "$out"
            fi
            line="$("$perf_dir/load.sh" --proxy "$proxy" --pid "$image_pid" --conc 16 --secs "$secs" --path "$photo_path" --label "$name" 2>&1)" \
                || line="label=$name page=$photo_path FAILED: ${line//$'\n'/ }"
            echo "rep=$rep $line" | tee -a "$out"
            [ ${#started[@]} -eq 0 ] || "$perf_dir/peers.sh" stop "$name" --run "$run" >/dev/null
        done
    done
fi

{
    python3 "$perf_dir/summarize.py" "$out"
    echo
    python3 "$repo_root/scripts/perf-cpu.py" "$out"
} | tee "$summary"
echo
echo "perf.sh: raw results in $out"
echo "perf.sh: table in $summary"
