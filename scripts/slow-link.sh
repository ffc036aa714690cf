#!/usr/bin/env bash
# Development pages over a slow link, three ways, in headless Chromium: straight from the
# origin over HTTPS, through pith with HTTPS interception, and through pith's URL gateway.
# Reports, per page and as medians, the time until the page shows readable text (200
# characters of body text, or a shorter page's whole text), the time to its load event, and
# the bytes that crossed the link to the client (tests/browser/slow-link.mjs says how each is
# measured). The pages' images are real photographs at the widths the pages ask for, served
# by the origin over the same link (tests/browser/photo-origin.mjs, shared with
# page-weight.sh), so a direct load carries what the page's text and pictures weigh.
#
# Usage: scripts/slow-link.sh [--sample N] [--sets "scrapinghub readability"] [--rate 256kbit]
#                             [--delay 150ms] [--round-trip auto|relay|chromium] [--pith PATH]
#                             [--images PATH] [--out DIR]
#   --sample N      the first N pages of each set (default 5)
#   --sets "…"      development sets under ../shared/bench (default: scrapinghub)
#   --rate R        the link's rate each way, as tc writes it (default 256kbit)
#   --delay D       one-way delay each way, in ms (default 150ms: a 300 ms round trip)
#   --round-trip W  how the delay is made: auto (netem where the kernel has it, else relay),
#                   relay (scripts/delay-line.py) or chromium (Chromium's per-request latency,
#                   the kinder emulation this script used before; kept to compare)
#   --pith PATH     the pith binary (default: the debug build, built here when missing)
#   --images PATH   the built `images` example that makes the photographs (default: built here
#                   with the dev profile when the photographs are not yet in --out)
#   --out DIR       results (default target/slow-link): slow-link.jsonl, summary.json, photos
#
# The link: the client (Chromium) runs in a network namespace of its own, joined to the host
# by a veth pair whose two ends are shaped with tc (the rate each way); the origin and pith
# are reached at the host's end of the pair (10.77.0.1), pith reaching the origin over the
# host side unshaped, as a gateway next to a fast uplink does. Only the pair's own addresses
# and loopback are used. The round trip:
# - netem, where the kernel has it: rate and delay per packet, on both ends.
# - relay (a kernel without netem): tbf for the rate on both ends, and a delay line in user
#   space (scripts/delay-line.py) listening at 10.77.0.1 for the origin and for pith, which
#   listen on loopback behind it: each chunk is held for the one-way delay each way, in
#   order, and a new connection's first byte for one round trip more (TCP's handshake), so
#   TCP, TLS, CONNECT and every request pay their round trips. It does not emulate TCP's
#   slow start or loss (delay-line.py says why slow start changes little at 256 kbit/s and
#   300 ms). Before the pages, a self-check times a request and response on a fresh
#   connection through it (two round trips) and one more on the same connection (one).
# - chromium: tbf for the rate, and the round trip added once to each request by Chromium,
#   which never delays TCP or TLS handshakes: a kinder link than the one asked for.
# pith's listener uses a profile a gateway's operator would set for such a link: the
# declutter rules with images = "compress" (lazy images made real, the smallest fitting
# candidate chosen, photographs re-encoded as WebP at most 800 pixels wide); the gateway
# serves the same listener's profile. The origin's certificate is made here (openssl) and
# trusted by pith through upstream.extra_root_certificates; Chromium ignores certificate
# errors (the origin's and pith's CA) in its network stack, as a device trusting both would
# accept them, in the same handshake (tests/browser/slow-link.mjs says why it matters). pith's
# cache is off: every load is fetched.
#
# Needs root (ip netns, tc), Debian's chromium, node, python3 and openssl; installs chromium
# with apt-get, the npm packages tests/browser pins, and the photographs (scripts/photos.sh)
# when missing. Everything it made (the namespace and the veth pair, pith, the origin, the
# delay line, temporary files) is removed on exit.
# Not part of the test suite: a measurement, run by hand.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
shared=${PITH_SHARED:-$repo/../shared}
sample=5
sets="scrapinghub"
rate=256kbit
delay=150ms
round_trip=auto
pith_arg=""
images=""
out=$repo/target/slow-link
while [ $# -gt 0 ]; do
    case "$1" in
        --sample) sample=$2; shift 2;;
        --sets) sets=$2; shift 2;;
        --rate) rate=$2; shift 2;;
        --delay) delay=$2; shift 2;;
        --round-trip) round_trip=$2; shift 2;;
        --pith) pith_arg=$2; shift 2;;
        --images) images=$2; shift 2;;
        --out) out=$2; shift 2;;
        -h|--help) sed -n '2,54p' "$0" | sed 's/^# \{0,1\}//'; exit 0;;
        *) echo "slow-link.sh: unknown argument $1 (see --help)" >&2; exit 64;;
    esac
done
[[ "$sample" =~ ^[0-9]+$ ]] || { echo "slow-link.sh: --sample takes a number" >&2; exit 64; }
ms=${delay%ms}
[[ "$ms" =~ ^[0-9]+$ ]] || { echo "slow-link.sh: --delay is in ms (150ms)" >&2; exit 64; }
case "$round_trip" in auto|relay|chromium) ;; *) echo "slow-link.sh: --round-trip is auto, relay or chromium" >&2; exit 64;; esac
[ "$(id -u)" -eq 0 ] || { echo "slow-link.sh: needs root (ip netns, tc)" >&2; exit 1; }
for tool in ip tc openssl node python3; do
    command -v "$tool" >/dev/null || { echo "slow-link.sh: $tool is needed" >&2; exit 1; }
done
# shellcheck source=scripts/browser-tools.sh
. "$repo/scripts/browser-tools.sh"
browser_packages slow-link.sh
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
mkdir -p "$out"
if [ ! -d "$out/photos" ] && [ -z "$images" ]; then
    (cd "$repo" && cargo build --quiet --example images)
    images=${CARGO_TARGET_DIR:-$repo/target}/debug/examples/images
fi
"$repo/scripts/photos.sh" "$out" "${images:-/nonexistent}"

ns=pith-slow-$$
host_if=psl$$a
client_if=psl$$b
host_ip=10.77.0.1
client_ip=10.77.0.2
run=$(mktemp -d "${TMPDIR:-/tmp}/pith-slow.XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    ip link del "$host_if" 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
    rm -rf "$run"
}
trap cleanup EXIT
# Waits until $1 (a file) has a line matching $2, while process $3 lives (5 s at most).
wait_for_line() {
    for _ in $(seq 1 50); do
        grep -q "$2" "$1" 2>/dev/null && return 0
        kill -0 "$3" 2>/dev/null || { cat "$1" >&2; return 1; }
        sleep 0.1
    done
    echo "slow-link.sh: gave up waiting for '$2' in $1" >&2
    return 1
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

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
origin=$host_ip:8443
proxy=$host_ip:8080
origin_listen=$origin
pith_listen=$proxy
if [ "$round_trip" = auto ] && tc qdisc add dev "$host_if" root netem delay "$delay" rate "$rate" 2>/dev/null; then
    ip netns exec "$ns" tc qdisc add dev "$client_if" root netem delay "$delay" rate "$rate"
    shaping="netem: $rate and $delay each way"
else
    [ "$round_trip" = auto ] && round_trip=relay
    tc qdisc add dev "$host_if" root tbf rate "$rate" burst 3000 latency 2s
    ip netns exec "$ns" tc qdisc add dev "$client_if" root tbf rate "$rate" burst 3000 latency 2s
    if [ "$round_trip" = chromium ]; then
        latency=(--latency "$((2 * ms))")
        shaping="tbf: $rate each way; a $((2 * ms)) ms round trip per request in Chromium (handshakes undelayed)"
    else
        # The origin and pith on loopback, the delay line at their public addresses.
        origin_listen=127.0.0.1:$(free_port)
        pith_listen=127.0.0.1:$(free_port)
        echo_listen=127.0.0.1:$(free_port)
        python3 "$repo/scripts/delay-line.py" echo "$echo_listen" > "$run/echo.log" 2>&1 &
        pids+=($!)
        wait_for_line "$run/echo.log" ready "${pids[-1]}"
        python3 "$repo/scripts/delay-line.py" relay --delay-ms "$ms" --delayed "$client_ip/32" \
            "$origin=$origin_listen" "$proxy=$pith_listen" "$host_ip:7777=$echo_listen" > "$run/relay.log" 2>&1 &
        pids+=($!)
        wait_for_line "$run/relay.log" ready "${pids[-1]}"
        shaping="tbf: $rate each way; the delay line: $ms ms each way, a new connection held one round trip"
        read -r first second < <(ip netns exec "$ns" python3 "$repo/scripts/delay-line.py" probe "$host_ip:7777") || true
        [ -n "${second:-}" ] || { echo "slow-link.sh: the delay line self-check failed" >&2; exit 1; }
        echo "slow-link.sh: self-check through the delay line: request and response on a new connection ${first} ms (expected two round trips, $((4 * ms)) ms), on the same connection ${second} ms (expected $((2 * ms)) ms)" >&2
    fi
fi

# The origin's certificate, for its address.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj "/CN=$host_ip" \
    -addext "subjectAltName=IP:$host_ip" -addext "basicConstraints=critical,CA:FALSE" \
    -keyout "$run/origin-key.pem" -out "$run/origin.pem" 2>/dev/null

# pith: the declutter rules with images compressed, what a gateway for slow links would serve.
cat > "$run/pith.toml" <<TOML
[log]
level = "warn"

[[listener]]
address = "$pith_listen"
profile = "slow"
allow = ["$client_ip/32", "127.0.0.0/8"]

[profiles.slow]
rules = "declutter"
output = "html"
preset = "automatic"
images = "compress"

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
pids+=($!)
for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/${pith_listen%:*}/${pith_listen#*:}") 2>/dev/null && break
    kill -0 "${pids[-1]}" 2>/dev/null || { cat "$run/pith.log" >&2; exit 1; }
    sleep 0.1
done

# Chromium in the namespace: playwright starts this wrapper, which runs the browser there.
cat > "$run/chromium" <<SH
#!/bin/sh
exec ip netns exec $ns /usr/bin/chromium "\$@"
SH
chmod +x "$run/chromium"

IFS=,; pages="${folders[*]}"; unset IFS
echo "slow-link.sh: $shaping; $sample pages of each of: $sets; pith: $pith" >&2
node "$repo/tests/browser/slow-link.mjs" --pages "$pages" --sample "$sample" --chromium "$run/chromium" \
    --photos "$out/photos" --origin "$origin" --origin-listen "$origin_listen" \
    --cert "$run/origin.pem" --key "$run/origin-key.pem" --pith "$proxy" \
    --link "$host_if" --out "$out" "${latency[@]}"
