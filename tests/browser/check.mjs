// Pages as a person gets them: development pages loaded through pith in headless Chromium,
// at phone width (412 px) and desktop width (1280 px), and audited with axe-core.
//
// Run by scripts/browser.sh, which builds pith, starts it with one listener per profile and
// passes their addresses here. This script serves the pages itself (a loopback origin), loads
// each through each listener, and writes one JSON line per page and profile, then a summary.
// Nothing leaves the machine: every request the page makes to any other host is aborted.
//
// Per page and profile it records:
//   - title: whether the page shows its headline as a heading: a heading (h1-h6) whose text
//     is the original page's headline, or carries the page's title as og:title or <title>
//     state it (site names after " | ", " - ", " – ", " — " or " :: " cut off). The headline
//     is read from the original page, loaded straight from the origin with scripts off: its
//     shown <h1> sharing most words with the title, else its first shown <h1>. A page with
//     neither a title nor an <h1> counts as neither;
//   - h1: the number of <h1> elements;
//   - width: the document's scroll width at 412 px (wider means sideways scrolling on a phone);
//   - lang: the <html lang> attribute;
//   - axe: the violations axe-core finds (rule id and impact), light colour scheme, 412 px;
//   - headingSkips: headings that go down more than one level (h1 straight to h3).
// A screenshot of the first screen at each width goes to OUT/shots/ when --shots is given.
//
// Usage: node check.mjs --pages DIR[,DIR...] --proxy PROFILE=HOST:PORT[,...] --out DIR
//                       [--sample N] [--shots] [--chromium PATH] [--gate FILE]
//   --sample N   the first N pages of each folder in name order (default: all)
//   --gate FILE  a JSON file of ceilings per profile, e.g. {"reader": {"noTitle": 0}}; the
//                script exits 1 when a count in the summary is over its ceiling.

import { chromium } from 'playwright-core';
import { createServer } from 'node:http';
import { readFileSync, readdirSync, mkdirSync, writeFileSync, appendFileSync, existsSync } from 'node:fs';
import { join, basename } from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const AXE_SOURCE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
const PHONE = { width: 412, height: 915 };
const DESKTOP = { width: 1280, height: 800 };
const PAGE_TIMEOUT_MS = 30_000;

function parseArgs(argv) {
  const args = { sample: 0, shots: false, chromium: '/usr/bin/chromium', gate: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--pages') args.pages = next().split(',');
    else if (a === '--proxy') args.proxies = next().split(',').map((p) => p.split('='));
    else if (a === '--out') args.out = next();
    else if (a === '--sample') args.sample = Number(next());
    else if (a === '--shots') args.shots = true;
    else if (a === '--chromium') args.chromium = next();
    else if (a === '--gate') args.gate = next();
    else throw new Error(`unknown argument ${a}`);
  }
  if (!args.pages || !args.proxies || !args.out) throw new Error('--pages, --proxy and --out are required');
  return args;
}

// The page's own statement of its title: og:title, then <title>, each also without a site name.
function titleCandidates(html) {
  const found = [];
  const decode = (s) =>
    s
      .replace(/&#(\d+);/g, (_, n) => String.fromCodePoint(Number(n)))
      .replace(/&#x([0-9a-f]+);/gi, (_, n) => String.fromCodePoint(parseInt(n, 16)))
      .replace(/&quot;/g, '"')
      .replace(/&apos;|&#39;/g, "'")
      .replace(/&lt;/g, '<')
      .replace(/&gt;/g, '>')
      .replace(/&nbsp;/g, ' ')
      .replace(/&amp;/g, '&');
  const og = html.match(/<meta[^>]+property=["']og:title["'][^>]*>/i);
  if (og) {
    const c = og[0].match(/content=("([^"]*)"|'([^']*)')/i);
    if (c) found.push(decode(c[2] ?? c[3]));
  }
  const t = html.match(/<title[^>]*>([\s\S]*?)<\/title>/i);
  if (t) found.push(decode(t[1]));
  const out = new Set();
  for (const f of found) {
    const whole = normalise(f);
    if (whole) out.add(whole);
    for (const part of f.split(/\s+(?:\||-|–|—|::|·)\s+/)) {
      const p = normalise(part);
      if (p.length >= 12) out.add(p);
    }
  }
  return [...out];
}

function normalise(s) {
  return s.toLowerCase().normalize('NFKC').replace(/[\u2018\u2019\u201c\u201d"'`´]/g, '').replace(/\s+/g, ' ').trim();
}

// True when a heading's text is the title, or holds it, or is most of it.
function carriesTitle(heading, titles) {
  const h = normalise(heading);
  if (h.length < 4) return false;
  return titles.some((t) => h === t || (t.length >= 12 && h.includes(t)) || (h.length >= 12 && t.includes(h) && h.length * 2 >= t.length));
}

// The development pages by URL path, served by the loopback origin.
const files = new Map();

// A page's bytes and the Content-Type the originals are shown with: with a charset when they
// are UTF-8 throughout, as pith reads them (a page without a charset in its header or early
// <meta> is windows-1252 to Chromium, and its headline would be compared as mojibake).
function originalResponse(path) {
  const body = readFileSync(path);
  let utf8 = true;
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    utf8 = false;
  }
  return { body, contentType: utf8 ? 'text/html; charset=utf-8' : 'text/html' };
}

function serve(folders) {
  for (const dir of folders) {
    const set = basename(dir);
    for (const name of readdirSync(dir).filter((n) => n.endsWith('.html')).sort()) {
      files.set(`/${set}/${name}`, join(dir, name));
    }
  }
  const server = createServer((req, res) => {
    const path = files.get(req.url);
    if (!path) {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found');
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html', 'cache-control': 'no-store' });
    res.end(readFileSync(path));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

// The original page's headline (see "title" in the header), or null when it has no shown <h1>.
async function headline(page, url, titles) {
  await page.goto(url, { waitUntil: 'domcontentloaded', timeout: PAGE_TIMEOUT_MS });
  const h1s = await page.evaluate(() =>
    [...document.querySelectorAll('h1')]
      .filter((h) => h.getClientRects().length > 0)
      .map((h) => h.textContent.trim().replace(/\s+/g, ' '))
      .filter((t) => t.length > 0),
  );
  if (h1s.length === 0) return null;
  const words = (s) => new Set(normalise(s).split(/[^\p{L}\p{N}]+/u).filter((w) => w.length > 0));
  const titleWords = new Set(titles.flatMap((t) => [...words(t)]));
  let best = h1s[0];
  let bestShared = 0;
  for (const h of h1s) {
    const shared = [...words(h)].filter((w) => titleWords.has(w)).length;
    if (shared > bestShared) [best, bestShared] = [h, shared];
  }
  return normalise(best);
}

async function audit(page) {
  await page.addScriptTag({ content: AXE_SOURCE });
  const result = await page.evaluate(async () => {
    // Rules about the page's content that pith does not write (e.g. a site's own link
    // colours) are reported like the rest; nothing is disabled.
    const r = await window.axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length }));
  });
  return result;
}

async function facts(page) {
  return page.evaluate(() => {
    const headings = [...document.querySelectorAll('h1,h2,h3,h4,h5,h6')].filter((h) => h.textContent.trim());
    let skips = 0;
    let last = 0;
    for (const h of headings) {
      const level = Number(h.tagName[1]);
      if (last && level > last + 1) skips++;
      last = level;
    }
    return {
      headings: headings.map((h) => h.textContent.trim().replace(/\s+/g, ' ').slice(0, 400)),
      h1: document.querySelectorAll('h1').length,
      width: Math.max(document.documentElement.scrollWidth, document.body ? document.body.scrollWidth : 0),
      lang: document.documentElement.getAttribute('lang') || '',
      headingSkips: skips,
    };
  });
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  mkdirSync(args.out, { recursive: true });
  if (args.shots) mkdirSync(join(args.out, 'shots'), { recursive: true });
  const lines = join(args.out, 'pages.jsonl');
  writeFileSync(lines, '');
  const origin = await serve(args.pages);
  const originHost = `127.0.0.1:${origin.address().port}`;
  const pages = [];
  for (const dir of args.pages) {
    let names = readdirSync(dir).filter((n) => n.endsWith('.html')).sort();
    if (args.sample > 0) names = names.slice(0, args.sample);
    for (const name of names) pages.push({ set: basename(dir), name, path: join(dir, name) });
  }
  const summary = {};
  const browser = await chromium.launch({
    executablePath: args.chromium,
    args: ['--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-sandbox'],
  });
  try {
    // The originals, straight from the origin with scripts off: each page's headline.
    const direct = await browser.newContext({ viewport: DESKTOP, javaScriptEnabled: false });
    await direct.route('**/*', (route) => {
      const url = new URL(route.request().url());
      const path = url.host === originHost ? files.get(url.pathname) : undefined;
      return path ? route.fulfill({ status: 200, ...originalResponse(path) }) : route.abort();
    });
    const original = await direct.newPage();
    for (const p of pages) {
      p.titles = titleCandidates(readFileSync(p.path, 'utf8'));
      try {
        p.headline = await headline(original, `http://${originHost}/${p.set}/${p.name}`, p.titles);
      } catch {
        p.headline = null;
      }
    }
    await direct.close();
    for (const [profile, proxy] of args.proxies) {
      const s = (summary[profile] = { pages: 0, failed: 0, noTitle: 0, noH1: 0, wide: 0, noLang: 0, headingSkips: 0, seriousAxe: 0, violations: {} });
      for (const contextOpts of [{ viewport: PHONE, phone: true }]) {
        const context = await browser.newContext({ viewport: contextOpts.viewport, proxy: { server: `http://${proxy}` }, colorScheme: 'light' });
        // Only the loopback origin is reached; every other host is aborted at the browser.
        await context.route('**/*', (route) => {
          const url = new URL(route.request().url());
          return url.host === originHost ? route.continue() : route.abort();
        });
        const page = await context.newPage();
        page.setDefaultTimeout(PAGE_TIMEOUT_MS);
        for (const p of pages) {
          const url = `http://${originHost}/${p.set}/${p.name}`;
          const record = { profile, set: p.set, page: p.name };
          try {
            await page.goto(url, { waitUntil: 'load', timeout: PAGE_TIMEOUT_MS });
            const f = await facts(page);
            const shown = f.headings.map(normalise);
            record.headline = p.headline;
            record.title =
              p.titles.length === 0 && !p.headline
                ? null
                : shown.some((h) => (p.headline && (h === p.headline || (p.headline.length >= 12 && h.includes(p.headline)))) || carriesTitle(h, p.titles));
            record.h1 = f.h1;
            record.width = f.width;
            record.lang = f.lang;
            record.headingSkips = f.headingSkips;
            record.axe = await audit(page);
            if (args.shots) {
              const stem = `${profile}-${p.set}-${p.name.replace(/\.html$/, '')}`;
              await page.screenshot({ path: join(args.out, 'shots', `${stem}-412.png`) });
              await page.setViewportSize(DESKTOP);
              await page.screenshot({ path: join(args.out, 'shots', `${stem}-1280.png`) });
              await page.setViewportSize(PHONE);
            }
            s.pages++;
            if (record.title === false) s.noTitle++;
            if (record.h1 === 0) s.noH1++;
            if (record.width > PHONE.width) s.wide++;
            if (!record.lang) s.noLang++;
            if (record.headingSkips > 0) s.headingSkips++;
            const serious = record.axe.filter((v) => v.impact === 'critical' || v.impact === 'serious');
            if (serious.length) s.seriousAxe++;
            for (const v of record.axe) s.violations[`${v.id} (${v.impact})`] = (s.violations[`${v.id} (${v.impact})`] ?? 0) + 1;
          } catch (e) {
            record.error = String(e.message ?? e).split('\n')[0];
            s.failed++;
          }
          appendFileSync(lines, JSON.stringify(record) + '\n');
        }
        await context.close();
      }
    }
  } finally {
    await browser.close();
    origin.close();
  }
  writeFileSync(join(args.out, 'summary.json'), JSON.stringify(summary, null, 2));
  const rows = [
    ['pages loaded', 'pages'],
    ['failed to load', 'failed'],
    ['no heading carries the title', 'noTitle'],
    ['no <h1>', 'noH1'],
    [`wider than ${PHONE.width} px`, 'wide'],
    ['no lang', 'noLang'],
    ['a heading skips a level', 'headingSkips'],
    ['critical or serious axe violation', 'seriousAxe'],
  ];
  const profiles = Object.keys(summary);
  console.log(`| pages: ${pages.length} | ${profiles.join(' | ')} |`);
  console.log(`|---|${profiles.map(() => '---').join('|')}|`);
  for (const [label, key] of rows) console.log(`| ${label} | ${profiles.map((p) => summary[p][key]).join(' | ')} |`);
  for (const p of profiles) {
    const top = Object.entries(summary[p].violations).sort((a, b) => b[1] - a[1]).slice(0, 8);
    console.log(`${p}: axe rules by pages: ${top.map(([k, n]) => `${k} ${n}`).join(', ') || 'none'}`);
  }
  if (args.gate) {
    const gate = JSON.parse(readFileSync(args.gate, 'utf8'));
    let over = 0;
    for (const [profile, ceilings] of Object.entries(gate)) {
      for (const [key, max] of Object.entries(ceilings)) {
        const got = summary[profile]?.[key];
        if (got === undefined) {
          console.log(`gate: no ${key} for profile ${profile}`);
          over++;
        } else if (got > max) {
          console.log(`gate: ${profile} ${key} = ${got}, over its ceiling ${max}`);
          over++;
        }
      }
    }
    if (over) process.exit(1);
    console.log('gate: every count within its ceiling');
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(2);
});
