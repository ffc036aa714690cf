// Development pages over a slow link, three ways: straight from the origin over HTTPS,
// through pith with HTTPS interception, and through pith's URL gateway. For each load: the
// time until the page shows readable text (at least MIN_TEXT characters of body text, or all of
// a shorter page's once it has loaded) and the
// bytes that crossed the link to the client. Run by scripts/slow-link.sh, which builds the
// link (a network namespace behind a shaped veth pair), the certificates and pith, and passes
// their names here.
//
// This script serves the pages itself over HTTPS (gzip when asked, as origins do) on the
// host's end of the link, and drives Debian's Chromium inside the namespace through a wrapper
// (`--chromium`). Requests to any other host are aborted in the browser, in every way alike.
// Each load is bounded (LOAD_TIMEOUT_MS); a load that never shows text counts as that bound.

import { createServer } from 'node:https';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { chromium } from 'playwright-core';

const MIN_TEXT = 200;
const LOAD_TIMEOUT_MS = 60_000;

function parseArgs(argv) {
  const args = {};
  for (let i = 0; i < argv.length; i += 2) args[argv[i].replace(/^--/, '')] = argv[i + 1];
  for (const key of ['pages', 'sample', 'chromium', 'origin', 'cert', 'key', 'pith', 'link', 'out']) {
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

function serve(pages, host, port, cert, key) {
  const files = new Map(pages.map((p) => [p.path, readFileSync(p.file)]));
  const server = createServer({ cert: readFileSync(cert), key: readFileSync(key) }, (req, res) => {
    const body = files.get(req.url);
    if (!body) {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found');
      return;
    }
    const gzip = /\bgzip\b/.test(req.headers['accept-encoding'] || '');
    const headers = { 'content-type': 'text/html', 'cache-control': 'no-store' };
    if (gzip) headers['content-encoding'] = 'gzip';
    res.writeHead(200, headers);
    res.end(gzip ? gzipSync(body) : body);
  });
  return new Promise((resolve) => server.listen(port, host, () => resolve(server)));
}

/** Bytes the host has sent into the link so far (to the client). */
function sentBytes(link) {
  return Number(readFileSync(`/sys/class/net/${link}/statistics/tx_bytes`, 'utf8'));
}

async function load(browser, proxy, url, allowedHosts, link, latency) {
  const context = await browser.newContext({ ignoreHTTPSErrors: true, ...(proxy ? { proxy: { server: proxy } } : {}) });
  await context.route('**/*', (route) => {
    const u = new URL(route.request().url());
    return allowedHosts.has(u.host) ? route.continue() : route.abort();
  });
  const page = await context.newPage();
  if (latency) {
    // The round trip where the kernel cannot delay packets (see scripts/slow-link.sh).
    const cdp = await context.newCDPSession(page);
    await cdp.send('Network.enable');
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency, downloadThroughput: -1, uploadThroughput: -1 });
  }
  const before = sentBytes(link);
  const start = performance.now();
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
    await page.waitForLoadState('load', { timeout: LOAD_TIMEOUT_MS });
  } catch (e) {
    error = String(e.message || e).split('\n')[0];
  }
  const loaded = performance.now() - start;
  await context.close();
  // Let the last packets (the connection's close) cross the link before counting.
  await new Promise((r) => setTimeout(r, 700));
  return { readable_ms: readable === null ? null : Math.round(readable), load_ms: Math.round(loaded), bytes: sentBytes(link) - before, error };
}

function median(values) {
  const v = values.filter((x) => x !== null).sort((a, b) => a - b);
  if (v.length === 0) return null;
  return v.length % 2 ? v[(v.length - 1) / 2] : Math.round((v[v.length / 2 - 1] + v[v.length / 2]) / 2);
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const pages = pagesOf(args.pages, Number(args.sample));
  const [originHost, originPort] = args.origin.split(':');
  const server = await serve(pages, originHost, Number(originPort), args.cert, args.key);
  const browser = await chromium.launch({ executablePath: args.chromium, args: ['--no-sandbox', '--disable-gpu'] });
  const allowed = new Set([args.origin, args.pith]);
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
      row[way] = await load(browser, proxy, url, allowed, args.link, args.latency ? Number(args.latency) : 0);
    }
    rows.push(row);
    console.log(JSON.stringify(row));
  }
  await browser.close();
  server.close();
  const summary = { pages: rows.length, min_text_chars: MIN_TEXT, emulated_round_trip_ms: args.latency ? Number(args.latency) : null };
  for (const way of Object.keys(ways)) {
    summary[way] = {
      median_readable_ms: median(rows.map((r) => r[way].readable_ms ?? LOAD_TIMEOUT_MS)),
      median_bytes: median(rows.map((r) => r[way].bytes)),
      never_readable: rows.filter((r) => r[way].readable_ms === null).length,
    };
  }
  const ratio = (way) => (summary[way].median_readable_ms ? +(summary.direct.median_readable_ms / summary[way].median_readable_ms).toFixed(2) : null);
  summary.readable_sooner_than_direct = { pith: ratio('pith'), gateway: ratio('gateway') };
  summary.per_page_ratio_pith = rows.map((r) => (r.pith.readable_ms ? +((r.direct.readable_ms ?? LOAD_TIMEOUT_MS) / r.pith.readable_ms).toFixed(2) : null));
  writeFileSync(join(args.out, 'slow-link.jsonl'), rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
  writeFileSync(join(args.out, 'summary.json'), JSON.stringify(summary, null, 2) + '\n');
  console.log(JSON.stringify(summary, null, 2));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
