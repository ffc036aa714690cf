// What a page costs: development pages whose images point at a loopback origin serving real
// photographs, loaded in headless Chromium direct and through each proxy given, counting the
// bytes that reach the browser and the images it shows.
//
// Run by scripts/page-weight.sh, which makes the photographs (one folder per photograph, one
// JPEG per width), starts pith and Ziproxy and passes their addresses here. This script
// serves the pages and the photographs itself, every image address in a page pointed at a
// photograph of the width it asks for (photo-origin.mjs, shared with slow-link.mjs, says how).
// Nothing leaves the machine: requests to any other host are aborted in the browser.
//
// Per page and mode it records the bytes received (Chromium's encodedDataLength: headers and
// bodies as they arrived from the origin or proxy), the bytes of images among them, and the
// images shown (an <img> with a loaded, non-placeholder picture that takes space). Each page
// is scrolled to its end in bounded steps first, so lazily loaded images count as loaded.
//
// Usage: node page-weight.mjs --pages DIR --photos DIR --mode NAME[=HOST:PORT] [--mode ...]
//                             --out FILE [--sample N] [--chromium PATH]
//   a mode without an address loads the page direct.

import { chromium } from 'playwright-core';
import { createServer } from 'node:http';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { VIEWPORT, photoSet, pointImages, servePhoto } from './photo-origin.mjs';

const PAGE_TIMEOUT_MS = 30_000;
const SCROLL_STEPS = 40;

function parseArgs(argv) {
  const args = { sample: 0, modes: [], chromium: '/usr/bin/chromium' };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--pages') args.pages = next();
    else if (a === '--photos') args.photos = next();
    else if (a === '--mode') {
      const [name, proxy] = next().split('=');
      args.modes.push({ name, proxy });
    } else if (a === '--out') args.out = next();
    else if (a === '--sample') args.sample = Number(next());
    else if (a === '--chromium') args.chromium = next();
    else throw new Error(`unknown argument ${a}`);
  }
  if (!args.pages || !args.photos || !args.out || args.modes.length === 0) throw new Error('--pages, --photos, --mode and --out are required');
  return args;
}

function serve(pages, photosDir, photos) {
  let origin = '';
  const server = createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    const page = pages.get(url.pathname);
    if (page) {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
      res.end(pointImages(readFileSync(page, 'utf8'), `http://${origin}`, photos));
      return;
    }
    if (servePhoto(url.pathname, photosDir, res)) return;
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('not found');
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      origin = `127.0.0.1:${server.address().port}`;
      resolve({ server, origin });
    }),
  );
}

async function load(context, url) {
  const page = await context.newPage();
  page.setDefaultTimeout(PAGE_TIMEOUT_MS);
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  const types = new Map();
  let bytes = 0;
  let imageBytes = 0;
  cdp.on('Network.responseReceived', (e) => types.set(e.requestId, e.type));
  cdp.on('Network.loadingFinished', (e) => {
    bytes += e.encodedDataLength;
    if (types.get(e.requestId) === 'Image') imageBytes += e.encodedDataLength;
  });
  try {
    await page.goto(url, { waitUntil: 'load', timeout: PAGE_TIMEOUT_MS });
    for (let i = 0; i < SCROLL_STEPS; i++) {
      const atEnd = await page.evaluate(() => {
        window.scrollBy(0, window.innerHeight);
        return window.scrollY + window.innerHeight >= document.documentElement.scrollHeight - 2;
      });
      await page.waitForTimeout(50);
      if (atEnd) break;
    }
    await page.waitForLoadState('networkidle', { timeout: 10_000 }).catch(() => {});
    // Which pictures are shown, by the tag each address carries (`for=`), so a mode's missing
    // images can be named against direct's.
    const shownFor = await page.evaluate(() =>
      [...document.images]
        .filter((i) => i.complete && i.naturalWidth > 2 && !i.currentSrc.startsWith('data:') && i.getClientRects().length > 0)
        .map((i) => new URL(i.currentSrc, location.href).searchParams.get('for') || i.currentSrc),
    );
    const shown = shownFor.length;
    const links = await page.evaluate(() => document.querySelectorAll('a.pith-image').length);
    return { bytes, imageBytes, shown, shownFor, placeholders: links };
  } finally {
    await page.close();
  }
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const photos = photoSet(args.photos);
  let names = readdirSync(args.pages).filter((n) => n.endsWith('.html')).sort();
  if (args.sample > 0) names = names.slice(0, args.sample);
  const pages = new Map(names.map((n) => [`/page/${n}`, join(args.pages, n)]));
  const { server, origin } = await serve(pages, args.photos, photos);
  const browser = await chromium.launch({
    executablePath: args.chromium,
    args: ['--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-sandbox'],
  });
  const rows = [];
  try {
    for (const mode of args.modes) {
      for (const name of names) {
        // A fresh context per page: nothing cached from the page before.
        const options = { viewport: VIEWPORT, ...(mode.proxy ? { proxy: { server: `http://${mode.proxy}` } } : {}) };
        const context = await browser.newContext(options);
        await context.route('**/*', (route) => (new URL(route.request().url()).host === origin ? route.continue() : route.abort()));
        try {
          rows.push({ mode: mode.name, page: name, ...(await load(context, `http://${origin}/page/${name}`)) });
        } catch (e) {
          rows.push({ mode: mode.name, page: name, failed: String(e).slice(0, 200) });
        } finally {
          await context.close();
        }
      }
    }
  } finally {
    await browser.close();
    server.close();
  }
  const summary = {};
  for (const mode of args.modes) {
    const mine = rows.filter((r) => r.mode === mode.name && !r.failed);
    const sum = (k) => mine.reduce((a, r) => a + r[k], 0);
    summary[mode.name] = { pages: mine.length, failed: rows.filter((r) => r.mode === mode.name && r.failed).length, bytes: sum('bytes'), imageBytes: sum('imageBytes'), shown: sum('shown'), placeholders: sum('placeholders') };
  }
  writeFileSync(args.out, JSON.stringify({ rows, summary }, null, 1));
  const direct = summary[args.modes[0].name];
  console.log('mode            pages   bytes      image bytes  vs first  images shown');
  for (const [name, s] of Object.entries(summary)) {
    const ratio = direct.bytes ? `${(100 * (1 - s.bytes / direct.bytes)).toFixed(1)}% less` : '';
    console.log(`${name.padEnd(15)} ${String(s.pages).padStart(5)} ${String(s.bytes).padStart(11)} ${String(s.imageBytes).padStart(12)}  ${ratio.padStart(9)}  ${s.shown}${s.placeholders ? ` (+${s.placeholders} placeholder links)` : ''}`);
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
