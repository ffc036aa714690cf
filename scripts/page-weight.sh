#!/usr/bin/env bash
# What a page costs a low-bandwidth gateway's reader: development pages whose images point at
# a loopback origin serving real photographs, loaded in headless Chromium direct, through
# pith's declutter and reader profiles with images = "compress", and through Ziproxy with its
# low-bandwidth settings, all in one run (tests/browser/page-weight.mjs counts the bytes that
# reach the browser and the images shown). Then the transcoders' throughput on the same
# photographs: pith's, ImageMagick's and Ziproxy's (through the proxy, one image at a time).
#
# Usage: scripts/page-weight.sh [--sample N] [--profile NAME] [--pith PATH] [--out DIR]
#   --sample N   the first N pages of ../shared/bench/scrapinghub (default 5)
#   --profile P  the cargo profile pith and the photographs' tool are built with (default dev,
#                whose codecs are optimised, see Cargo.toml; `fast` for throughput figures)
#   --pith PATH  this pith binary instead of building one
#   --out DIR    results (default target/page-weight): weight.json, the photographs
#
# The photographs are scikit-image's sample photographs (scripts/photos.sh says which).
# Installs what it needs when missing: Debian's chromium, ziproxy and imagemagick (apt-get),
# and tests/browser's npm packages. Everything listens on 127.0.0.1; pith and Ziproxy are
# stopped at the end.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
shared=${PITH_SHARED:-$repo/../shared}
sample=5
profile=dev
pith=""
out=$repo/target/page-weight
while [ $# -gt 0 ]; do
    case "$1" in
        --sample) sample=$2; shift 2;;
        --profile) profile=$2; shift 2;;
        --pith) pith=$2; shift 2;;
        --out) out=$2; shift 2;;
        -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0;;
        *) echo "page-weight.sh: unknown argument $1 (see --help)" >&2; exit 64;;
    esac
done
[[ "$sample" =~ ^[0-9]+$ ]] || { echo "page-weight.sh: --sample takes a number" >&2; exit 64; }

missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v ziproxy >/dev/null || missing+=(ziproxy)
[ -x /usr/bin/convert ] || missing+=(imagemagick)
# shellcheck source=scripts/browser-tools.sh
. "$repo/scripts/browser-tools.sh"
[ ${#missing[@]} -eq 0 ] || apt_install page-weight.sh "${missing[@]}"
browser_packages page-weight.sh
pages=$shared/bench/scrapinghub
[ -d "$pages" ] || { echo "page-weight.sh: no development pages at $pages" >&2; exit 1; }

mkdir -p "$out"
target=${CARGO_TARGET_DIR:-$repo/target}
# The photographs, at the widths pages ask for (scripts/photos.sh, shared with slow-link.sh).
(cd "$repo" && cargo build --quiet --profile "$profile" --example images)
bin=$target/$([ "$profile" = dev ] && echo debug || echo "$profile")
"$repo/scripts/photos.sh" "$out" "$bin/examples/images"
originals=$out/originals
photos=$out/photos
files=("$originals"/*)
names=$(cd "$originals" && echo *)

run=$(mktemp -d "${TMPDIR:-/tmp}/pith-weight.XXXXXX")
if [ -z "$pith" ]; then
    (cd "$repo" && cargo build --quiet --profile "$profile" --bin pith)
    # A copy: a shared target directory's binary may be rebuilt from another tree meanwhile.
    cp "$bin/pith" "$run/pith"
    pith=$run/pith
fi
[ -x "$pith" ] || { echo "page-weight.sh: no pith binary at $pith" >&2; exit 1; }
pid=""
zpid=""
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null
    [ -n "$zpid" ] && kill "$zpid" 2>/dev/null
    wait 2>/dev/null
    rm -rf "$run"
}
trap cleanup EXIT
cat > "$run/pith.toml" <<TOML
[[listener]]
address = "127.0.0.1:0"
profile = "gateway"

[[listener]]
address = "127.0.0.1:0"
profile = "gateway-reader"

[cache]
enabled = false

# A gateway's profiles: de-cluttered or reading pages, images compressed. The declutter one
# keeps what its removers take as links at the end of the page, each with its picture, so the
# page loses no image the original showed.
[profiles.gateway]
rules = "declutter"
output = "html"
preset = "automatic"
images = "compress"
retain_links = true

[profiles.gateway-reader]
rules = "reader"
output = "html"
preset = "automatic"
algorithm = "pith"
images = "compress"
TOML
start_pith page-weight.sh "$pith" "$run/pith.toml" "$run/pith.log" 2
declutter=$(listener_address "$run/pith.log" gateway)
reader=$(listener_address "$run/pith.log" gateway-reader)
[ -n "$declutter" ] && [ -n "$reader" ] || { echo "page-weight.sh: pith did not say where it listens:" >&2; cat "$run/pith.log" >&2; exit 1; }

# Ziproxy with the settings its own configuration recommends for slow links: lossy image
# recompression at {30,25,25,20} by image size, HTML, CSS and JS optimised, gzip to the client.
zport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat > "$run/ziproxy.conf" <<CONF
Port = $zport
Address = "127.0.0.1"
ImageQuality = {30,25,25,20}
ProcessJPG = true
ProcessPNG = true
ProcessGIF = true
ProcessHTML = true
ProcessCSS = true
ProcessJS = true
Gzip = true
MaxSize = 8388608
UseContentLength = false
CONF
ziproxy -d -c "$run/ziproxy.conf" -p "$run/ziproxy.pid" > "$run/ziproxy.log" 2>&1 || true
for _ in $(seq 1 50); do [ -s "$run/ziproxy.pid" ] && break; sleep 0.1; done
zpid=$(cat "$run/ziproxy.pid" 2>/dev/null || true)
[ -n "$zpid" ] || { echo "page-weight.sh: ziproxy did not start:" >&2; cat "$run/ziproxy.log" >&2; exit 1; }

echo "== bytes per page: $sample pages of $pages"
node "$repo/tests/browser/page-weight.mjs" --pages "$pages" --photos "$photos" --sample "$sample" --out "$out/weight.json" \
    --mode direct --mode "pith-declutter=$declutter" --mode "pith-reader=$reader" --mode "ziproxy=127.0.0.1:$zport"

echo "== transcoding throughput on the six photographs (one core; built with $profile)"
"$bin/examples/images" rate --rounds 3 "${files[@]}"
mp=$(python3 - "${files[@]}" <<'PY'
import struct, sys, zlib
total = 0
for f in sys.argv[1:]:
    d = open(f, 'rb').read()
    if d[:8] == b'\x89PNG\r\n\x1a\n':
        w, h = struct.unpack('>II', d[16:24])
    else:
        i = 2
        while i < len(d):
            marker, length = d[i + 1], struct.unpack('>H', d[i + 2:i + 4])[0]
            if marker in (0xC0, 0xC1, 0xC2):
                h, w = struct.unpack('>HH', d[i + 5:i + 9])
                break
            i += 2 + length
    total += w * h
print(total / 1e6)
PY
)
start=$(date +%s.%N)
for round in 1 2 3; do
    for f in "${files[@]}"; do
        /usr/bin/convert "$f" -resize "800x>" -quality 60 "$run/out.webp" 2>/dev/null
    done
done
end=$(date +%s.%N)
python3 -c "print(f'ImageMagick convert to WebP q60 <=800 px: {3 * $mp / ($end - $start):.1f} MP/s per core (one process per image)')"
# Ziproxy transcodes as it proxies: the same photographs fetched through it one at a time,
# from a loopback origin (python's http.server), against pith's declutter listener.
(cd "$originals" && exec python3 -m http.server --bind 127.0.0.1 0 > "$run/http.log" 2>&1) &
hpid=$!
for _ in $(seq 1 50); do grep -q 'Serving HTTP' "$run/http.log" 2>/dev/null && break; sleep 0.1; done
hport=$(sed -nE 's/.*port ([0-9]+).*/\1/p' "$run/http.log" | head -1)
for proxy in "ziproxy=127.0.0.1:$zport" "pith=$declutter"; do
    start=$(date +%s.%N)
    bytes=0
    for round in 1 2 3; do
        for n in $names; do
            got=$(curl -s -x "http://${proxy#*=}" -H 'Accept: image/webp,*/*' -o /dev/null -w '%{size_download}' "http://127.0.0.1:$hport/$n")
            bytes=$((bytes + got))
        done
    done
    end=$(date +%s.%N)
    python3 -c "print(f'${proxy%%=*} through the proxy: {3 * $mp / ($end - $start):.1f} MP/s, {$bytes} bytes to the client')"
done
kill "$hpid" 2>/dev/null || true
