#!/usr/bin/env bash
# Speed budgets held by CI: instructions and system calls per request, on five paths, compared
# with perf/budgets.toml. Wall-clock speed moves ±20% on shared machines; these counts do not.
#
# What is measured: the optimised binary (target/release/pith, built by
# `cargo build --release --locked`, the one CI builds once for the gates, the soak and the
# package) serving a fixed mix of development pages (perf/gate-pages.txt, names under
# ../shared/bench/scrapinghub) from a loopback origin of its own (scripts/gates.py origin:
# identity, or gzip to a request that asks for it), one request at a time on one kept-alive
# client connection (scripts/gates.py client). The paths:
#   pass       profile pass, cache off
#   declutter  profile declutter, cache off (every page fetched and rewritten), identity
#   reader     profile reader, cache off
#   gzip       profile declutter, cache off, client and origin both gzip
#   cache      profile declutter, cache on, every measured request a hit
#   cache-gzip the same with client and origin both gzip: a hit sends the kept gzip body and
#              compresses nothing again
# Each path has one unmeasured warm-up round over the pages first (for `cache`, the round that
# fills the cache), so start-up and warm-up are excluded from every count.
#
#   instructions  valgrind --tool=callgrind with --instr-atstart=no: instrumentation is switched
#                 on (callgrind_control -i on) after the warm-ups, around one path's requests,
#                 then off, and the counts dumped; all threads counted together. Per request.
#   syscalls      the calls that carry the work (reads, writes, sends, receives, accepts,
#                 connects, sockets, closes, opens; not epoll_wait or futex), counted by
#                 `strace -f -c` attached after the warm-ups, on the native process (no
#                 valgrind). Per request.
#
# Budgets: perf/budgets.toml, the median of ten runs plus a margin the spread justifies (the noise
# study is in docs/performance.md). A figure above its budget fails. A figure more than the
# margin below it is printed with the new budget to put in the file in the same change.
#
# Usage: scripts/gates.sh [--no-build] [--binary PATH]
#                         [--paths "pass declutter reader gzip cache cache-gzip"]
#                         [--rounds N] [--out FILE] [--inflate PCT] [--measure-only]
#        scripts/gates.sh --self-test
#   --no-build      use target/release/pith (under $CARGO_TARGET_DIR when set) as built
#   --binary PATH   measure this binary and build nothing
#   --rounds N      measured rounds over the pages per path (default 3; 4N for pass, cache
#                   and cache-gzip, whose requests are cheap and whose spread is wider)
#   --out FILE      the measured figures, one `KIND PATH PER-REQUEST` line each (default
#                   target/gates/measured.txt)
#   --inflate PCT   raise every measured figure by PCT% before comparing: `--inflate 3` must fail
#   --measure-only  measure and write --out, compare nothing (the noise study)
#   --self-test     check the comparison on the budget file (a 3% rise fails), measure nothing
# Installs valgrind and strace with apt-get when missing (needs root or sudo); needs python3.
# Everything listens on 127.0.0.1; every wait is bounded. About a minute and a half of CPU
# (docs/performance.md, "Time in CI").
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
shared=${PITH_SHARED:-$repo_root/../shared}
pages=$shared/bench/scrapinghub
page_list=$repo_root/perf/gate-pages.txt
budgets=$repo_root/perf/budgets.toml
gates_py=$repo_root/scripts/gates.py
build=1
binary=""
paths="pass declutter reader gzip cache cache-gzip"
rounds=3
out=""
inflate=0
measure_only=0
while [ $# -gt 0 ]; do
    case "$1" in
        --no-build) build=0; shift;;
        --binary) binary=$2; build=0; shift 2;;
        --paths) paths=$2; shift 2;;
        --rounds) rounds=$2; shift 2;;
        --out) out=$2; shift 2;;
        --inflate) inflate=$2; shift 2;;
        --measure-only) measure_only=1; shift;;
        --self-test) exec python3 "$gates_py" self-test --budgets "$budgets";;
        -h|--help) sed -n '2,48p' "$0"; exit 0;;
        *) echo "gates.sh: unknown argument $1 (see --help)" >&2; exit 2;;
    esac
done
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "gates.sh: --rounds must be a positive number" >&2; exit 2; }
for p in $paths; do
    case "$p" in pass|declutter|reader|gzip|cache|cache-gzip) ;; *) echo "gates.sh: no path $p" >&2; exit 2;; esac
done
[ -d "$pages" ] || { echo "gates.sh: no pages at $pages (set PITH_SHARED)" >&2; exit 1; }

install_tools() {
    local missing=()
    command -v valgrind >/dev/null 2>&1 && command -v callgrind_control >/dev/null 2>&1 || missing+=(valgrind)
    command -v strace >/dev/null 2>&1 || missing+=(strace)
    command -v python3 >/dev/null 2>&1 || missing+=(python3)
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "gates.sh: installing ${missing[*]} with apt-get" >&2
    local sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
install_tools
# tomllib: Python 3.11 (Debian 12).
python3 -c 'import tomllib' 2>/dev/null || { echo "gates.sh: needs python3 >= 3.11 (tomllib)" >&2; exit 1; }

[ "$build" = 0 ] || (cd "$repo_root" && cargo build --release --locked --bin pith)
pith_bin=${binary:-${CARGO_TARGET_DIR:-$repo_root/target}/release/pith}
[ -x "$pith_bin" ] || { echo "gates.sh: no $pith_bin; run without --no-build" >&2; exit 1; }
[ -n "$out" ] || out=$repo_root/target/gates/measured.txt
mkdir -p "$(dirname "$out")"

started=$(date +%s)
run=$(mktemp -d "${TMPDIR:-/tmp}/pith-gates.XXXXXX")
pids=()
cleanup() {
    local pid
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    [ -n "${GATES_KEEP:-}" ] || rm -rf "$run"
}
trap cleanup EXIT

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_port() { # $1 = port, $2 = seconds
    local i
    for ((i = 0; i < $2 * 10; i++)); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.1
    done
    echo "gates.sh: nothing listens on 127.0.0.1:$1 after $2 s" >&2
    return 1
}

# The origin.
python3 "$gates_py" origin --pages "$pages" --list "$page_list" --port-file "$run/origin.port" &
pids+=($!)
for _ in $(seq 1 100); do [ -s "$run/origin.port" ] && break; sleep 0.1; done
[ -s "$run/origin.port" ] || { echo "gates.sh: the origin did not start" >&2; exit 1; }
origin=127.0.0.1:$(cat "$run/origin.port")

# Two processes: the paths with the cache off share one, the cache hits have their own.
declare -A port
uncached=() cached=()
for p in $paths; do
    port[$p]=$(free_port)
    case "$p" in cache*) cached+=("$p");; *) uncached+=("$p");; esac
done
write_config() { # $1 = file, $2 = cache on (true/false), rest = paths
    local file=$1 cache=$2 p profile
    shift 2
    {
        printf '[log]\nlevel = "warn"\n\n[upstream]\nsend_via = false\n\n[cache]\nenabled = %s\n\n' "$cache"
        for p in "$@"; do
            case "$p" in pass) profile=pass;; reader) profile=reader;; *) profile=declutter;; esac
            printf '[[listener]]\naddress = "127.0.0.1:%s"\nprofile = "%s"\n\n' "${port[$p]}" "$profile"
        done
    } > "$file"
    "$pith_bin" check-config "$file" >/dev/null
}
client() { # $1 = path, $2 = rounds, rest = client flags
    local p=$1 n=$2
    shift 2
    local flags=()
    case "$p" in *gzip) flags+=(--gzip --expect-gzip);; esac
    timeout 900 python3 "$gates_py" client --proxy "127.0.0.1:${port[$p]}" --origin "$origin" \
        --list "$page_list" --rounds "$n" "${flags[@]}" "$@"
}
warm() { # the unmeasured round(s) of every path of one process
    local p
    for p in "$@"; do
        client "$p" 1 >/dev/null
        case "$p" in cache*) client "$p" 1 --expect-hit >/dev/null;; esac
    done
}
measured_client() { # $1 = path; prints the number of requests
    local extra=() n=$rounds
    case "$1" in cache*) extra+=(--expect-hit);; esac
    # The light paths' counts move more with the number of reads a page took; four times
    # the requests, which cost little, quarter their spread.
    case "$1" in pass|cache*) n=$((rounds * 4));; esac
    client "$1" "$n" "${extra[@]}"
}

syscalls=read,write,readv,writev,pread64,pwrite64,sendto,recvfrom,sendmsg,recvmsg,sendmmsg,recvmmsg,sendfile,accept,accept4,connect,socket,shutdown,close,openat

# Instructions: one callgrind process per group.
callgrind_group() { # $1 = name, $2 = cache, rest = paths
    local name=$1 cache=$2 p pid n dump total
    shift 2
    [ $# -gt 0 ] || return 0
    write_config "$run/$name.toml" "$cache" "$@"
    valgrind --tool=callgrind --instr-atstart=no --vgdb=yes --callgrind-out-file="$run/cg-$name.%p" \
        "$pith_bin" serve --config "$run/$name.toml" 2>"$run/cg-$name.log" &
    pid=$!
    pids+=("$pid")
    for p in "$@"; do wait_port "${port[$p]}" 300; done
    warm "$@"
    for p in "$@"; do
        callgrind_control -z "$pid" >/dev/null
        callgrind_control -i on "$pid" >/dev/null
        n=$(measured_client "$p")
        callgrind_control -i off "$pid" >/dev/null
        callgrind_control --dump="$p" "$pid" >/dev/null
        dump=$(ls -t "$run/cg-$name.$pid".* | head -n 1)
        total=$(awk '/^totals:/ { print $2; exit }' "$dump")
        [ -n "$total" ] || { echo "gates.sh: no totals in $dump" >&2; exit 1; }
        echo "instructions $p $(python3 -c "print(round($total / $n, 1))")" >> "$run/measured.txt"
        echo "gates.sh: instructions $p: $total over $n requests" >&2
    done
    kill "$pid"; wait "$pid" 2>/dev/null || true
}

# System calls: the native process, strace attached around one path's requests.
strace_group() { # $1 = name, $2 = cache, rest = paths
    local name=$1 cache=$2 p pid spid n calls
    shift 2
    [ $# -gt 0 ] || return 0
    write_config "$run/$name.toml" "$cache" "$@"
    "$pith_bin" serve --config "$run/$name.toml" 2>"$run/st-$name.log" &
    pid=$!
    pids+=("$pid")
    for p in "$@"; do wait_port "${port[$p]}" 60; done
    warm "$@"
    for p in "$@"; do
        : > "$run/st-$p.err"
        strace -f -c -e trace="$syscalls" -o "$run/st-$p.txt" -p "$pid" 2>"$run/st-$p.err" &
        spid=$!
        # Every thread attached before the first request.
        for _ in $(seq 1 100); do grep -q attached "$run/st-$p.err" && break; sleep 0.05; done
        sleep 0.5
        n=$(measured_client "$p")
        kill -INT "$spid"; wait "$spid" 2>/dev/null || true
        calls=$(awk '$NF == "total" { print $4; exit }' "$run/st-$p.txt")
        [ -n "$calls" ] || { echo "gates.sh: no strace summary for $p" >&2; cat "$run/st-$p.err" >&2; exit 1; }
        echo "syscalls $p $(python3 -c "print(round($calls / $n, 2))")" >> "$run/measured.txt"
        echo "gates.sh: syscalls $p: $calls over $n requests" >&2
    done
    kill "$pid"; wait "$pid" 2>/dev/null || true
}

: > "$run/measured.txt"
callgrind_group uncached false "${uncached[@]}"
callgrind_group cached true "${cached[@]}"
strace_group uncached false "${uncached[@]}"
strace_group cached true "${cached[@]}"
cp "$run/measured.txt" "$out"
echo "gates.sh: figures in $out ($(($(date +%s) - started)) s)" >&2

[ "$measure_only" = 0 ] || { cat "$out"; exit 0; }
check=(check --budgets "$budgets" --measured "$out")
[ "$inflate" = 0 ] || check+=(--inflate "$inflate")
python3 "$gates_py" "${check[@]}"
