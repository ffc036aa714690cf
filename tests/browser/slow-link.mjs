// Development pages over a slow link, three ways: straight from the origin over HTTPS,
// through pith with HTTPS interception, and through pith's URL gateway. For each load: the
// time until the page shows readable text (at least MIN_TEXT characters of body text, or all of
// a shorter page's once it has loaded), the time until its load event, and the bytes that
// crossed the link to the client. Run by scripts/slow-link.sh, which builds the link (a
// network namespace behind a shaped veth pair), the certificates, the photographs and pith,
// and passes their names here.
//
// This script serves the pages itself over HTTPS (gzip when asked, as origins do) with every
// image address pointed at a photograph of the width it asks for, served by the same origin
// (photo-origin.mjs, shared with page-weight.mjs): a page weighs what its text and pictures
// weigh. Its stylesheets, scripts and fonts are not served: requests to any other host are
// aborted in the browser, in every way alike, so a direct load is still lighter than on the
// web. Debian's Chromium runs inside the namespace through a wrapper (`--chromium`), at a
// phone's viewport, told to ignore certificate errors in its network stack
// (`--ignore-certificate-errors`), as a device that trusts the origin's certificate and pith's
// CA does: accepted per request instead (Playwright's ignoreHTTPSErrors), each error costs a
// new connection and handshake, two round trips direct and three through pith. Each load is bounded (LOAD_TIMEOUT_MS): a load that never shows text, or
// never fires its load event, counts as that bound in the medians.
//
// Usage: node slow-link.mjs --pages DIR[,DIR] --sample N --chromium PATH --photos DIR
//          --origin HOST:PORT [--origin-listen HOST:PORT] --cert PEM --key PEM
//          --pith HOST:PORT --link IFACE --out DIR [--latency MS]
//   --origin is where the client reaches the origin, --origin-listen where it listens (a
//   delay line between them); --latency adds Chromium's per-request latency (the old way).

import { createServer } from 'node:https';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { chromium } from 'playwright-core';
import { VIEWPORT, photoSet, pointImages, servePhoto } from './photo-origin.mjs';

const MIN_TEXT = 200;
const LOAD_TIMEOUT_MS = 60_000;

function parseArgs(argv) {
  const args = {};
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith('--') || argv[i + 1] === undefined) throw new Error(`slow-link.mjs: ${argv[i]} needs a value`);
    args[argv[i].slice(2)] = argv[i + 1];
  }
  for (const key of ['pages', 'sample', 'chromium', 'photos', 'origin', 'cert', 'key', 'pith', 'link', 'out']) {
    if (args[key] === undefined) throw new Error(`slow-link.mjs: --${key} is required`);
  }
  return args;
}

function pagesOf(folders, sample) {
  const pages = [];
  for (const dir of folders.split(',')) {
    const names = readdirSync(dir).filter((n) => n.endsWith('.html')).sort().slice(0, sample);
    for (const name of names) pages.push({ path: `/${basename(dir)}/${name}`, file: join(dir, name) });
  }
  return pages;
}

function serve(pages, origin, listen, photosDir, cert, key) {
  const photos = photoSet(photosDir);
  const files = new Map(pages.map((p) => [p.path, pointImages(readFileSync(p.file, 'utf8'), `https://${origin}`, photos)]));
  const server = createServer({ cert: readFileSync(cert), key: readFileSync(key) }, (req, res) => {
    const path = new URL(req.url, 'https://x').pathname;
    const body = files.get(path);
    if (!body) {
      if (servePhoto(path, photosDir, res)) return;
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found');
      return;
    }
    const gzip = /\bgzip\b/.test(req.headers['accept-encoding'] || '');
    const headers = { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' };
    if (gzip) headers['content-encoding'] = 'gzip';
    res.writeHead(200, headers);
    res.end(gzip ? gzipSync(body) : body);
  });
  const [host, port] = listen.split(':');
  return new Promise((resolve) => server.listen(Number(port), host, () => resolve(server)));
}

/** Bytes the host has sent into the link so far (to the client). */
function sentBytes(link) {
  return Number(readFileSync(`/sys/class/net/${link}/statistics/tx_bytes`, 'utf8'));
}

async function load(browser, proxy, url, allowedHosts, link, latency) {
  const context = await browser.newContext({ viewport: VIEWPORT, ignoreHTTPSErrors: true, ...(proxy ? { proxy: { server: proxy } } : {}) });
  await context.route('**/*', (route) => {
    const u = new URL(route.request().url());
    return allowedHosts.has(u.host) ? route.continue() : route.abort();
  });
  const page = await context.newPage();
  if (latency) {
    // The old round trip: Chromium's own, added to each request (see scripts/slow-link.sh).
    const cdp = await context.newCDPSession(page);
    await cdp.send('Network.enable');
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency, downloadThroughput: -1, uploadThroughput: -1 });
  }
  const before = sentBytes(link);
  const start = performance.now();
  let loaded = null;
  let readable = null;
  let error = null;
  try {
    await page.goto(url, { waitUntil: 'commit', timeout: LOAD_TIMEOUT_MS });
    // Readable: MIN_TEXT characters shown, or, for a page with less, all of it once loaded.
    await page.waitForFunction((min) => {
      const shown = (document.body?.innerText || '').replace(/\s+/g, ' ').trim().length;
      return shown >= min || (shown > 0 && document.readyState === 'complete');
    }, MIN_TEXT, {
      polling: 25,
      timeout: LOAD_TIMEOUT_MS,
    });
    readable = performance.now() - start;
    await page.waitForLoadState('load', { timeout: Math.max(1, LOAD_TIMEOUT_MS - readable) });
    loaded = performance.now() - start;
  } catch (e) {
    error = String(e.message || e).split('\n')[0];
  }
  await context.close();
  // Let the last packets (the connection's close) cross the link before counting.
  await new Promise((r) => setTimeout(r, 700));
  return {
    readable_ms: readable === null ? null : Math.round(readable),
    load_ms: loaded === null ? null : Math.round(loaded),
    bytes: sentBytes(link) - before,
    error,
  };
}

function median(values) {
  const v = values.filter((x) => x !== null).sort((a, b) => a - b);
  if (v.length === 0) return null;
  return v.length % 2 ? v[(v.length - 1) / 2] : Math.round((v[v.length / 2 - 1] + v[v.length / 2]) / 2);
}

const ratio = (a, b) => (a && b ? +(a / b).toFixed(2) : null);

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const pages = pagesOf(args.pages, Number(args.sample));
  const server = await serve(pages, args.origin, args['origin-listen'] || args.origin, args.photos, args.cert, args.key);
  const browser = await chromium.launch({ executablePath: args.chromium, args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--ignore-certificate-errors'] });
  const allowed = new Set([args.origin, args.pith]);
  const latency = args.latency ? Number(args.latency) : 0;
  const ways = {
    direct: (path) => ({ proxy: null, url: `https://${args.origin}${path}` }),
    pith: (path) => ({ proxy: `http://${args.pith}`, url: `https://${args.origin}${path}` }),
    gateway: (path) => ({ proxy: null, url: `http://${args.pith}/read?url=${encodeURIComponent(`https://${args.origin}${path}`)}` }),
  };
  const rows = [];
  for (const p of pages) {
    const row = { page: p.path };
    for (const [way, of] of Object.entries(ways)) {
      const { proxy, url } = of(p.path);
      row[way] = await load(browser, proxy, url, allowed, args.link, latency);
    }
    rows.push(row);
    console.log(JSON.stringify(row));
  }
  await browser.close();
  server.close();
  const bounded = (x) => x ?? LOAD_TIMEOUT_MS;
  const summary = { pages: rows.length, min_text_chars: MIN_TEXT, load_timeout_ms: LOAD_TIMEOUT_MS, emulated_round_trip_ms: latency || null };
  for (const way of Object.keys(ways)) {
    summary[way] = {
      median_readable_ms: median(rows.map((r) => bounded(r[way].readable_ms))),
      median_load_ms: median(rows.map((r) => bounded(r[way].load_ms))),
      median_bytes: median(rows.map((r) => r[way].bytes)),
      never_readable: rows.filter((r) => r[way].readable_ms === null).length,
      never_loaded: rows.filter((r) => r[way].load_ms === null).length,
    };
  }
  for (const way of ['pith', 'gateway']) {
    const perPage = rows.map((r) => ratio(bounded(r.direct.readable_ms), bounded(r[way].readable_ms)));
    summary[`${way}_vs_direct`] = {
      readable_sooner: ratio(summary.direct.median_readable_ms, summary[way].median_readable_ms),
      loaded_sooner: ratio(summary.direct.median_load_ms, summary[way].median_load_ms),
      fewer_bytes: ratio(summary.direct.median_bytes, summary[way].median_bytes),
      median_per_page_readable_sooner: median(perPage.map((x) => x && Math.round(x * 100))) / 100,
      per_page_readable_sooner: perPage,
      per_page_loaded_sooner: rows.map((r) => ratio(bounded(r.direct.load_ms), bounded(r[way].load_ms))),
      pages_5x_sooner: perPage.filter((x) => x >= 5).length,
    };
  }
  writeFileSync(join(args.out, 'slow-link.jsonl'), rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
  writeFileSync(join(args.out, 'summary.json'), JSON.stringify(summary, null, 2) + '\n');
  console.log(JSON.stringify(summary, null, 2));
  // A table: per page, readable / load in ms and kilobytes, each way.
  const cell = (w) => `${String(w.readable_ms ?? '-').padStart(6)} ${String(w.load_ms ?? '-').padStart(6)} ${(w.bytes / 1000).toFixed(1).padStart(7)}`;
  const head = `${'text'.padStart(6)} ${'load'.padStart(6)} ${'KB'.padStart(7)}`;
  console.log(`${''.padEnd(34)} ${'direct'.padEnd(21)}  ${'pith'.padEnd(21)}  gateway (ms, ms, KB)`);
  console.log(`${'page'.padEnd(34)} ${head}  ${head}  ${head}`);
  for (const r of rows) console.log(`${r.page.slice(-34).padEnd(34)} ${cell(r.direct)}  ${cell(r.pith)}  ${cell(r.gateway)}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
