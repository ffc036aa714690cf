# Sourced by scripts/browser.sh, scripts/page-weight.sh and scripts/slow-link.sh: what their
# headless-Chromium runs need, written once. Each function takes the calling script's name
# for its messages.

# apt_install WHO PACKAGE...: Debian packages with apt-get (through sudo when not root).
apt_install() {
    local who=$1 sudo=()
    shift
    echo "$who: installing $* with apt-get" >&2
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# browser_packages WHO: Debian's chromium (installed when missing), node, and the npm packages
# tests/browser pins (installed with `npm ci` when missing).
browser_packages() {
    local who=$1 modules=$repo/tests/browser/node_modules
    [ -x /usr/bin/chromium ] || apt_install "$who" chromium
    command -v node >/dev/null || { echo "$who: node is needed (Node.js 18 or later)" >&2; exit 1; }
    if [ ! -d "$modules/playwright-core" ] || [ ! -d "$modules/axe-core" ]; then
        (cd "$repo/tests/browser" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
    fi
}

# start_pith WHO BINARY CONFIG LOG LISTENERS: `pith serve` in the background (its process id
# in $pid), waiting until its log says LISTENERS listeners are up (at most 10 s); its log is
# shown and the script ends if it stops first.
start_pith() {
    local who=$1 binary=$2 config=$3 log=$4 listeners=$5
    "$binary" serve --config "$config" > "$log" 2>&1 &
    pid=$!
    for _ in $(seq 1 100); do
        [ "$(grep -c 'listening' "$log" || true)" -ge "$listeners" ] && return 0
        kill -0 "$pid" 2>/dev/null || { echo "$who: pith stopped:" >&2; cat "$log" >&2; exit 1; }
        sleep 0.1
    done
    echo "$who: pith did not start $listeners listeners in 10 s:" >&2
    cat "$log" >&2
    exit 1
}

# listener_address LOG PROFILE: the address of the listener serving PROFILE, from pith's log.
listener_address() {
    grep 'listening' "$1" | grep -E "profile=$2( |$)" | sed -E 's/.*address=([0-9.:]+).*/\1/' | head -1
}
