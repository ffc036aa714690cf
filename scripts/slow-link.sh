#!/usr/bin/env bash
# Development pages over a slow link, three ways, in headless Chromium: straight from the
# origin over HTTPS, through pith with HTTPS interception, and through pith's URL gateway.
# Reports, per page and as medians, the time until the page shows readable text (200
# characters of body text, or a shorter page's whole text) and the bytes that crossed the link to the client
# (tests/browser/slow-link.mjs says how each is measured).
#
# Usage: scripts/slow-link.sh [--sample N] [--sets "scrapinghub readability"] [--rate 256kbit]
#                             [--delay 150ms] [--pith PATH] [--out DIR]
#   --sample N   the first N pages of each set (default 5)
#   --sets "…"   development sets under ../shared/bench (default: scrapinghub)
#   --rate R     the link's rate each way, as tc writes it (default 256kbit)
#   --delay D    one-way delay each way (default 150ms: a 300 ms round trip)
#   --pith PATH  the pith binary (default: the debug build, built here when missing)
#   --out DIR    results (default target/slow-link): slow-link.jsonl, summary.json
#
# The link: the client (Chromium) runs in a network namespace of its own, joined to the host
# by a veth pair whose two ends are shaped with tc netem (rate and delay each way); the origin
# and pith listen on the host's end of the pair (10.77.0.1), pith reaching the origin over the
# host side unshaped, as a gateway next to a fast uplink does. Only the pair's own addresses
# are used. A kernel without netem gets tbf for the rate and Chromium's emulated latency for
# the round trip (said in the output). The origin's certificate is made here (openssl) and trusted by pith through
# upstream.extra_root_certificates; Chromium ignores certificate errors (the origin's and
# pith's CA), which changes nothing on the link. pith's cache is off: every load is fetched.
#
# Needs root (ip netns, tc), Debian's chromium, node and openssl; installs chromium with
# apt-get, and the npm packages tests/browser pins, when missing. Everything it made (the
# namespace and the veth pair, pith, the origin, temporary files) is removed on exit.
# Not part of the test suite: a measurement, run by hand.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
shared=${PITH_SHARED:-$repo/../shared}
sample=5
sets="scrapinghub"
rate=256kbit
delay=150ms
pith_arg=""
out=$repo/target/slow-link
while [ $# -gt 0 ]; do
    case "$1" in
        --sample) sample=$2; shift 2;;
        --sets) sets=$2; shift 2;;
        --rate) rate=$2; shift 2;;
        --delay) delay=$2; shift 2;;
        --pith) pith_arg=$2; shift 2;;
        --out) out=$2; shift 2;;
        -h|--help) sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'; exit 0;;
        *) echo "slow-link.sh: unknown argument $1 (see --help)" >&2; exit 64;;
    esac
done
[[ "$sample" =~ ^[0-9]+$ ]] || { echo "slow-link.sh: --sample takes a number" >&2; exit 64; }
[ "$(id -u)" -eq 0 ] || { echo "slow-link.sh: needs root (ip netns, tc)" >&2; exit 1; }
for tool in ip tc openssl node; do
    command -v "$tool" >/dev/null || { echo "slow-link.sh: $tool is needed" >&2; exit 1; }
done
if [ ! -x /usr/bin/chromium ]; then
    echo "slow-link.sh: installing chromium with apt-get" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
if [ ! -d "$repo/tests/browser/node_modules/playwright-core" ]; then
    (cd "$repo/tests/browser" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
fi
folders=()
for s in $sets; do
    [ -d "$shared/bench/$s" ] || { echo "slow-link.sh: no development set at $shared/bench/$s" >&2; exit 1; }
    folders+=("$shared/bench/$s")
done
if [ -z "$pith_arg" ]; then
    (cd "$repo" && cargo build --locked --bin pith)
fi
pith=${pith_arg:-${CARGO_TARGET_DIR:-$repo/target}/debug/pith}
[ -x "$pith" ] || { echo "slow-link.sh: no pith binary at $pith" >&2; exit 1; }

ns=pith-slow-$$
host_if=psl$$a
client_if=psl$$b
host_ip=10.77.0.1
client_ip=10.77.0.2
run=$(mktemp -d "${TMPDIR:-/tmp}/pith-slow.XXXXXX")
pid=""
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null
    wait 2>/dev/null || true
    ip link del "$host_if" 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
    rm -rf "$run"
}
trap cleanup EXIT

# The link.
ip netns add "$ns"
ip link add "$host_if" type veth peer name "$client_if"
ip link set "$client_if" netns "$ns"
ip addr add "$host_ip/30" dev "$host_if"
ip link set "$host_if" up
ip netns exec "$ns" ip addr add "$client_ip/30" dev "$client_if"
ip netns exec "$ns" ip link set "$client_if" up
ip netns exec "$ns" ip link set lo up
latency=()
if tc qdisc add dev "$host_if" root netem delay "$delay" rate "$rate" 2>/dev/null; then
    ip netns exec "$ns" tc qdisc add dev "$client_if" root netem delay "$delay" rate "$rate"
    shaping="netem: $rate and $delay each way"
else
    # A kernel without netem (CONFIG_NET_SCH_NETEM): the rate by tbf on both ends, the round
    # trip by Chromium's own network emulation, which adds it to each request instead of each
    # packet exchange (TCP and TLS handshakes are not delayed): a kinder link than netem's.
    tc qdisc add dev "$host_if" root tbf rate "$rate" burst 3000 latency 2s
    ip netns exec "$ns" tc qdisc add dev "$client_if" root tbf rate "$rate" burst 3000 latency 2s
    ms=${delay%ms}
    [[ "$ms" =~ ^[0-9]+$ ]] || { echo "slow-link.sh: without netem --delay must be in ms" >&2; exit 64; }
    latency=(--latency "$((2 * ms))")
    shaping="tbf: $rate each way; no netem in this kernel, so a $((2 * ms)) ms round trip per request in Chromium"
fi

# The origin's certificate, for its address.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj "/CN=$host_ip" \
    -addext "subjectAltName=IP:$host_ip" -addext "basicConstraints=critical,CA:FALSE" \
    -keyout "$run/origin-key.pem" -out "$run/origin.pem" 2>/dev/null

cat > "$run/pith.toml" <<TOML
[log]
level = "warn"

[[listener]]
address = "$host_ip:8080"
profile = "declutter"
allow = ["$client_ip/32", "127.0.0.0/8"]

[upstream]
extra_root_certificates = ["$run/origin.pem"]
connect_ports = [8443]

[intercept]
enabled = true
ca_dir = "$run/ca"

[cache]
enabled = false
TOML
"$pith" serve --config "$run/pith.toml" > "$run/pith.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/$host_ip/8080") 2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || { cat "$run/pith.log" >&2; exit 1; }
    sleep 0.1
done

# Chromium in the namespace: playwright starts this wrapper, which runs the browser there.
cat > "$run/chromium" <<SH
#!/bin/sh
exec ip netns exec $ns /usr/bin/chromium "\$@"
SH
chmod +x "$run/chromium"

mkdir -p "$out"
IFS=,; pages="${folders[*]}"; unset IFS
echo "slow-link.sh: $shaping; $sample pages of each of: $sets" >&2
node "$repo/tests/browser/slow-link.mjs" --pages "$pages" --sample "$sample" --chromium "$run/chromium" \
    --origin "$host_ip:8443" --cert "$run/origin.pem" --key "$run/origin-key.pem" --pith "$host_ip:8080" \
    --link "$host_if" --out "$out" "${latency[@]}"
