// Browser tests of the dashboard (ctest label "web"): a real beatline-server
// on loopback serving the built bundle, seeded with test/seed.mjs, driven
// by playwright-core in Debian's chromium (headless).
//
//   node test/browser.mjs BUILD_DIR WEB_DIR OUT_DIR
//
// BUILD_DIR/bin holds beatline-server and beatline-batch, WEB_DIR the built
// bundle, OUT_DIR (emptied) the server's data, screenshots (*.png) and
// timings.json. Exit 0 when every check passes, 1 otherwise, 77 (ctest
// SKIP) when no chromium is installed. CHROMIUM=/path overrides the browser.
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { seed, seedBig } from './seed.mjs';
import { fmtDur, fmtInt, fmtPct } from '../src/format.js';

const [buildDir, webDir, outDir] = process.argv.slice(2).map((p) => p && path.resolve(p));
if (!outDir) { console.error('usage: browser.mjs BUILD_DIR WEB_DIR OUT_DIR'); process.exit(2); }
const bin = path.join(buildDir, 'bin');
const exe = process.env.CHROMIUM || ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find(existsSync);
if (!exe) { console.log('no chromium: skipped (scripts/install-deps installs it)'); process.exit(77); }
rmSync(outDir, { recursive: true, force: true });
mkdirSync(outDir, { recursive: true });

let pass = 0;
let fail = 0;
const ok = (name, cond, detail = '') => {
  if (cond) pass++; else { fail++; console.error(`FAIL: ${name}${detail ? `: ${detail}` : ''}`); }
};
const deadline = Date.now() + 240e3; // every wait below is bounded too

// ---- the server ------------------------------------------------------------
const data = path.join(outDir, 'data');
const keys = JSON.parse(execFileSync(`${bin}/beatline-server`, ['--data', data, 'app', 'create', 'shop']).toString());
const portFile = path.join(outDir, 'port.txt');
const server = spawn(`${bin}/beatline-server`, ['--data', data, '--listen', '127.0.0.1:0', '--port-file', portFile, '--web', webDir],
  { stdio: ['ignore', 'ignore', 'pipe'] });
let serverLog = '';
server.stderr.on('data', (d) => { serverLog += d; });
let browser = null;
async function cleanup() {
  if (browser) await browser.close().catch(() => {});
  server.kill('SIGTERM');
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(what, f, ms = 20000) {
  const end = Math.min(Date.now() + ms, deadline);
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}
try {
  const port = await until('the server port', () => existsSync(portFile) && readFileSync(portFile, 'utf8').trim());
  const url = `http://127.0.0.1:${port}`;
  // the 100,000-node tree in an app of its own (its methods stay out of shop's tables)
  const benchKeys = JSON.parse(execFileSync(`${bin}/beatline-server`, ['--data', data, 'app', 'create', 'bench']).toString());
  const posted = await seed({ bin, url, app: 'shop', keys }) + 1;
  await seedBig({ bin, url, app: 'bench', keys: benchKeys, n: 100000 });
  const processed = async () => {
    const t = await (await fetch(`${url}/metrics`)).text();
    const m = t.match(/^beatline_batches_processed_total (\d+)/m);
    return m && Number(m[1]) >= posted;
  };
  await until('the batches to be processed', processed);
  const read = (p) => fetch(`${url}/v1/apps/shop${p}`, { headers: { Authorization: `Bearer ${keys.read_key}` } }).then((r) => r.json());

  // ---- the browser ---------------------------------------------------------
  browser = await chromium.launch({ executablePath: exe, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  // /launches, /launches/tree and /network (issues 15, 16): the checks
  // below compare the page with the server's own answer
  const readNew = (p) => read(p);
  const page = await ctx.newPage();
  const errors = [];
  let expectRefusal = false; // the wrong-key check's 403 is logged by Chromium as a failed resource
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    if (expectRefusal && /status of 403/.test(m.text())) return;
    errors.push(`${page.url()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => errors.push(`${page.url()}: ${e.message}`));
  const shot = (name, p = page) => p.screenshot({ path: path.join(outDir, `${name}.png`), fullPage: false });
  // the smaller pictures of docs/ (README): the top of a page at 1000 px wide
  const docShot = async (name, height) => {
    await page.setViewportSize({ width: 1000, height: 800 });
    await sleep(300);
    await page.screenshot({ path: path.join(outDir, `doc-${name}.png`), clip: { x: 0, y: 0, width: 1000, height } });
    await page.setViewportSize({ width: 1280, height: 800 });
    await sleep(200);
  };
  const timings = {};

  // sign-in: a wrong key is refused with a clear message, never put in the URL
  await page.goto(`${url}/`);
  await page.fill('input[name=app]', 'shop');
  await page.fill('input[name=key]', 'blk_read_wrong');
  expectRefusal = true;
  await page.click('button[type=submit]');
  const msg = await page.locator('#signin-error').textContent({ timeout: 10000 });
  expectRefusal = false;
  ok('wrong key: a clear message', /read key is not accepted for the app “shop”/.test(msg), msg);
  ok('wrong key: not in the URL', !page.url().includes('blk_read'), page.url());
  ok('wrong key: not stored', (await page.evaluate(() => sessionStorage.getItem('beatline.readKey'))) === null);
  await shot('signin-wrong-key');

  // sign in
  await page.fill('input[name=key]', keys.read_key);
  await page.click('button[type=submit]');
  await page.locator('#builds tbody tr').first().waitFor({ timeout: 10000 });
  ok('signed in: key only in sessionStorage', (await page.evaluate(() => sessionStorage.getItem('beatline.readKey'))) === keys.read_key);
  ok('signed in: key not in the URL', !page.url().includes(keys.read_key));
  const builds = await read('/builds');
  const rows = await page.locator('#builds tbody tr td:first-child').allTextContents();
  const newest = [...builds.builds].sort((a, b) => b.created_at - a.created_at).map((b) => b.build);
  ok('overview: builds newest first', JSON.stringify(rows) === JSON.stringify(newest), `${rows} vs ${newest}`);
  await page.getByText('symbolicated').first().waitFor({ timeout: 5000 });
  await shot('overview');

  // slow methods: the table's top rows are the API's, in every sort
  const t0 = Date.now();
  await page.goto(`${url}/#/slow`);
  await page.reload(); // a first load of this page
  await page.locator('#slow-table tbody tr').first().waitFor({ timeout: 10000 });
  timings.slow_methods_first_render_ms = Math.round(await page.evaluate(() => window.__beatlineRendered));
  timings.slow_methods_wall_ms = Date.now() - t0;
  const tableTop = async () => (await page.locator('#slow-table tbody tr').evaluateAll((trs) => trs.slice(0, 10).map((tr) => [tr.cells[0].textContent, tr.cells[1].textContent])));
  const apiTop = async (q) => (await read(`/slow-methods?limit=10&${q}`)).methods.map((m) => [`${m.method.class}.${m.method.name}`, m.count.toLocaleString('en-US')]);
  // the table once it shows want (it is fetched after the URL changes): polled, bounded
  const tableWhen = async (want) => {
    let got = await tableTop();
    for (let k = 0; k < 100 && JSON.stringify(got) !== JSON.stringify(want); k++) { await sleep(100); got = await tableTop(); }
    return got;
  };
  let want = await apiTop('sort=total');
  let top = await tableWhen(want);
  ok('slow: top rows equal the API (total)', JSON.stringify(top) === JSON.stringify(want), `${JSON.stringify(top)} vs ${JSON.stringify(want)}`);
  await docShot('slow-methods', 460);
  ok('slow: original names (retraced)', top.length > 0 && top.every(([n]) => n.startsWith('com.example.shop.')), JSON.stringify(top));
  await shot('slow-methods');
  await page.click('#slow-table th button:has-text("p99")');
  await page.waitForFunction(() => location.hash.includes('sort=p99'));
  await page.locator('#slow-table th[aria-sort=descending]:has-text("p99")').waitFor({ timeout: 5000 });
  want = await apiTop('sort=p99');
  top = await tableWhen(want);
  ok('slow: sorted by p99 equals the API', JSON.stringify(top) === JSON.stringify(want), `${JSON.stringify(top)} vs ${JSON.stringify(want)}`);
  // filters: build and main thread, units, search (all in the URL)
  await page.selectOption('select[aria-label=build]', '7.1');
  await page.selectOption('select[aria-label=thread]', 'main');
  await page.waitForFunction(() => location.hash.includes('build=7.1') && location.hash.includes('thread=main'));
  want = await apiTop('sort=p99&build=7.1&thread=main');
  top = await tableWhen(want);
  ok('slow: build 7.1, main thread equals the API', JSON.stringify(top) === JSON.stringify(want), `${JSON.stringify(top)} vs ${JSON.stringify(want)}`);
  ok('slow: main thread has no worker method', !top.some(([n]) => n.includes('SyncWorker')));
  await page.fill('input[aria-label="search methods"]', 'database');
  await page.waitForFunction(() => document.querySelectorAll('#slow-table tbody tr').length === 2, null, { timeout: 10000 }).catch(() => {});
  const found = await page.locator('#slow-table tbody tr td:first-child').allTextContents();
  ok('slow: search filters', found.length === 2 && found.every((n) => n.includes('Database')), JSON.stringify(found));
  await page.selectOption('select[aria-label=units]', 'us');
  await page.waitForFunction(() => (document.querySelector('#slow-table tbody tr td:nth-child(3)') || {}).textContent.endsWith('µs'), null, { timeout: 10000 }).catch(() => {});
  ok('slow: units µs', (await page.locator('#slow-table tbody tr td:nth-child(3)').first().textContent()).endsWith('µs'));
  const deep = page.url();
  ok('slow: the view is in the URL', /build=7\.1/.test(deep) && /q=database/.test(deep) && /unit=us/.test(deep), deep);
  await page.goto('about:blank');
  await page.goto(deep);
  await page.locator('#slow-table tbody tr').first().waitFor({ timeout: 10000 });
  ok('slow: a deep link opens the same view', (await page.locator('#slow-table tbody tr').count()) === 2 &&
    (await page.inputValue('input[aria-label="search methods"]')) === 'database');

  // method page: figures, chart, callers and callees (from a fresh page: a
  // hash change alone would click into the previous view's table while it
  // is replaced)
  await page.goto('about:blank');
  await page.goto(`${url}/#/slow?build=7.1`);
  await page.locator('#slow-table tbody tr').first().waitFor({ timeout: 10000 });
  await page.click('#slow-table tbody a:has-text("Database.query")');
  await page.locator('#figures').waitFor({ timeout: 10000 });
  await page.locator('#histogram canvas').first().waitFor({ timeout: 10000 });
  await page.locator('.chart canvas').nth(1).waitFor({ timeout: 10000 });
  await page.locator('#callers tbody tr').first().waitFor({ timeout: 10000 });
  const callers = await page.locator('#callers tbody td:first-child').allTextContents();
  ok('method: caller is FeedRepository.load', callers.length === 1 && callers[0].includes('FeedRepository.load'), JSON.stringify(callers));
  const qrow = (await read('/slow-methods?build=7.1&limit=100')).methods.find((m) => m.method.name === 'query');
  ok('method: calls figure equals the API', (await page.locator('#figures dd').first().textContent()) === qrow.count.toLocaleString('en-US'));
  await shot('method');

  // flame graph: renders, click zooms (into the URL), search highlights
  await page.goto(`${url}/#/flame?build=7.1`);
  const canvas = page.locator('#flame canvas');
  await canvas.waitFor({ timeout: 10000 });
  await sleep(200);
  await shot('flame');
  const box = await canvas.boundingBox();
  const pixels = (color) => page.evaluate((c) => {
    const cv = document.querySelector('#flame canvas');
    const d = cv.getContext('2d').getImageData(0, 0, cv.width, cv.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i] === c[0] && d[i + 1] === c[1] && d[i + 2] === c[2]) n++;
    return n;
  }, color);
  ok('flame: nothing highlighted before a search', (await pixels([0xd6, 0x3a, 0xf9])) === 0);
  // a frame at depth 2 (third row), near its left edge
  await canvas.hover({ position: { x: 40, y: 18 * 2 + 9 } });
  await page.locator('.flame-tip').waitFor({ state: 'visible', timeout: 5000 });
  const tip = await page.locator('.flame-tip').textContent();
  ok('flame: tooltip with figures', /calls .* total .* self/.test(tip) && /of its caller/.test(tip), tip);
  const before = await canvas.screenshot();
  await canvas.click({ position: { x: 40, y: 18 * 2 + 9 } });
  await page.waitForFunction(() => /zoom=0\.0\.\d/.test(location.hash), null, { timeout: 5000 });
  const after = await canvas.screenshot();
  ok('flame: click zooms (URL and picture change)', !before.equals(after));
  await shot('flame-zoomed');
  await page.click('#flame-reset');
  await page.waitForFunction(() => !location.hash.includes('zoom='));
  // a deep link to a frame that is not its parent's first child (near the
  // right edge) opens the same zoomed picture
  await canvas.click({ position: { x: box.width - 12, y: 18 + 9 } });
  await page.waitForFunction(() => /zoom=\d+\.[1-9]/.test(location.hash), null, { timeout: 5000 }).catch(() => {});
  const zlink = page.url();
  ok('flame: a right-hand frame has a later child position', /zoom=\d+\.[1-9]/.test(zlink), zlink);
  await page.mouse.move(0, 0);
  await sleep(100);
  const zpic = await canvas.screenshot();
  await page.goto('about:blank');
  await page.goto(zlink);
  await page.locator('#flame canvas').waitFor({ timeout: 10000 });
  await sleep(300);
  ok('flame: the deep link opens the same zoomed frame', (await page.locator('#flame canvas').screenshot()).equals(zpic));
  await page.click('#flame-reset');
  await page.waitForFunction(() => !location.hash.includes('zoom='));
  // keyboard: focus, down twice (first callee of the first callee), Enter zooms there
  await page.focus('#flame-search');
  await page.keyboard.press('Escape'); // leaves the search empty (it is)
  await page.keyboard.press('Shift+Tab');
  await page.keyboard.press('Tab'); // back to the search box, then on through the controls to the canvas
  for (let k = 0; k < 12 && !(await page.evaluate(() => document.activeElement && document.activeElement.tagName === 'CANVAS')); k++) await page.keyboard.press('Tab');
  ok('flame: the canvas is reachable by Tab', await page.evaluate(() => document.activeElement.tagName === 'CANVAS'));
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => /zoom=0\.0\.0(&|$)/.test(location.hash), null, { timeout: 5000 });
  ok('flame: keyboard selects and zooms', true);
  await page.keyboard.press('Escape');
  await page.waitForFunction(() => !location.hash.includes('zoom='));
  await page.fill('#flame-search', 'Database.query');
  await page.locator('#flame-found').waitFor({ timeout: 5000 });
  const hl = await pixels([0xd6, 0x3a, 0xf9]);
  ok('flame: search highlights', hl > 50, `${hl} highlighted pixels`);
  ok('flame: search says what it found', /frames?, \d+(\.\d)?% of the time/.test(await page.locator('#flame-found').textContent()));
  await shot('flame-search');
  await docShot('flame', 400);
  // exports of the same tree: speedscope (evented) and Chrome trace events
  const apiTree = await read('/call-tree?build=7.1&limit=100000&max_depth=4096');
  let nodes = 0;
  for (const st = [...apiTree.roots]; st.length;) { const x = st.pop(); nodes++; st.push(...x.children); }
  const grab = async (sel) => {
    const [dl] = await Promise.all([page.waitForEvent('download', { timeout: 10000 }), page.click(sel)]);
    const file = path.join(outDir, dl.suggestedFilename());
    await dl.saveAs(file);
    return JSON.parse(readFileSync(file, 'utf8'));
  };
  const sp = await grab('#export-speedscope');
  const evs = sp.profiles[0].events;
  let depth = 0; let nested = true; let last = 0;
  for (const e of evs) { depth += e.type === 'O' ? 1 : -1; if (depth < 0 || e.at < last) nested = false; last = e.at; }
  ok('export: speedscope has one open and close per node, nested, in time order', evs.length === 2 * nodes && depth === 0 && nested, `${evs.length} events, ${nodes} nodes`);
  ok('export: speedscope frames are original names', sp.shared.frames.some((f) => f.name.startsWith('com.example.shop.db.Database.query(')));
  ok('export: speedscope covers the total time', sp.profiles[0].endValue === apiTree.roots.reduce((a, r) => a + r.total_us, 0));
  const ct = await grab('#export-chrome');
  const xs = ct.traceEvents.filter((e) => e.ph === 'X');
  ok('export: Chrome trace has one complete event per node', xs.length === nodes, `${xs.length} vs ${nodes}`);
  ok('export: Chrome trace durations are inclusive times', xs[0].dur === apiTree.roots[0].total_us && xs[0].args.calls === apiTree.roots[0].count);
  await page.click('button:has-text("self")');
  await page.click('button:has-text("table")');
  await page.locator('#tree-table tbody tr').first().waitFor({ timeout: 5000 });
  ok('flame: table view', (await page.locator('#tree-table tbody tr').count()) > 5);

  // blocks: the groups, then one with its ANR stack and flame graph
  await page.goto(`${url}/#/blocks?build=7.1`);
  await page.locator('#blocks-table tbody tr').first().waitFor({ timeout: 10000 });
  const blocks = await read('/blocks?build=7.1');
  ok('blocks: rows equal the API', (await page.locator('#blocks-table tbody tr').count()) === blocks.blocks.length);
  await shot('blocks');
  await page.locator('#blocks-table tbody a').first().click();
  await page.locator('#block-figures').waitFor({ timeout: 10000 });
  await page.locator('#block-flame canvas').waitFor({ timeout: 10000 });
  const anr = blocks.blocks[0].anrs > 0;
  if (anr) {
    const stack = await page.locator('#anr-stack').textContent({ timeout: 5000 });
    ok('block: ANR stack retraced', stack.includes('com.example.shop.db.Database.query'), stack);
  }
  ok('block: an ANR in the test data', anr);
  await sleep(200);
  await shot('block');
  await docShot('block', 640);

  // compare builds: the planted regression (7.1's database is 3x slower) is flagged
  await page.goto(`${url}/#/compare?a=7.0&b=7.1`);
  await page.locator('#compare-table tbody tr').first().waitFor({ timeout: 10000 });
  const cmp = await page.locator('#compare-table tbody tr').evaluateAll((trs) => trs.map((tr) => [tr.cells[0].textContent, tr.cells[1].textContent]));
  const flagOf = (name) => (cmp.find(([n]) => n.endsWith(name)) || [])[1];
  ok('compare: Database.query is a regression', flagOf('.Database.query') === 'regression', JSON.stringify(cmp));
  ok('compare: Strings.isBlank is not flagged', flagOf('.Strings.isBlank') === '', JSON.stringify(cmp));
  ok('compare: regressions listed first', cmp[0][1] === 'regression');
  await page.locator('#diff-flame canvas').waitFor({ timeout: 10000 });
  await sleep(200);
  await shot('compare');

  // launches: per kind, the phases' percentiles as a chart and a table, the
  // launch flame graph; the kind and zoom in the URL; keyboard
  const phaseRows = () => page.locator('#launch-phases tbody tr').evaluateAll((trs) => trs.map((tr) => [tr.cells[1].textContent, tr.cells[2].textContent, tr.cells[4].textContent]));
  const wantPhases = (k) => k.phases.map((p) => [fmtInt(p.count != null ? p.count : k.count), fmtDur(p.p50_us), fmtDur(p.p99_us)]);
  const rowsWhen = async (f, want) => {
    let got = await f();
    for (let k = 0; k < 100 && JSON.stringify(got) !== JSON.stringify(want); k++) { await sleep(100); got = await f(); }
    return got;
  };
  await page.goto(`${url}/#/launches?build=7.1`);
  await page.locator('#launch-kinds tbody tr').first().waitFor({ timeout: 10000 });
  const lch = await readNew('/launches?build=7.1');
  const kindsShown = await page.locator('#launch-kinds tbody tr').evaluateAll((trs) => trs.map((tr) => [tr.cells[0].textContent, tr.cells[1].textContent]));
  ok('launches: kinds equal the API', lch.launches.length > 0 && JSON.stringify(kindsShown) === JSON.stringify(lch.launches.map((k) => [k.kind, fmtInt(k.count)])),
    `${JSON.stringify(kindsShown)} vs ${JSON.stringify(lch.launches.map((k) => k.kind))}`);
  const k0 = lch.launches[0];
  let ph = await rowsWhen(phaseRows, wantPhases(k0));
  ok(`launches: ${k0.kind} phases (count, p50, p99) equal the API`, JSON.stringify(ph) === JSON.stringify(wantPhases(k0)), `${JSON.stringify(ph)} vs ${JSON.stringify(wantPhases(k0))}`);
  ok('launches: TTID p50 shown', (await page.locator('#launch-ttid dd').nth(1).textContent()) === fmtDur(k0.ttid.p50_us));
  await page.locator('#launch-chart canvas').first().waitFor({ timeout: 10000 });
  const lcanvas = page.locator('#launch-flame canvas');
  await lcanvas.waitFor({ timeout: 10000 });
  const ltree = await readNew(`/launches/tree?build=7.1&kind=${k0.kind}&limit=100000`);
  ok('launches: the launch tree has original names', ltree.roots.length > 0 && ltree.roots[0].method.class.startsWith('com.example.shop.'), JSON.stringify(ltree.roots.slice(0, 1)).slice(0, 200));
  await sleep(200);
  await shot('launches');
  const lbefore = await lcanvas.screenshot();
  await lcanvas.click({ position: { x: 30, y: 18 + 9 } });
  await page.waitForFunction(() => /zoom=0\.0(&|$)/.test(location.hash), null, { timeout: 5000 });
  await page.mouse.move(0, 0);
  await sleep(100);
  const lzoomed = await lcanvas.screenshot();
  ok('launches: click zooms the launch flame graph', !lbefore.equals(lzoomed));
  const ldeep = page.url();
  ok('launches: kind and zoom in the URL', ldeep.includes(`kind=${k0.kind}`) || !ldeep.includes('kind='), ldeep);
  await page.goto('about:blank');
  await page.goto(ldeep);
  await page.locator('#launch-flame canvas').waitFor({ timeout: 10000 });
  await sleep(300);
  ok('launches: a deep link opens the same zoomed graph', (await page.locator('#launch-flame canvas').screenshot()).equals(lzoomed));
  // keyboard: Tab onto a kind button, Enter switches kind
  const other = lch.launches.find((k) => k.kind !== k0.kind);
  if (other) {
    await page.focus('select[aria-label="time range"]');
    for (let k = 0; k < 6 && !(await page.evaluate((id) => document.activeElement && document.activeElement.id === id, `kind-${other.kind}`)); k++) await page.keyboard.press('Tab');
    ok('launches: kind buttons reachable by Tab', await page.evaluate((id) => document.activeElement.id === id, `kind-${other.kind}`));
    await page.keyboard.press('Enter');
    await page.waitForFunction((k) => location.hash.includes(`kind=${k}`) && !location.hash.includes('zoom='), other.kind, { timeout: 5000 });
    ph = await rowsWhen(phaseRows, wantPhases(other));
    ok(`launches: ${other.kind} phases equal the API`, JSON.stringify(ph) === JSON.stringify(wantPhases(other)), `${JSON.stringify(ph)} vs ${JSON.stringify(wantPhases(other))}`);
  } else ok('launches: two kinds in the test data', false);
  const rcold = await readNew('/launches?build=7.1&kind=cold');
  ok('launches: kind=cold filters', rcold.launches.every((k) => k.kind === 'cold'));

  // network: patterns with error rates and percentiles; sorts are the API's;
  // callers link to their method page
  const netRows = () => page.locator('#network-table tbody tr').evaluateAll((trs) => trs.map((tr) => [tr.cells[0].textContent, tr.cells[1].textContent, tr.cells[3].textContent]));
  const wantNet = (a) => a.requests.map((r) => [`${r.http_method} ${r.host}${r.pattern}`, fmtInt(r.count), fmtPct(r.error_rate)]);
  await page.goto(`${url}/#/network?build=7.1`);
  await page.locator('#network-table tbody tr').first().waitFor({ timeout: 10000 });
  let net = await readNew('/network?build=7.1&sort=count&limit=500');
  let nr = await rowsWhen(netRows, wantNet(net));
  ok('network: rows (pattern, count, error rate) equal the API', net.requests.length > 0 && JSON.stringify(nr) === JSON.stringify(wantNet(net)), `${JSON.stringify(nr)} vs ${JSON.stringify(wantNet(net))}`);
  ok('network: some error rate above zero', net.requests.some((r) => r.error_rate > 0));
  await shot('network');
  await page.click('#network-table th button:has-text("p99")');
  await page.waitForFunction(() => location.hash.includes('sort=p99'));
  net = await readNew('/network?build=7.1&sort=p99&limit=500');
  nr = await rowsWhen(netRows, wantNet(net));
  ok('network: sorted by p99 equals the API', JSON.stringify(nr) === JSON.stringify(wantNet(net)), `${JSON.stringify(nr)} vs ${JSON.stringify(wantNet(net))}`);
  const host = net.requests[net.requests.length - 1].host;
  await page.fill('input[aria-label=host]', host);
  await page.keyboard.press('Enter');
  await page.waitForFunction((h) => location.hash.includes(`host=${h}`), host, { timeout: 5000 });
  net = await readNew(`/network?build=7.1&sort=p99&limit=500&host=${host}`);
  nr = await rowsWhen(netRows, wantNet(net));
  ok('network: host filter equals the API', net.requests.every((r) => r.host === host) && JSON.stringify(nr) === JSON.stringify(wantNet(net)), JSON.stringify(nr));
  const ndeep = page.url();
  await page.goto('about:blank');
  await page.goto(ndeep);
  await page.locator('#network-table tbody tr').first().waitFor({ timeout: 10000 });
  ok('network: a deep link opens the same view', (await page.inputValue('input[aria-label=host]')) === host &&
    JSON.stringify(await netRows()) === JSON.stringify(wantNet(net)));
  const caller = net.requests[0].callers[0].method;
  await page.locator('#network-table tbody tr').first().locator('ul.callers a').first().click();
  // the title is the link's key until the method's figures arrive
  await page.waitForFunction((n) => (document.querySelector('h2.method-title') || {}).textContent === n, `${caller.class}.${caller.name}`, { timeout: 10000 }).catch(() => {});
  ok('network: a caller links to its method page', (await page.locator('h2.method-title').textContent()) === `${caller.class}.${caller.name}`,
    await page.locator('h2.method-title').textContent());
  ok('network: the caller has calls in this build', (await page.locator('#figures').count()) === 1);

  // a phone's width
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`${url}/#/slow?build=7.1`);
  await page.locator('#slow-table tbody tr').first().waitFor({ timeout: 10000 });
  await shot('slow-methods-phone');
  await page.goto(`${url}/#/launches?build=7.1`);
  await page.locator('#launch-flame canvas').waitFor({ timeout: 10000 });
  await sleep(200);
  await shot('launches-phone');
  ok('phone: launches page fits the width', (await page.evaluate(() => document.documentElement.scrollWidth)) <= 390 + 1,
    String(await page.evaluate(() => document.documentElement.scrollWidth)));
  await page.goto(`${url}/#/network?build=7.1`);
  await page.locator('#network-table tbody tr').first().waitFor({ timeout: 10000 });
  await shot('network-phone');
  ok('phone: network page fits the width', (await page.evaluate(() => document.documentElement.scrollWidth)) <= 390 + 1,
    String(await page.evaluate(() => document.documentElement.scrollWidth)));
  await page.setViewportSize({ width: 1280, height: 800 });

  // 100,000 frames: build "big" of app bench (test/seed.mjs), through the server
  await page.evaluate((k) => { sessionStorage.setItem('beatline.app', 'bench'); sessionStorage.setItem('beatline.readKey', k); }, benchKeys.read_key);
  await page.goto('about:blank');
  await page.goto(`${url}/#/flame?build=big`);
  await page.waitForFunction(() => window.__beatlineFlame && window.__beatlineFlame.painted > 0, null, { timeout: 60000 });
  const fl = await page.evaluate(() => ({ ...window.__beatlineFlame, ...window.__beatlineTree }));
  ok('flame: 100,000 nodes', fl.nodes === 100000, JSON.stringify(fl));
  // the tree was asked for once, by early.js, before the app's bundle ran
  const early = await page.evaluate(() => ({
    asked: performance.getEntriesByType('resource').filter((e) => e.name.includes('/call-tree')).length,
    early: (performance.getEntriesByName('early fetch')[0] || {}).startTime,
    app: (performance.getEntriesByName('app start')[0] || {}).startTime,
    left: !!window.__beatlineEarly,
  }));
  ok('flame: the call tree asked for once, before the app ran (early.js), and taken',
    early.asked === 1 && early.early >= 0 && early.app > early.early && !early.left, JSON.stringify(early));
  // printed, never asserted (a loaded machine): docs/benchmarks.md "Dashboard"
  const res = await page.evaluate(() => performance.getEntriesByType('resource').filter((e) => e.name.includes('call-tree')).map((e) => ({
    fetch: e.startTime, first: e.responseStart, end: e.responseEnd, bytes: e.encodedBodySize }))[0]);
  timings.flame_100k_first_paint_ms = Math.round(fl.painted); // since the navigation began
  timings.flame_100k_fetch_to_paint_ms = Math.round(fl.painted - res.fetch);
  timings.flame_100k_fetch_started_ms = Math.round(res.fetch);
  timings.flame_100k_server_ms = Math.round(res.first - res.fetch);
  timings.flame_100k_answer_received_ms = Math.round(res.end);
  timings.flame_100k_parse_ms = Math.round(fl.at - fl.draw_ms - fl.flatten_ms - res.end); // JSON parse and page render up to the tree
  timings.flame_100k_flatten_ms = Math.round(fl.flatten_ms);
  timings.flame_100k_draw_ms = Math.round(fl.draw_ms);
  timings.flame_100k_answer_bytes = res.bytes;
  const c2 = await page.locator('#flame canvas').boundingBox();
  const tz = await page.evaluate(() => performance.now());
  await page.mouse.click(c2.x + 30, c2.y + 18 + 9);
  await page.waitForFunction(() => location.hash.includes('zoom='), null, { timeout: 10000 });
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r())));
  timings.flame_100k_click_zoom_ms = Math.round((await page.evaluate(() => performance.now())) - tz);
  const ts = await page.evaluate(() => performance.now());
  await page.fill('#flame-search', 'Class17');
  await page.locator('#flame-found').waitFor({ timeout: 10000 });
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r())));
  timings.flame_100k_search_ms = Math.round((await page.evaluate(() => performance.now())) - ts);
  await shot('flame-100k');

  let bundle = 0;
  for (const f of readdirSync(path.join(webDir, 'assets'))) bundle += statSync(path.join(webDir, 'assets', f)).size;
  timings.bundle_bytes = bundle + statSync(path.join(webDir, 'index.html')).size;
  timings.loadavg = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  writeFileSync(path.join(outDir, 'timings.json'), `${JSON.stringify(timings, null, 2)}\n`);
  console.log('timings', JSON.stringify(timings));

  ok('no console error on any page', errors.length === 0, errors.join('\n'));
} catch (e) {
  fail++;
  console.error(`FAIL: ${e.stack || e}`);
  console.error(serverLog.split('\n').slice(-5).join('\n'));
} finally {
  await cleanup();
}
console.log(`${pass} passed, ${fail} failed`);
process.exit(fail ? 1 : 0);

