#!/usr/bin/env bash
# Runs the public HTTP cache test suite (npm `http-cache-tests`, the suite behind cache-tests.fyi)
# against pith and against Squid as forward proxies, in one run, and prints the comparison.
#
# Four runs of the whole suite (six with --before), one after another, through the same client
# transport:
#   direct      the suite's client straight to its server: the no-cache baseline
#   pith        pith, profile `suite` (rules `declutter`, preset `none`), the server's own
#               responses (text/plain unless a test sets a type): pith's pass-through path
#   pith-html   the same pith, a second server whose default Content-Type is text/html, so
#               pith's rewrite-and-cache path runs
#   squid       Debian's Squid as a forward proxy (memory cache only), the plain server
#   pith-before, pith-html-before   with --before PATH: the same two runs through a second
#               pith, another build (an earlier commit's), so before and after are measured
#               in one run beside the same Squid
# Then a table per run (passed, required failures, optional failures, dependency failures,
# setup/harness failures; dependencies honoured, each test judged by the suite's own
# `determineTestResult`), and pith's required failures by test id for both pith runs, marked
# where Squid passes the same test.
#
# Usage: scripts/cache-tests.sh [--runs "direct pith pith-html squid"] [--keep DIR] [--no-build]
#                               [--pith PATH] [--before PATH]
#   --runs "…"   which runs to make (default all four; squid is left out with a note when it
#                cannot be installed)
#   --keep DIR   also copy each run's results JSON and the logs to DIR
#   --no-build   use the target/release/pith already built (under $CARGO_TARGET_DIR when set)
#   --pith PATH  use this pith binary and build nothing (a debug build answers the suite the
#                same: what is cached does not depend on optimisation; two binaries of two
#                commits can be compared this way without a release build of each)
#   --before PATH  also run the suite through this pith binary (runs pith-before and
#                pith-html-before, added to the default runs)
#   --base-port P  first of five consecutive loopback ports to use (default 28100)
#
# Takes about two minutes and a half on a 2-core machine once built and installed (20 s per
# run, about a minute for Squid's; the release build and the first npm/apt install come on
# top). Needs node and npm (the suite) and squid; npm packages go to a scratch folder under
# target/cache-tests (never committed), squid is installed with apt-get when missing (needs
# root or sudo). Everything listens on 127.0.0.1 only; every process this script starts is
# stopped when it exits (trap), and each suite run is bounded by `timeout`. The client's
# transport (absolute-form requests to a forward proxy, never CONNECT) is
# ../shared/cache-tests/proxy-preload.mjs; set PITH_SHARED for another shared/. The suite's npm
# release keeps its engine at the package's top; later releases keep it under test-engine/:
# either is run, with the tests the suite's own CLI runs (its surrogate-control tests included).
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
shared=${PITH_SHARED:-$repo_root/../shared}
preload=$shared/cache-tests/proxy-preload.mjs
target_dir=${CARGO_TARGET_DIR:-$repo_root/target}
work=$target_dir/cache-tests
runs="direct pith pith-html squid"
keep=""
build=1
pith_bin=""
before_bin=""
runs_given=0
base_port=28100
# One whole suite run takes about a minute; past this it is stopped and counted as failed.
run_timeout=420

while [ $# -gt 0 ]; do
    case "$1" in
        --runs) runs=$2; runs_given=1; shift 2;;
        --keep) keep=$2; shift 2;;
        --no-build) build=0; shift;;
        --pith) pith_bin=$2; build=0; shift 2;;
        --before) before_bin=$2; shift 2;;
        --base-port) base_port=$2; shift 2;;
        -h|--help) sed -n '2,42p' "$0"; exit 0;;
        *) echo "cache-tests.sh: unknown argument $1 (see --help)" >&2; exit 2;;
    esac
done
if [ -n "$before_bin" ] && [ "$runs_given" = 0 ]; then
    runs="direct pith-before pith-html-before pith pith-html squid"
fi
for r in $runs; do
    case "$r" in
        direct|pith|pith-html|squid) ;;
        pith-before|pith-html-before) [ -n "$before_bin" ] || { echo "cache-tests.sh: $r needs --before PATH" >&2; exit 2; };;
        *) echo "cache-tests.sh: --runs takes direct, pith, pith-html, squid, pith-before and/or pith-html-before, not $r" >&2; exit 2;;
    esac
done
[ -z "$before_bin" ] || [ -x "$before_bin" ] || { echo "cache-tests.sh: --before $before_bin is not an executable" >&2; exit 2; }
[[ "$base_port" =~ ^[1-9][0-9]*$ ]] && [ "$base_port" -lt 65530 ] || { echo "cache-tests.sh: --base-port must be a port number below 65530" >&2; exit 2; }
[ -f "$preload" ] || { echo "cache-tests.sh: no client transport at $preload (set PITH_SHARED)" >&2; exit 1; }
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || { echo "cache-tests.sh: node and npm are needed (apt-get install nodejs npm)" >&2; exit 1; }

origin_port=$base_port          # the suite's server, default types
html_port=$((base_port + 1))    # the suite's server answering text/html
pith_port=$((base_port + 2))
squid_port=$((base_port + 3))
before_port=$((base_port + 4))
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for port in "$origin_port" "$html_port" "$pith_port" "$squid_port" "$before_port"; do
    if port_busy "$port"; then
        echo "cache-tests.sh: 127.0.0.1:$port is already in use; pick other ports with --base-port" >&2
        exit 1
    fi
done

# Squid comes from Debian; install it when it is missing and a run needs it.
install_squid() {
    command -v squid >/dev/null 2>&1 || [ -x /usr/sbin/squid ] && return 0
    echo "cache-tests.sh: installing squid with apt-get" >&2
    local sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    "${sudo[@]}" apt-get update -qq && "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends squid >&2
}
if [[ " $runs " == *" squid "* ]] && ! install_squid; then
    echo "cache-tests.sh: leaving out squid: it could not be installed" >&2
    runs=${runs//squid/}
fi
export PATH="$PATH:/usr/sbin"

# The suite, and undici for the client transport (newer releases of the suite bring their own).
mkdir -p "$work"
if [ ! -f "$work/node_modules/http-cache-tests/package.json" ] || [ ! -d "$work/node_modules/undici" ]; then
    echo "cache-tests.sh: installing http-cache-tests and undici from npm into $work" >&2
    [ -f "$work/package.json" ] || echo '{"private": true}' > "$work/package.json"
    (cd "$work" && timeout 300 npm install --no-audit --no-fund --silent http-cache-tests 'undici@7' >&2)
fi
suite=$work/node_modules/http-cache-tests
# The suite moved its engine under test-engine/ after its npm releases; take either layout.
engine=$suite
[ -d "$suite/test-engine" ] && engine=$suite/test-engine

if [[ " $runs " == *" pith "* || " $runs " == *" pith-html "* ]]; then
    [ "$build" = 0 ] || (cd "$repo_root" && cargo build --release --bin pith >&2)
    [ -n "$pith_bin" ] || pith_bin=$target_dir/release/pith
    [ -x "$pith_bin" ] || { echo "cache-tests.sh: no $pith_bin; run without --no-build, or name one with --pith" >&2; exit 1; }
fi

run=$(mktemp -d "${TMPDIR:-/tmp}/pith-cache-tests.XXXXXX")
# Squid's workers run as an unprivileged user and write their logs under the run dir.
chmod 755 "$run"
pids=()
cleanup() {
    local pid
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$run"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The server listens on every address with a bare port; this preload binds it to loopback.
cat > "$run/loopback.mjs" <<'EOF'
import http from 'node:http'
const listen = http.Server.prototype.listen
http.Server.prototype.listen = function (port, ...rest) {
  if (typeof port === 'number' || typeof port === 'string') return listen.call(this, Number(port), '127.0.0.1', ...rest)
  return listen.call(this, port, ...rest)
}
EOF

# The html server: a copy of the suite whose default Content-Type is text/html.
html_suite=$run/html-suite
cp -r "$suite" "$html_suite"
handle_test=$(find "$html_suite" -path '*/server/handle-test.mjs' | head -n 1)
grep -q "'Content-Type', 'text/plain'" "$handle_test" \
    || { echo "cache-tests.sh: $handle_test no longer sets text/plain as the default type" >&2; exit 1; }
sed -i "s|'Content-Type', 'text/plain'|'Content-Type', 'text/html'|" "$handle_test"
html_engine=$html_suite
[ -d "$html_suite/test-engine" ] && html_engine=$html_suite/test-engine

start_server() { # DIR PORT LOG
    (cd "$1" && exec env npm_config_port="$2" npm_config_protocol=http npm_config_pidfile="$run/server-$2.pid" \
        node --import "$run/loopback.mjs" server/server.mjs) >"$3" 2>&1 &
    pids+=($!)
}
wait_port() { # PORT WHAT
    local i
    for i in $(seq 1 100); do port_busy "$1" && return 0; sleep 0.1; done
    echo "cache-tests.sh: $2 did not start on 127.0.0.1:$1" >&2
    return 1
}
start_server "$engine" "$origin_port" "$run/server.log"
start_server "$html_engine" "$html_port" "$run/server-html.log"
wait_port "$origin_port" "the suite's server"
wait_port "$html_port" "the suite's text/html server"

# The suite's client opens many connections at once from one address; pith's default of 64 per
# client (a gateway's guard) turned an occasional request into a 503 and a test into a flake.
start_pith() { # BINARY PORT NAME
    cat > "$run/$3.toml" <<EOF
[log]
level = "warn"
[limits]
max_connections_per_client = 1024
[[listener]]
address = "127.0.0.1:$2"
profile = "suite"
[profiles.suite]
rules = "declutter"
output = "html"
preset = "none"
EOF
    "$1" serve --config "$run/$3.toml" >"$run/$3.log" 2>&1 &
    pids+=($!)
    wait_port "$2" "$3"
}
if [[ " $runs " == *" pith "* || " $runs " == *" pith-html "* ]]; then
    start_pith "$pith_bin" "$pith_port" pith
fi
if [[ " $runs " == *" pith-before "* || " $runs " == *" pith-html-before "* ]]; then
    start_pith "$before_bin" "$before_port" pith-before
fi

if [[ " $runs " == *" squid "* ]]; then
    mkdir -p "$run/squid"
    chmod 777 "$run/squid"
    cat > "$run/squid.conf" <<EOF
http_port 127.0.0.1:$squid_port
acl localnet src 127.0.0.0/8
http_access allow localnet
http_access deny all
cache_mem 64 MB
maximum_object_size_in_memory 1 MB
cache_log $run/squid/cache.log
access_log $run/squid/access.log
pid_filename $run/squid/squid.pid
coredump_dir $run/squid
shutdown_lifetime 1 seconds
EOF
    squid -N -f "$run/squid.conf" >"$run/squid.log" 2>&1 &
    pids+=($!)
    wait_port "$squid_port" "squid"
fi

# One run of the suite: LABEL PROXY(or empty) SERVER_PORT
run_suite() {
    local label=$1 proxy=$2 port=$3 started=$SECONDS
    local cli=("$run/cli.mjs")
    [ -f "$engine/cli.mjs" ] && [ -d "$suite/test-engine" ] && cli=("$engine/cli.mjs")
    echo "cache-tests.sh: running the suite: $label" >&2
    CACHE_TESTS_PROXY=$proxy CACHE_TESTS_SUITE_PACKAGE_JSON=$suite/package.json \
        npm_config_base=http://127.0.0.1:$port npm_config_id="" \
        timeout "$run_timeout" node --no-warnings --import "$preload" "${cli[@]}" \
        >"$run/$label.json" 2>"$run/$label.err" || echo "cache-tests.sh: the $label run failed (see its log)" >&2
    echo "cache-tests.sh: $label took $((SECONDS - started)) s" >&2
}

# The npm release's CLI passes node-fetch in; this one passes the transport's fetch instead
# (the same calls, the same tests: it is cli.mjs with the fetch swapped).
cat > "$run/cli.mjs" <<EOF
import { runTests, getResults } from '$engine/client/runner.mjs'
import tests from '$engine/tests/index.mjs'
import surrogate from '$engine/tests/surrogate-control.mjs'
tests.push(surrogate)
await runTests(tests, globalThis.fetch, false, process.env.npm_config_base)
console.log(JSON.stringify(getResults(), null, 2))
EOF

# Judges each run with the suite's own function, dependencies honoured.
cat > "$run/summary.mjs" <<EOF
import fs from 'node:fs'
const engine = '$engine'
const mod = fs.existsSync(engine + '/lib/results.mjs') ? await import(engine + '/lib/results.mjs') : await import(engine + '/lib/display.mjs')
const tests = (await import(engine + '/tests/index.mjs')).default
if (!tests.some(s => s.id === 'surrogate-control')) tests.push((await import(engine + '/tests/surrogate-control.mjs')).default)
const kinds = { '✅': 'pass', '⛔️': 'fail', '⚠️': 'optional', 'Y': 'pass', 'N': 'check-no', '⚪️': 'dependency', '🔹': 'setup', '⁉️': 'harness', '↻': 'setup', '-': 'untested' }
const labels = process.argv.slice(2)
const judged = {}
for (const label of labels) {
  let results = {}
  try { results = JSON.parse(fs.readFileSync('$run/' + label + '.json', 'utf8')) } catch (e) { console.error(label + ': no results (' + e.message + ')') }
  const byId = {}
  for (const suite of tests) for (const test of suite.tests) {
    if (test.browser_only) continue
    byId[test.id] = kinds[mod.determineTestResult(tests, test.id, results, true)[2]] || 'other'
  }
  judged[label] = byId
}
const count = (byId, kind) => Object.values(byId).filter(k => k === kind).length
console.log('| run | passed | required failures | optional failures | dependency failures | setup/harness | untested |')
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |')
for (const label of labels) {
  const j = judged[label]
  console.log('| ' + label + ' | ' + count(j, 'pass') + ' | ' + count(j, 'fail') + ' | ' + count(j, 'optional') + ' | ' + count(j, 'dependency') + ' | ' + (count(j, 'setup') + count(j, 'harness')) + ' | ' + count(j, 'untested') + ' |')
}
const names = {}
for (const suite of tests) for (const test of suite.tests) names[test.id] = suite.id + ': ' + test.name
for (const label of labels.filter(l => l.startsWith('pith') && !l.endsWith('-before'))) {
  const failed = Object.keys(judged[label]).filter(id => judged[label][id] === 'fail')
  console.log('')
  console.log(label + ': ' + failed.length + ' required failures' + (judged.squid ? ' (* = Squid passes it)' : ''))
  for (const id of failed) console.log('  ' + (judged.squid && judged.squid[id] === 'pass' ? '* ' : '  ') + id + '  (' + names[id] + ')')
  const before = judged[label + '-before']
  if (!before) continue
  const now = judged[label]
  const changed = Object.keys(now).filter(id => now[id] !== before[id])
  console.log('')
  console.log(label + ' against ' + label + '-before: ' + changed.length + ' tests judged differently')
  for (const id of changed) console.log('    ' + before[id] + ' -> ' + now[id] + '  ' + id)
}
EOF

for label in $runs; do
    case "$label" in
        direct) run_suite direct "" "$origin_port";;
        pith) run_suite pith "http://127.0.0.1:$pith_port" "$origin_port";;
        pith-html) run_suite pith-html "http://127.0.0.1:$pith_port" "$html_port";;
        pith-before) run_suite pith-before "http://127.0.0.1:$before_port" "$origin_port";;
        pith-html-before) run_suite pith-html-before "http://127.0.0.1:$before_port" "$html_port";;
        squid) run_suite squid "http://127.0.0.1:$squid_port" "$origin_port";;
    esac
done

suite_version=$(node -p "require('$suite/package.json').version")
echo ""
echo "http-cache-tests $suite_version, dependencies honoured ($(date -u +%Y-%m-%dT%H:%MZ))"
# shellcheck disable=SC2086
node --no-warnings "$run/summary.mjs" $runs
if [ -n "$keep" ]; then
    mkdir -p "$keep"
    cp "$run"/*.json "$run"/*.err "$run"/*.log "$keep"/ 2>/dev/null || true
    [ -d "$run/squid" ] && cp "$run"/squid/*.log "$keep"/ 2>/dev/null || true
fi
