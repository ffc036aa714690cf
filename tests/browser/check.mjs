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
//   - headingSkips: headings that go down more than one level (h1 straight to h3);
//   - headlineY: how far down the page (CSS px at 412 px, from the document's top) the heading
//     carrying the title starts; null when no heading carries it;
//   - leftovers: what a reader did not come for, still shown: visible elements with
//     role="dialog"/"alertdialog" or aria-modal="true", and the phrases of filters/leftovers.txt
//     (consent and cookie-banner notices, session-timeout and newsletter prompts; never the
//     bare word "cookie") found in the page's visible text;
//   - sr: a screen reader's path through the page: the nodes of Chromium's accessibility tree
//     (the full tree without the nodes Chromium marks ignored, the `interestingOnly` snapshot,
//     in reading order) that have a name and one of the roles link, heading, button, a form
//     control, image, figure or text; a link or button counts once, with its text. pith's bar
//     (the navigation named "pith") is counted apart (sr.bar). sr.beforeHeadline: the items
//     met before the heading carrying the title (null when none does); sr.beforeParagraph:
//     the items before the first text of 80 characters or more (a paragraph's sentence);
//   - bar: pith's bar: its items (sr.bar) and its links smaller than 24×24 CSS px (WCAG 2.2
//     target size).
// The "original" profile is the page straight from the origin, scripts on (requests to other
// hosts aborted), for comparison; it is given with --original.
// A screenshot of the first screen at each width goes to OUT/shots/ when --shots is given.
//
// Usage: node check.mjs --pages DIR[,DIR...] --proxy PROFILE=HOST:PORT[,...] --out DIR
//                       [--sample N] [--shots] [--chromium PATH] [--gate FILE]
//   --sample N   the first N pages of each folder in name order (default: all; a folder named
//                wcxb, a sample scripts/browser.sh chose, is taken whole)
//   --spread N   N pages of each folder spread evenly over it in name order (instead of --sample)
//   --original   audit the original pages too (profile "original")
//   --gate FILE  a JSON file of ceilings per profile, e.g. {"reader": {"noTitle": 0}}; the
//                script exits 1 when a count in the summary is over its ceiling.

import { chromium } from 'playwright-core';
import { createServer } from 'node:http';
import { readFileSync, readdirSync, mkdirSync, writeFileSync, appendFileSync, existsSync } from 'node:fs';
import { join, basename, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const AXE_SOURCE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
const PHONE = { width: 412, height: 915 };
const DESKTOP = { width: 1280, height: 800 };
const PAGE_TIMEOUT_MS = 30_000;
// The first screen at phone size: a headline below it is one the reader scrolls to.
const FIRST_SCREEN_PX = 600;
// A screen reader's "next item" reaches the headline within this many items after pith's bar.
const SR_NEAR = 4;
// A text this long (characters) is a paragraph's sentence, not a label.
const PARAGRAPH_CHARS = 80;

// filters/leftovers.txt: `kind lang: phrase | phrase`, phrases folded.
function leftoverPhrases() {
  const file = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'filters', 'leftovers.txt');
  const phrases = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const t = line.trim();
    if (!t || t.startsWith('#')) continue;
    const colon = t.indexOf(':');
    if (colon < 0) continue;
    for (const p of t.slice(colon + 1).split('|')) if (p.trim()) phrases.push(p.trim());
  }
  return phrases;
}
const LEFTOVER_PHRASES = leftoverPhrases();

function parseArgs(argv) {
  const args = { sample: 0, spread: 0, original: false, shots: false, chromium: '/usr/bin/chromium', gate: null };
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
    else if (a === '--spread') args.spread = Number(next());
    else if (a === '--original') args.original = true;
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
  return page.evaluate((phrases) => {
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
      headingTops: headings.map((h) => {
        const r = h.getBoundingClientRect();
        return r.width > 0 || r.height > 0 ? Math.round(r.top + window.scrollY) : null;
      }),
      leftovers: leftoversOf(phrases),
      barSmall: [...document.querySelectorAll('nav[aria-label="pith"] a')].filter((a) => {
        const r = a.getBoundingClientRect();
        return r.width < 24 || r.height < 24;
      }).length,
    };

    // Visible dialogs and leftover phrases (see the header).
    function leftoversOf(phrases) {
      const found = [];
      const visible = (e) => {
        const st = getComputedStyle(e);
        if (st.visibility === 'hidden' || st.display === 'none' || Number(st.opacity) === 0) return false;
        const r = e.getBoundingClientRect();
        return r.width > 1 && r.height > 1;
      };
      for (const e of document.querySelectorAll('[role="dialog" i],[role="alertdialog" i],[aria-modal="true" i],dialog[open]')) {
        if (visible(e)) found.push(`dialog: ${(e.innerText || '').trim().replace(/\s+/g, ' ').slice(0, 60)}`);
      }
      const fold = (s) => ' ' + s.toLowerCase().normalize('NFKC').replace(/[^\p{L}\p{N}]+/gu, ' ').trim() + ' ';
      const text = fold(document.body ? document.body.innerText : '');
      const cjk = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u;
      for (const p of phrases) {
        if (text.includes(cjk.test(p) ? p : ` ${p} `)) found.push(`phrase: ${p}`);
      }
      return found;
    }
  }, LEFTOVER_PHRASES);
}

// A screen reader's path (see "sr" in the header), from Chromium's accessibility tree.
const SR_ROLES = new Set([
  'link', 'heading', 'button', 'image', 'img', 'figure', 'StaticText', 'text',
  'textbox', 'searchbox', 'checkbox', 'radio', 'combobox', 'listbox', 'ListBox', 'slider', 'spinbutton', 'switch',
  'menuitemcheckbox', 'menuitemradio', 'PopUpButton', 'ToggleButton',
]);
async function readerPath(page, headline, titles) {
  const cdp = await page.context().newCDPSession(page);
  try {
    const { nodes } = await cdp.send('Accessibility.getFullAXTree');
    const byId = new Map(nodes.map((n) => [n.nodeId, n]));
    const root = nodes.find((n) => !n.parentId) ?? nodes[0];
    const items = [];
    const bar = [];
    const walk = (n, inBar) => {
      if (!n) return;
      const role = n.role?.value ?? '';
      const name = String(n.name?.value ?? '').trim().replace(/\s+/g, ' ');
      if (!n.ignored && role === 'navigation' && name === 'pith') inBar = true;
      if (!n.ignored && name && SR_ROLES.has(role)) {
        (inBar ? bar : items).push({ role, name });
        if (role === 'link' || role === 'button' || role === 'heading' || role === 'PopUpButton' || role === 'ToggleButton') return;
      }
      for (const c of n.childIds ?? []) walk(byId.get(c), inBar);
    };
    walk(root, false);
    // Text inside a link, button or heading was read with it: StaticText under those was cut.
    const isHeadline = (it) => it.role === 'heading' && ((headline && (normalise(it.name) === headline || (headline.length >= 12 && normalise(it.name).includes(headline)))) || carriesTitle(it.name, titles));
    const h = items.findIndex(isHeadline);
    const p = items.findIndex((it) => (it.role === 'StaticText' || it.role === 'text') && it.name.length >= PARAGRAPH_CHARS);
    return { items: items.length, beforeHeadline: h < 0 ? null : h, beforeParagraph: p < 0 ? null : p, bar: bar.length, barNames: bar.map((b) => b.name) };
  } finally {
    await cdp.detach().catch(() => {});
  }
}

function median(xs) {
  const v = xs.filter((x) => x !== null && x !== undefined).sort((a, b) => a - b);
  if (v.length === 0) return null;
  const m = Math.floor(v.length / 2);
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
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
    // The wcxb folder scripts/browser.sh unpacks is a chosen sample already.
    if (basename(dir) === 'wcxb') {
      /* every page */
    } else if (args.sample > 0) names = names.slice(0, args.sample);
    else if (args.spread > 0 && names.length > args.spread) {
      const all = names;
      names = Array.from({ length: args.spread }, (_, i) => all[Math.floor((i * all.length) / args.spread)]);
    }
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
    const runs = args.original ? [['original', null], ...args.proxies] : args.proxies;
    for (const [profile, proxy] of runs) {
      const s = (summary[profile] = {
        pages: 0, failed: 0, noTitle: 0, noH1: 0, notOneH1: 0, wide: 0, noLang: 0, headingSkips: 0, seriousAxe: 0,
        headlineBelow: 0, headlineMissing: 0, leftovers: 0, srFar: 0, srHeadlineMedian: null, srParagraphMedian: null,
        barItemsMax: 0, barSmall: 0, violations: {}, leftoverKinds: {},
      });
      const srHeadline = [];
      const srParagraph = [];
      for (const contextOpts of [{ viewport: PHONE, phone: true }]) {
        const context = await browser.newContext({ viewport: contextOpts.viewport, ...(proxy ? { proxy: { server: `http://${proxy}` } } : {}), colorScheme: 'light' });
        // Only the loopback origin is reached; every other host is aborted at the browser.
        await context.route('**/*', (route) => {
          const url = new URL(route.request().url());
          if (url.host !== originHost) return route.abort();
          const path = proxy ? undefined : files.get(url.pathname);
          return path ? route.fulfill({ status: 200, ...originalResponse(path) }) : route.continue();
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
            const carrying = shown.findIndex((h) => (p.headline && (h === p.headline || (p.headline.length >= 12 && h.includes(p.headline)))) || carriesTitle(h, p.titles));
            record.headlineY = carrying < 0 ? null : f.headingTops[carrying];
            record.leftovers = f.leftovers;
            record.sr = await readerPath(page, p.headline, p.titles);
            record.barSmall = f.barSmall;
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
            if (record.h1 !== 1) s.notOneH1++;
            if (record.title !== null) {
              if (record.headlineY === null) s.headlineMissing++;
              else if (record.headlineY > FIRST_SCREEN_PX) s.headlineBelow++;
            }
            if (record.leftovers.length) s.leftovers++;
            for (const l of record.leftovers) {
              const k = l.startsWith('dialog') ? 'dialog' : l;
              s.leftoverKinds[k] = (s.leftoverKinds[k] ?? 0) + 1;
            }
            if (record.title !== null) {
              if (record.sr.beforeHeadline === null || record.sr.beforeHeadline > SR_NEAR) s.srFar++;
              srHeadline.push(record.sr.beforeHeadline);
            }
            srParagraph.push(record.sr.beforeParagraph);
            s.barItemsMax = Math.max(s.barItemsMax, record.sr.bar);
            if (record.barSmall > 0) s.barSmall++;
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
      s.srHeadlineMedian = median(srHeadline);
      s.srParagraphMedian = median(srParagraph);
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
    ['not exactly one <h1>', 'notOneH1'],
    [`headline below ${FIRST_SCREEN_PX} px`, 'headlineBelow'],
    ['headline not found as a heading', 'headlineMissing'],
    ['a leftover (dialog or phrase)', 'leftovers'],
    [`screen reader: headline not within ${SR_NEAR} items`, 'srFar'],
    ['screen reader: items before the headline (median)', 'srHeadlineMedian'],
    ['screen reader: items before the first paragraph (median)', 'srParagraphMedian'],
    ["pith's bar: most items", 'barItemsMax'],
    ["pith's bar: a link under 24×24 px", 'barSmall'],
  ];
  const profiles = Object.keys(summary);
  console.log(`| pages: ${pages.length} | ${profiles.join(' | ')} |`);
  console.log(`|---|${profiles.map(() => '---').join('|')}|`);
  for (const [label, key] of rows) console.log(`| ${label} | ${profiles.map((p) => summary[p][key]).join(' | ')} |`);
  for (const p of profiles) {
    const top = Object.entries(summary[p].violations).sort((a, b) => b[1] - a[1]).slice(0, 8);
    console.log(`${p}: axe rules by pages: ${top.map(([k, n]) => `${k} ${n}`).join(', ') || 'none'}`);
    const lo = Object.entries(summary[p].leftoverKinds).sort((a, b) => b[1] - a[1]).slice(0, 8);
    console.log(`${p}: leftovers by pages: ${lo.map(([k, n]) => `${k} ${n}`).join(', ') || 'none'}`);
  }
  if (args.gate) {
    const gate = JSON.parse(readFileSync(args.gate, 'utf8'));
    let over = 0;
    for (const [profile, ceilings] of Object.entries(gate)) {
      for (const [key, max] of Object.entries(ceilings)) {
        const got = summary[profile]?.[key];
        if (got === null) continue;
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
