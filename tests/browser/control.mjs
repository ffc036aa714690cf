// The control page clicked through in headless Chromium, as a person uses it: load
// http://pith/ through the proxy, choose reading mode and save, load an article and see the
// reading page, press "original" on the bar and see the site's own page, then "settings" back
// to the control page. axe-core audits pith's own pages (the control page, and the bar on the
// reading page): no critical or serious violation may be found.
//
// Run by scripts/browser.sh with the address of a listener serving `declutter`, whose state
// starts empty. The article comes from a loopback origin this script serves; every request to
// any other host is aborted. Each step is bounded (30 s). Exits 1 on the first failure.
//
// Usage: node control.mjs --proxy HOST:PORT [--chromium PATH]

import { chromium } from 'playwright-core';
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const AXE_SOURCE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
const STEP_TIMEOUT_MS = 30_000;

const args = { chromium: '/usr/bin/chromium' };
for (let i = 2; i < process.argv.length; i++) {
  const a = process.argv[i];
  if (a === '--proxy') args.proxy = process.argv[++i];
  else if (a === '--chromium') args.chromium = process.argv[++i];
  else throw new Error(`unknown argument ${a}`);
}
if (!args.proxy) throw new Error('--proxy HOST:PORT is required');

// An article long enough for reading mode, with clutter around it.
const words = 'The river rose through the night and by morning the lower streets of the town were under water. ';
const ARTICLE = `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Flood in the valley</title>
<script>window.ORIGINAL_SCRIPT_RAN = true;</script></head><body>
<nav><ul><li><a href="/a">Home</a></li><li><a href="/b">World</a></li><li><a href="/c">Sport</a></li></ul></nav>
<div class="ad-banner">ADVERTISEMENT</div>
<article><h1>Flood in the valley</h1>${'<p>' + words.repeat(6) + '</p>'.repeat(1)}${('<p>' + words.repeat(5) + '</p>').repeat(6)}</article>
<footer><p>Copyright the valley paper. <a href="/about">About</a></p></footer></body></html>`;

const origin = createServer((req, res) => {
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
  res.end(ARTICLE);
});
await new Promise((resolve) => origin.listen(0, '127.0.0.1', resolve));
const articleUrl = `http://127.0.0.1:${origin.address().port}/news/flood.html`;

const fail = (why) => {
  console.error(`control.mjs: ${why}`);
  process.exitCode = 1;
  throw new Error(why);
};

async function audit(page, what) {
  await page.addScriptTag({ content: AXE_SOURCE });
  const result = await page.evaluate(async () => await window.axe.run(document, { resultTypes: ['violations'] }));
  const bad = result.violations.filter((v) => v.impact === 'critical' || v.impact === 'serious');
  if (bad.length) fail(`${what}: axe found ${bad.map((v) => `${v.id} (${v.impact})`).join(', ')}`);
  console.log(`control.mjs: ${what}: no critical or serious axe violation (${result.violations.length} others)`);
}

const browser = await chromium.launch({
  executablePath: args.chromium,
  args: [`--proxy-server=http://${args.proxy}`, '--proxy-bypass-list=<-loopback>'],
});
try {
  const context = await browser.newContext({ viewport: { width: 412, height: 915 } });
  context.setDefaultTimeout(STEP_TIMEOUT_MS);
  await context.route('**/*', (route) => {
    const host = new URL(route.request().url()).hostname;
    return host === 'pith' || host === '127.0.0.1' ? route.continue() : route.abort();
  });
  const page = await context.newPage();

  await page.goto('http://pith/');
  if ((await page.locator('h1').count()) !== 1) fail('the control page has one h1');
  if ((await page.getAttribute('html', 'lang')) !== 'en') fail('the control page states its lang');
  await audit(page, 'control page');
  await page.getByLabel('reading mode: the main text alone').check();
  await Promise.all([page.waitForURL('http://pith/'), page.getByRole('button', { name: 'Save my choice' }).click()]);
  if (!(await page.textContent('main')).includes('(your choice')) fail('the choice was not saved');

  await page.goto(articleUrl);
  const reading = await page.evaluate(() => ({
    nav: document.querySelectorAll('nav').length,
    ad: document.body.textContent.includes('ADVERTISEMENT'),
    script: window.ORIGINAL_SCRIPT_RAN === true,
    text: document.body.textContent.includes('The river rose'),
  }));
  if (reading.ad || reading.script || !reading.text) fail(`the article is not the reading page: ${JSON.stringify(reading)}`);
  const bar = page.getByRole('navigation', { name: 'pith' });
  if ((await bar.count()) !== 1) fail('the reading page has no pith bar');
  await audit(page, 'reading page with the bar');

  await Promise.all([page.waitForURL(articleUrl), bar.getByRole('link', { name: 'original' }).click()]);
  const original = await page.evaluate(() => ({
    ad: document.body.textContent.includes('ADVERTISEMENT'),
    script: window.ORIGINAL_SCRIPT_RAN === true,
  }));
  if (!original.ad || !original.script) fail(`"original" did not serve the site's page: ${JSON.stringify(original)}`);

  await page.goto(articleUrl);
  if (await page.evaluate(() => window.ORIGINAL_SCRIPT_RAN === true)) fail('the original was served more than once');
  await Promise.all([page.waitForURL('http://pith/'), page.getByRole('navigation', { name: 'pith' }).getByRole('link', { name: 'settings' }).click()]);
  await Promise.all([page.waitForURL('http://pith/'), (async () => {
    await page.getByLabel(/this proxy's default/).check();
    await page.getByRole('button', { name: 'Save my choice' }).click();
  })()]);
  console.log('control.mjs: chose reading mode, read the article, pressed "original", went back: all as expected');
} finally {
  await browser.close();
  origin.close();
}
