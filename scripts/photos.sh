#!/usr/bin/env bash
# The photographs the page-weight and slow-link benchmarks give development pages in place of
# their images (tests/browser/photo-origin.mjs points the pages at them): DIR/originals, the
# colour photographs shipped in scikit-image's wheel (fetched from PyPI with pip when
# missing): astronaut (NASA, public domain), chelsea (CC0, Stefan van der Walt), coffee (CC0,
# Rachel Michetti), rocket (SpaceX, public domain), hubble_deep_field (NASA, public domain)
# and retina (CC0), as scikit-image's data module documents them; and DIR/photos, each at the
# widths pages ask for (`images sizes`, examples/images.rs). Either folder is made only when
# missing.
#
# Usage: scripts/photos.sh DIR IMAGES   (IMAGES: the built `images` example)
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: scripts/photos.sh DIR IMAGES" >&2; exit 64; }
dir=$1
images=$2
names="astronaut.png chelsea.png coffee.png rocket.jpg hubble_deep_field.jpg retina.jpg"
originals=$dir/originals
if [ ! -d "$originals" ]; then
    wheel=$(mktemp -d)
    pip download --quiet --no-deps --only-binary=:all: --dest "$wheel" scikit-image
    mkdir -p "$originals.part"
    for n in $names; do unzip -q -j -o "$wheel"/scikit_image-*.whl "skimage/data/$n" -d "$originals.part"; done
    rm -rf "$wheel"
    mv "$originals.part" "$originals"
fi
if [ ! -d "$dir/photos" ]; then
    [ -x "$images" ] || { echo "photos.sh: no images example at $images" >&2; exit 1; }
    files=()
    for n in $names; do files+=("$originals/$n"); done
    "$images" sizes "$dir/photos.part" "${files[@]}" >/dev/null
    mv "$dir/photos.part" "$dir/photos"
fi
