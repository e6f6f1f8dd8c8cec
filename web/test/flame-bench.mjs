// The 100,000-node flame graph's first paint, bundles compared in
// interleaved runs (docs/benchmarks.md "Dashboard"). Each bundle gets its
// own beatline-server on loopback (--web DIR) over its own copy of the
// bench data (test/seed.mjs seedBig: one build, 100,000 distinct call
// paths); then runs alternate between them. Printed per run: navigation →
// first paint, fetch start → first paint, server time (fetch → first
// byte), answer bytes, and the server's CPU (user+system) for the run.
//
//   node test/flame-bench.mjs BUILD_DIR OUT_DIR RUNS WEB_DIR [WEB_DIR...]
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { seedBig } from './seed.mjs';

const [buildDir, outDir, runsArg, ...webs] = process.argv.slice(2);
if (!webs.length) { console.error('usage: flame-bench.mjs BUILD_DIR OUT_DIR RUNS WEB_DIR [WEB_DIR...]'); process.exit(2); }
const bin = path.resolve(buildDir, 'bin');
const exe = process.env.CHROMIUM || ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find(existsSync);
if (!exe) { console.log('no chromium'); process.exit(77); }
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const cpuTicks = (pid) => { const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' '); return Number(f[11]) + Number(f[12]); };
rmSync(outDir, { recursive: true, force: true });
const servers = [];
let browser = null;
try {
  for (const [i, web] of webs.entries()) {
    const dir = path.resolve(outDir, `s${i}`);
    mkdirSync(dir, { recursive: true });
    const keys = JSON.parse(execFileSync(`${bin}/beatline-server`, ['--data', `${dir}/data`, 'app', 'create', 'bench']).toString());
    const pf = `${dir}/port`;
    const proc = spawn(`${bin}/beatline-server`, ['--data', `${dir}/data`, '--listen', '127.0.0.1:0', '--port-file', pf, '--web', path.resolve(web)], { stdio: 'ignore' });
    servers.push({ proc, web, keys });
    for (let k = 0; k < 400 && !existsSync(pf); k++) await sleep(50);
    const url = `http://127.0.0.1:${readFileSync(pf, 'utf8').trim()}`;
    servers[i].url = url;
    await seedBig({ bin, url, app: 'bench', keys, n: 100000 });
    for (let k = 0; k < 1200; k++) {
      if (/^beatline_batches_processed_total 1/m.test(await (await fetch(`${url}/metrics`)).text())) break;
      await sleep(50);
    }
  }
  browser = await chromium.launch({ executablePath: exe, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  const runs = Number(runsArg) || 5;
  for (let r = 0; r < runs; r++) {
    for (const s of servers) {
      const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const page = await ctx.newPage();
      await page.goto(`${s.url}/`);
      await page.evaluate((k) => { sessionStorage.setItem('beatline.app', 'bench'); sessionStorage.setItem('beatline.readKey', k); }, s.keys.read_key);
      await page.goto('about:blank');
      const c0 = cpuTicks(s.proc.pid);
      await page.goto(`${s.url}/#/flame?build=big`);
      await page.waitForFunction(() => window.__beatlineFlame, null, { timeout: 120000 });
      // the frame after the one the draw went into (both bundles alike)
      const painted = await page.evaluate(() => new Promise((res) => requestAnimationFrame(() => setTimeout(() => res(performance.now()), 0))));
      const e = await page.evaluate(() => performance.getEntriesByType('resource').filter((x) => x.name.includes('call-tree'))
        .map((x) => ({ fetch: x.startTime, first: x.responseStart, bytes: x.encodedBodySize }))[0]);
      const cpu = (cpuTicks(s.proc.pid) - c0) * 10;
      const load = readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
      console.log(JSON.stringify({ run: r, web: s.web, nav_to_paint_ms: Math.round(painted), fetch_to_paint_ms: Math.round(painted - e.fetch),
        server_ms: Math.round(e.first - e.fetch), bytes: e.bytes, server_cpu_ms: cpu, load }));
      await ctx.close();
    }
  }
} finally {
  if (browser) await browser.close().catch(() => {});
  for (const s of servers) s.proc.kill('SIGTERM');
}
