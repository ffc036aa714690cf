#!/usr/bin/env bash
# Refreshes the shipped ad and tracker lists, filters/lists/easylist.txt and easyprivacy.txt.
#
# The lists come from Debian's webext-ublock-origin-firefox package, which carries EasyList and
# EasyPrivacy as third-party assets: fetching a Debian package works wherever apt does, and its
# version pins exactly which lists we ship. The script writes the two lists, a README naming the
# package, version and date, and a LICENSE with the lists' licence terms. Commit all four.
#
# Usage: scripts/fetch-filter-lists.sh        (needs apt-get and dpkg-deb; run from anywhere)
set -euo pipefail

package=webext-ublock-origin-firefox
repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out_dir=$repo_root/filters/lists

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# apt's download sandbox user must be able to write here.
chmod 0777 "$work"

cd "$work"
if ! apt-get download "$package" >"$work/apt.log" 2>&1; then
    cat "$work/apt.log" >&2
    echo "apt-get download $package failed (try 'apt-get update' first)" >&2
    exit 1
fi
deb=$(ls "$work"/"$package"_*.deb)
version=$(dpkg-deb -f "$deb" Version)
dpkg-deb -x "$deb" "$work/root"

find_one() {
    local found
    found=$(find "$work/root" -path "*/assets/thirdparties/*" -name "$1" -type f | head -n 1)
    if [ -z "$found" ]; then
        echo "$1 not found in $package $version" >&2
        exit 1
    fi
    printf '%s\n' "$found"
}
easylist=$(find_one easylist.txt)
easyprivacy=$(find_one easyprivacy.txt)
copyright=$work/root/usr/share/doc/$package/copyright

mkdir -p "$out_dir"
cp "$easylist" "$out_dir/easylist.txt"
cp "$easyprivacy" "$out_dir/easyprivacy.txt"

# LICENSE: the lists' copyright line and licence as Debian records them, the full text of
# CC BY-SA 3.0 from the same copyright file, and the GNU GPL version 3 from the system.
{
    echo "EasyList and EasyPrivacy (easylist.txt, easyprivacy.txt in this folder)"
    echo
    echo "Homepage: https://easylist.to/"
    echo "Licence:  https://easylist.to/pages/licence.html"
    echo
    echo "Copyright (C) The EasyList authors (https://easylist.to/)"
    echo
    echo "The lists are dual licensed: you may use, modify and redistribute them under the terms"
    echo "of either the GNU General Public License, version 3 or (at your option) any later"
    echo "version, or the Creative Commons Attribution-ShareAlike 3.0 Unported licence or (at"
    echo "your option) any later version. Both texts follow."
    echo
    echo "They are shipped unmodified, as packaged in Debian's $package $version."
    echo
    echo "==============================================================================="
    echo "Creative Commons Attribution-ShareAlike 3.0 Unported"
    echo "==============================================================================="
    echo
    # The licence paragraph of the copyright file (RFC 822 style: one leading space, "." or
    # "․" for a blank line) ends at the next "License:" or "Files:" stanza.
    awk '/^License: CC-BY-SA-3.0\+?$/ { inside = 1; next }
         inside && /^[^ ]/ { exit }
         inside { sub(/^ /, ""); if ($0 == "." || $0 == "․") $0 = ""; print }' "$copyright"
    echo
    echo "==============================================================================="
    echo "GNU General Public License, version 3"
    echo "==============================================================================="
    echo
    if [ -f /usr/share/common-licenses/GPL-3 ]; then
        cat /usr/share/common-licenses/GPL-3
    else
        echo "See https://www.gnu.org/licenses/gpl-3.0.txt"
    fi
} >"$out_dir/LICENSE"

count_rules() { grep -cv -e '^!' -e '^\[' -e '^[[:space:]]*$' "$1" || true; }

cat >"$out_dir/README.md" <<EOF
# Ad and tracker lists

\`easylist.txt\` (EasyList: adverts) and \`easyprivacy.txt\` (EasyPrivacy: trackers) are
EasyList-format filter lists: network rules (\`||ads.example^\`, exceptions \`@@...\`) and
element-hiding rules (\`##.ad-banner\`, \`example.com##.promo\`, exceptions \`#@#\`). pith
embeds both in the binary; \`src/html/ads.rs\` parses them once at start-up and the ad remover
uses them to drop elements whose link or source is an ad or tracker, and elements the lists
hide.

| list | lines | rule lines |
|---|---|---|
| easylist.txt | $(wc -l <"$out_dir/easylist.txt") | $(count_rules "$out_dir/easylist.txt") |
| easyprivacy.txt | $(wc -l <"$out_dir/easyprivacy.txt") | $(count_rules "$out_dir/easyprivacy.txt") |

## Origin

Taken unmodified from the Debian package \`$package\`, version \`$version\`
(uBlock Origin ships them under \`assets/thirdparties/easylist/\`), on $(date -u +%Y-%m-%d).
The lists' own headers carry \`%timestamp%\` placeholders: the package version is what dates them.

To refresh them, run \`scripts/fetch-filter-lists.sh\` and commit the four files of this folder.

## Licence

EasyList and EasyPrivacy are by the EasyList authors (https://easylist.to/) and are dual
licensed under the GNU GPL version 3 or later, or Creative Commons Attribution-ShareAlike 3.0 or
later (https://easylist.to/pages/licence.html). \`LICENSE\` beside this file holds the notice and
both licence texts. They are data that pith reads, not part of pith's source code.
EOF

echo "wrote $out_dir: easylist.txt, easyprivacy.txt, README.md, LICENSE from $package $version"
