// The photographs development pages are given in place of their images, shared by the
// page-weight and slow-link benchmarks (scripts/page-weight.sh, scripts/slow-link.sh), so that
// a page weighs as it would on the web and not as its saved HTML alone.
//
// Every image address in a page (src, data-src, data-lazy-src, data-original, srcset,
// data-srcset, in <img> and <source>) is pointed at the benchmark's own origin: the same
// photograph for the same address, at the width the page asks for (the `w` descriptor, else
// the image's width attribute, else a width in the address such as `_640x360` or `w=640`,
// else 1200), served from the nearest width made at or above it. The photographs are made by
// `cargo run --example images -- sizes` (one folder per photograph, one JPEG per width).

import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** The viewport both benchmarks load pages in: a phone's. */
export const VIEWPORT = { width: 412, height: 915 };

/** The photographs in `dir` and the widths each was made at. */
export function photoSet(dir) {
  const photos = readdirSync(dir).sort().map((name) => ({
    name,
    widths: readdirSync(join(dir, name)).map((f) => Number(f.replace('.jpg', ''))).filter((w) => w > 0).sort((a, b) => a - b),
  }));
  if (photos.length === 0) throw new Error(`no photographs in ${dir}`);
  return photos;
}

function widthInAddress(url) {
  const m = url.match(/[_\-/x=](\d{3,4})(?:x\d{2,4})?(?:[._&/?]|$)/) || url.match(/(\d{3,4})x\d{2,4}/);
  const w = m ? Number(m[1]) : 0;
  return w >= 50 && w <= 4000 ? w : 0;
}

// A srcset's [url, descriptor] pairs, read as the HTML standard reads them: a URL runs to
// whitespace (trailing commas end it), its descriptors to the next comma.
function candidates(list) {
  const out = [];
  let rest = list;
  for (let guard = 0; guard < 1000; guard++) {
    rest = rest.replace(/^[\s,]+/, '');
    if (!rest) break;
    let url = rest.match(/^\S+/)[0];
    rest = rest.slice(url.length);
    let descriptor = '';
    if (url.endsWith(',')) {
      url = url.replace(/,+$/, '');
    } else {
      const comma = rest.indexOf(',');
      descriptor = (comma < 0 ? rest : rest.slice(0, comma)).trim();
      rest = comma < 0 ? '' : rest.slice(comma + 1);
    }
    out.push([url, descriptor]);
  }
  return out;
}

/** `html` with every image address pointed at the origin `base` (`http://host:port`, no slash at the end). */
export function pointImages(html, base, photos) {
  // `element` tags every address of one <img> or <source> alike, so the picture a page shows
  // is known whichever candidate a browser or a proxy chose.
  const addressOf = (url, width, element) => {
    const trimmed = url.trim();
    if (!trimmed || trimmed.startsWith('data:')) return url;
    const hash = createHash('sha1').update(trimmed).digest();
    const photo = photos[hash[0] % photos.length];
    const want = width || widthInAddress(trimmed) || 1200;
    const w = photo.widths.find((x) => x >= want) ?? photo.widths[photo.widths.length - 1];
    return `${base}/photo/${photo.name}/${w}.jpg?for=${element}`;
  };
  return html.replace(/<(img|source)\b[^>]*>/gi, (tag) => {
    const element = createHash('sha1').update(tag).digest('hex').slice(0, 8);
    const address = (url, width) => addressOf(url, width, element);
    const declared = Number((tag.match(/\swidth\s*=\s*["']?(\d+)/i) || [])[1] || 0);
    return tag
      .replace(/(\s(?:src|data-src|data-lazy-src|data-original)\s*=\s*)(["'])(.*?)\2/gi, (_, pre, q, url) => `${pre}${q}${address(url, declared)}${q}`)
      .replace(/(\s(?:srcset|data-srcset)\s*=\s*)(["'])(.*?)\2/gi, (_, pre, q, list) => {
        const items = candidates(list).map(([url, descriptor]) => {
          const w = descriptor.endsWith('w') ? Number(descriptor.slice(0, -1)) : declared * (Number(descriptor.slice(0, -1)) || 1);
          return `${address(url, w)}${descriptor ? ' ' + descriptor : ''}`;
        });
        return `${pre}${q}${items.join(', ')}${q}`;
      });
  });
}

/**
 * Answers a request for a photograph (`/photo/NAME/WIDTH.jpg`) from `photosDir`, as a site
 * serves JPEGs (no compression on top, not to be stored). Returns false, having written
 * nothing, when the path names no photograph made.
 */
export function servePhoto(pathname, photosDir, res) {
  const m = pathname.match(/^\/photo\/([\w.-]+)\/(\d+)\.jpg$/);
  const file = m && join(photosDir, m[1], `${m[2]}.jpg`);
  if (!file || !existsSync(file)) return false;
  res.writeHead(200, { 'content-type': 'image/jpeg', 'cache-control': 'no-store' });
  res.end(readFileSync(file));
  return true;
}
