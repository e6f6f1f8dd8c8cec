// The 100,000-node flame graph's first paint, bundles compared in
// interleaved runs (docs/benchmarks.md "Dashboard"). Each bundle gets its
// own beatline-server on loopback (--web DIR) over its own copy of the
// bench data (test/seed.mjs seedBig: one build, 100,000 distinct call
// paths); then runs alternate between them. Printed per run (ms from
// navigation start unless said):
//   nav_to_paint   navigation → the frame after the draw (the first paint)
//   boot           navigation → the call-tree request sent (page, bundle, first render)
//   early          navigation → early.js sent the request ("early fetch")
//   html, js       navigation → index.html / the app's script received
//   app_start      navigation → the bundle's own code runs ("app start" mark)
//   render         the first render of the page's shell ("app first render")
//   server         request sent → first byte (the server's answer, queueing included)
//   transfer       first byte → last byte
//   parse          last byte → the answer parsed (JSON.parse; "api … body" measure)
//   layout         the flat tree made from the answer ("flame layout")
//   draw           the canvas drawn ("flame draw"); paint: draw end → painted
//   bytes          the answer's bytes on the wire (decoded: after Content-Encoding)
//   server_cpu_ms  the server's CPU (user+system) over the run; load: 1-min average
// Splits a bundle does not measure (an older one) are null.
//
//   node test/flame-bench.mjs BUILD_DIR OUT_DIR RUNS WEB_DIR [WEB_DIR...]
//
// A WEB_DIR given as SERVER_BUILD_DIR:WEB_DIR is served by that build's
// beatline-server (server and bundle compared together, before/after);
// beatline-batch always comes from BUILD_DIR.
//
// BENCH_COLD=1: before each run a tiny batch (another build) is posted
// and processed, so the server keeps no answer (http/tree_keep.c)
// and every run is a first render after new data; without it the first run
// of each server is such a one and the later ones may get a kept answer.
//
// Exits 1 with the reason when a server does not start, the data is not
// processed in time, the call tree cannot be read, or the page shows an
// error instead of the graph (never waits for a page that cannot come);
// 77 when there is no chromium. ctest web_flame_bench runs it once.
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { randomUUID } from 'node:crypto';
import { encode, seedBig } from './seed.mjs';

const [buildDir, outDir, runsArg, ...webs] = process.argv.slice(2);
if (!webs.length) { console.error('usage: flame-bench.mjs BUILD_DIR OUT_DIR RUNS WEB_DIR [WEB_DIR...]'); process.exit(2); }
const bin = path.resolve(buildDir, 'bin');
const exe = process.env.CHROMIUM || ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find(existsSync);
if (!exe) { console.log('no chromium'); process.exit(77); }
const sides = webs.map((a) => {
  const k = a.indexOf(':');
  return k > 0 ? { server: path.resolve(a.slice(0, k), 'bin/beatline-server'), web: a.slice(k + 1) }
    : { server: `${bin}/beatline-server`, web: a };
});
for (const { server, web } of sides) {
  if (!existsSync(path.join(web, 'index.html'))) { console.error(`flame-bench: no bundle in ${web} (index.html)`); process.exit(2); }
  if (!existsSync(server)) { console.error(`flame-bench: no ${server}`); process.exit(2); }
}
const NODES = 100000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const cpuTicks = (pid) => { const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' '); return Number(f[11]) + Number(f[12]); };
const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
const round = (x) => (x === null || x === undefined || Number.isNaN(x) ? null : Math.round(x));
rmSync(outDir, { recursive: true, force: true });
const servers = [];
let browser = null;

// A server on loopback over its own data dir, seeded and processed; throws
// with the reason when it cannot be used.
async function startServer(i, { server, web }) {
  const dir = path.resolve(outDir, `s${i}`);
  mkdirSync(dir, { recursive: true });
  const keys = JSON.parse(execFileSync(server, ['--data', `${dir}/data`, 'app', 'create', 'bench']).toString());
  const pf = `${dir}/port`;
  const proc = spawn(server, ['--data', `${dir}/data`, '--listen', '127.0.0.1:0', '--port-file', pf, '--web', path.resolve(web)], { stdio: ['ignore', 'ignore', 'pipe'] });
  const s = { proc, web, server, keys, exited: null, stderr: '' };
  servers.push(s);
  proc.stderr.on('data', (d) => { s.stderr = (s.stderr + d).slice(-4000); });
  proc.on('exit', (code, sig) => { s.exited = `${code ?? sig}`; });
  for (let k = 0; k < 400 && !s.exited && !(existsSync(pf) && readFileSync(pf, 'utf8').trim()); k++) await sleep(50);
  if (s.exited || !existsSync(pf)) throw new Error(`server ${i} did not start (exit ${s.exited}): ${s.stderr}`);
  s.url = `http://127.0.0.1:${readFileSync(pf, 'utf8').trim()}`;
  const t0 = Date.now();
  await seedBig({ bin, url: s.url, app: 'bench', keys, n: NODES });
  // the batch is processed in the background: bounded wait, then refuse
  let done = false;
  for (let k = 0; k < 2400 && !done && !s.exited; k++) {
    done = /^beatline_batches_processed_total [1-9]/m.test(await (await fetch(`${s.url}/metrics`)).text());
    if (!done) await sleep(50);
  }
  if (!done) throw new Error(`server ${i}: the bench batch was not processed within 120 s${s.exited ? ` (exited ${s.exited})` : ''}`);
  console.error(`flame-bench: server ${i} (${server}): seeded and processed in ${Date.now() - t0} ms, load ${load()}`);
  if (process.env.BENCH_COLD === '1') { // the names of build "cold" (commitSomething)
    const ids = await fetch(`${s.url}/v1/apps/bench/builds/cold/method-ids`, { method: 'PUT', headers: { Authorization: `Bearer ${keys.upload_key}` },
      body: '# beatline method-ids v1 names=original\n1,1,com.example.Cold run ()V\n' });
    if (ids.status !== 201) throw new Error(`server ${i}: method-ids of build cold: ${ids.status} ${await ids.text()}`);
  }
  // the answer the page asks for, read once: a server that cannot give it
  // (an older binary without format=columns, a failed seed) stops here
  const res = await fetch(`${s.url}/v1/apps/bench/call-tree?build=big&thread=all&limit=${NODES}&max_depth=4096&format=columns`,
    { headers: { Authorization: `Bearer ${keys.read_key}` } });
  const body = await res.text();
  let nodes = -1;
  try { nodes = JSON.parse(body).nodes; } catch { /* not JSON: reported below */ }
  if (res.status !== 200 || !(nodes > 0)) throw new Error(`server ${i} (${server}): call-tree?format=columns answered ${res.status} with ${nodes} nodes: ${body.slice(0, 300)}`);
  s.nodes = nodes;
}

const processedCount = async (s) => Number((/^beatline_batches_processed_total (\d+)/m.exec(await (await fetch(`${s.url}/metrics`)).text()) || [])[1] || 0);

// A commit on server s (BENCH_COLD): a one-call batch of build "cold",
// processed (bounded wait), then a moment for the server to settle.
async function commitSomething(s) {
  const before = await processedCount(s);
  const batch = JSON.stringify({
    batch_id: randomUUID(), app: 'bench', build: 'cold', session_id: 'cold', origin_wall_us: Date.now() * 1000 - 3600e6,
    device: { model: 'bench', os: '14', sdk: 34 },
    threads: [{ id: 1, name: 'main', main: true, truncated: false, records: [[1, 'i', 0], [1, 'o', 10]] }], events: [],
  });
  const res = await fetch(`${s.url}/v1/apps/bench/batches`, { method: 'POST', headers: { Authorization: `Bearer ${s.keys.ingest_key}` }, body: encode(bin, batch) });
  if (res.status !== 202) throw new Error(`cold batch: ${res.status} ${await res.text()}`);
  for (let k = 0; k < 600 && (await processedCount(s)) <= before; k++) await sleep(50);
  if ((await processedCount(s)) <= before) throw new Error('cold batch not processed within 30 s');
  await sleep(300);
}

// One first render of #/flame?build=big on server s: the split (above).
async function run(r, s) {
  if (process.env.BENCH_COLD === '1') await commitSomething(s);
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  try {
    const page = await ctx.newPage();
    const problems = [];
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
    await page.goto(`${s.url}/`);
    await page.evaluate((k) => { sessionStorage.setItem('beatline.app', 'bench'); sessionStorage.setItem('beatline.readKey', k); }, s.keys.read_key);
    await page.goto('about:blank');
    const c0 = cpuTicks(s.proc.pid);
    await page.goto(`${s.url}/#/flame?build=big`);
    // the graph, or the page's own error: whichever comes first. Polled
    // from here with a plain expression every 50 ms: waitForFunction would
    // inject playwright's utility script into the page while it loads
    // (70 ms of the renderer's time in a trace at load 14), charged to
    // every bundle's figures alike. The page stamps its own paint time.
    const state = () => page.evaluate('window.__beatlineFlame ? (window.__beatlineFlame.painted > 0 || !window.__beatlineFlame.at ? "painted" : "drawn") : document.querySelector(".error") ? "error" : ""');
    let st = '';
    for (let k = 0; k < 1200 && st !== 'painted' && st !== 'error'; k++) {
      st = await state();
      if (st !== 'painted' && st !== 'error') await sleep(50);
    }
    if (st === 'error') throw new Error(`the page shows an error: ${await page.innerText('.error')}; ${problems.join('; ')}`);
    if (st !== 'painted') {
      throw new Error(`no flame graph after 60 s; page: ${(await page.innerText('body').catch(() => '?')).slice(0, 300)}; ${problems.join('; ')}`);
    }
    // the frame after the one the draw went into: the page's own stamp, or
    // (an older bundle without it) one taken now
    const painted = await page.evaluate(() => window.__beatlineFlame.painted
      || new Promise((res) => requestAnimationFrame(() => setTimeout(() => res(performance.now()), 0))));
    const m = await page.evaluate(() => {
      const e = performance.getEntriesByType('resource').find((x) => x.name.includes('call-tree'));
      const meas = (name) => performance.getEntriesByType('measure').find((x) => x.name.startsWith(name)) || null;
      const body = meas('api /call-tree body');
      const layout = meas('flame layout');
      const draw = meas('flame draw');
      const app = performance.getEntriesByName('app start')[0];
      const first = meas('app first render');
      const early = performance.getEntriesByName('early fetch')[0];
      const nav = performance.getEntriesByType('navigation')[0];
      const js = performance.getEntriesByType('resource').find((x) => /app-[A-Z0-9]+\.js/.test(x.name));
      return {
        render: first ? first.duration : null, early: early ? early.startTime : null, html: nav ? nav.responseEnd : null, js: js ? js.responseEnd : null,
        app: app ? app.startTime : null,
        fetch: e.startTime, first: e.responseStart, last: e.responseEnd, bytes: e.encodedBodySize, decoded: e.decodedBodySize,
        bodyEnd: body ? body.startTime + body.duration : null, layout: layout ? layout.duration : null,
        draw: draw ? draw.duration : null, drawEnd: draw ? draw.startTime + draw.duration : null,
      };
    });
    const cpu = (cpuTicks(s.proc.pid) - c0) * 10;
    console.log(JSON.stringify({
      run: r, web: s.web, nav_to_paint_ms: round(painted), boot_ms: round(m.fetch), early_ms: round(m.early), html_ms: round(m.html), js_ms: round(m.js), app_start_ms: round(m.app), render_ms: round(m.render), server_ms: round(m.first - m.fetch),
      transfer_ms: round(m.last - m.first), parse_ms: m.bodyEnd === null ? null : round(m.bodyEnd - m.last),
      layout_ms: round(m.layout), draw_ms: round(m.draw), paint_ms: m.drawEnd === null ? null : round(painted - m.drawEnd),
      bytes: m.bytes, decoded_bytes: m.decoded, server_cpu_ms: cpu, load: load(), cold: process.env.BENCH_COLD === '1' || r === 0,
    }));
  } finally {
    await ctx.close();
  }
}

let failed = false;
try {
  for (const [i, side] of sides.entries()) await startServer(i, side);
  browser = await chromium.launch({ executablePath: exe, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  const runs = Number(runsArg) || 5;
  for (let r = 0; r < runs; r++) for (const s of servers) await run(r, s);
} catch (e) {
  console.error(`flame-bench: ${e.message}`);
  failed = true;
} finally {
  if (browser) await browser.close().catch(() => {});
  for (const s of servers) if (!s.exited) s.proc.kill('SIGTERM');
}
process.exit(failed ? 1 : 0);
