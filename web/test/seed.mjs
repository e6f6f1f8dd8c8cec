// Test data for the browser tests: an app's two builds, obfuscated by a
// ProGuard-style mapping (so every name the pages show went through the
// server's retrace), with batches of nested calls on the main thread and a
// worker, and main-thread blocks (one an ANR with its sampled stack).
// Batches are written as JSON and encoded by beatline-batch (wire format
// v1, schema/batch-format.md), then posted like an app does.
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';

// original class, method, descriptor, obfuscated class, obfuscated method
const METHODS = [
  ['com.example.shop.MainActivity', 'onCreate', '(Landroid/os/Bundle;)V', 'a.a', 'a', 'void onCreate(android.os.Bundle)'],
  ['com.example.shop.feed.FeedFragment', 'onViewCreated', '()V', 'b.a', 'a', 'void onViewCreated()'],
  ['com.example.shop.feed.FeedAdapter', 'onBindViewHolder', '(I)V', 'b.b', 'a', 'void onBindViewHolder(int)'],
  ['com.example.shop.feed.FeedRepository', 'load', '()Ljava/util/List;', 'b.c', 'a', 'java.util.List load()'],
  ['com.example.shop.db.Database', 'query', '(Ljava/lang/String;)Landroid/database/Cursor;', 'c.a', 'a', 'android.database.Cursor query(java.lang.String)'],
  ['com.example.shop.db.Database', 'migrate', '()V', 'c.a', 'b', 'void migrate()'],
  ['com.example.shop.net.JsonParser', 'parse', '(Ljava/lang/String;)Ljava/lang/Object;', 'd.a', 'a', 'java.lang.Object parse(java.lang.String)'],
  ['com.example.shop.net.HttpClient', 'execute', '(Ljava/lang/String;)[B', 'd.b', 'a', 'byte[] execute(java.lang.String)'],
  ['com.example.shop.image.ImageLoader', 'decode', '([B)Landroid/graphics/Bitmap;', 'e.a', 'a', 'android.graphics.Bitmap decode(byte[])'],
  ['com.example.shop.image.ImageLoader', 'resize', '(II)V', 'e.a', 'b', 'void resize(int,int)'],
  ['com.example.shop.util.Strings', 'format', '(Ljava/lang/String;)Ljava/lang/String;', 'f.a', 'a', 'java.lang.String format(java.lang.String)'],
  ['com.example.shop.util.Strings', 'isBlank', '(Ljava/lang/CharSequence;)Z', 'f.a', 'b', 'boolean isBlank(java.lang.CharSequence)'],
  ['com.example.shop.cart.CartViewModel', 'total', '()J', 'g.a', 'a', 'long total()'],
  ['com.example.shop.cart.PriceCalculator', 'compute', '(Ljava/util/List;)J', 'g.b', 'a', 'long compute(java.util.List)'],
  ['com.example.shop.sync.SyncWorker', 'doWork', '()V', 'h.a', 'a', 'void doWork()'],
  ['com.example.shop.sync.SyncWorker', 'upload', '([B)V', 'h.a', 'b', 'void upload(byte[])'],
];

export function methodIdFile() {
  const lines = ['# beatline method-ids v1 names=obfuscated'];
  METHODS.forEach((m, i) => lines.push(`${i + 1},1,${m[3]} ${m[4]} ${m[2].replace(/Lcom\/example\/shop\/[^;]*;/g, 'Ljava/lang/Object;')}`));
  return `${lines.join('\n')}\n`;
}
export function mappingFile() {
  const byClass = new Map();
  for (const m of METHODS) {
    if (!byClass.has(m[0])) byClass.set(m[0], { obf: m[3], lines: [] });
    byClass.get(m[0]).lines.push(`    ${m[5]} -> ${m[4]}`);
  }
  let out = '';
  for (const [cls, v] of byClass) out += `${cls} -> ${v.obf}:\n${v.lines.join('\n')}\n`;
  return out;
}

const ID = Object.fromEntries(METHODS.map((m, i) => [`${m[0].split('.').pop()}.${m[1]}`, i + 1]));

// a deterministic random source
function rng(seed) {
  let s = seed >>> 0;
  return () => { s = (s * 1664525 + 1013904223) >>> 0; return s / 2 ** 32; };
}

// records of one call tree: spec [name, selfUs, [children]] from t
function emit(spec, t, out, jitter) {
  const [name, self, kids = []] = spec;
  out.push([ID[name], 'i', t]);
  let now = t + Math.round(self * jitter() / 2);
  for (const k of kids) now = emit(k, now + 1, out, jitter) + 1;
  now += Math.round(self * jitter() / 2);
  out.push([ID[name], 'o', now]);
  return now;
}

// one screen of the app; slow: how much slower the database is (a regression)
function screen(slow, r) {
  const rows = Array.from({ length: 3 + Math.floor(r() * 4) }, () => ['FeedAdapter.onBindViewHolder', 300, [
    ['Strings.format', 40 + Math.round(r() * 60)], ['ImageLoader.resize', 200, [['Strings.isBlank', 5]]]]]);
  return ['MainActivity.onCreate', 2000, [
    ['Database.migrate', 3000],
    ['FeedFragment.onViewCreated', 500, [
      ['FeedRepository.load', 800, [['Database.query', Math.round((6000 + r() * 9000) * slow)], ['JsonParser.parse', 4000 + r() * 2000]]],
      ...rows,
      ['CartViewModel.total', 100, [['PriceCalculator.compute', 900 + r() * 400]]],
    ]],
  ]];
}
const worker = (r) => ['SyncWorker.doWork', 400, [
  ['HttpClient.execute', 30000 + r() * 20000], ['JsonParser.parse', 3000], ['SyncWorker.upload', 8000, [['HttpClient.execute', 12000]]],
  ['ImageLoader.decode', 15000 + r() * 5000]]];

// The app's requests (network events, /work/notes contract-network): path
// maker, HTTP method, host, caller, status maker (u: a random 0..1)
const REQUESTS = [
  [(u) => `/v2/feed/${1000 + Math.floor(u * 9000)}`, 'GET', 'api.shop.example', 'FeedRepository.load', () => 200],
  [(u) => `/v2/users/${u < 0.5 ? '3f2a1b9c-0d4e-4f5a-8b6c-7d8e9f0a1b2c' : '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d'}/cart`, 'GET', 'api.shop.example', 'CartViewModel.total', (u) => (u < 0.2 ? 404 : 200)],
  [() => '/v2/sync/upload', 'POST', 'api.shop.example', 'SyncWorker.upload', (u, slow) => (slow > 1 && u < 0.4 ? 503 : 201)],
  [(u) => `/img/${Math.floor(u * 2 ** 32).toString(16).padStart(8, '0')}a1b2c3d4e5f6.jpg`, 'GET', 'cdn.shop.example', 'ImageLoader.decode', () => 200],
];

// network events of one batch: n requests from time t on, every 5 ms
function networkEvents(r, device, n, slow) {
  const out = [];
  for (let k = 0; k < n; k++) {
    const [path, method, host, caller, status] = REQUESTS[k % REQUESTS.length];
    const dns = 200 + Math.round(r() * 800); const connect = 1000 + Math.round(r() * 2000); const tls = 3000 + Math.round(r() * 5000);
    const ttfb = Math.round((20000 + r() * 60000) * (method === 'POST' ? slow : 1));
    const body = 1000 + Math.round(r() * 9000);
    const total = dns + connect + tls + 100 + ttfb + body;
    const begin = 1000 + k * 5000;
    const st = status(r(), slow);
    out.push({ type: 'network', device, thread_name: method === 'POST' ? 'sync' : 'main', begin_us: begin, end_us: begin + total,
      method, scheme: 'https', host, port: 443, path: path(r()), status: st, protocol: 'h2', error: null,
      bytes_out: method === 'POST' ? 20000 + Math.round(r() * 5000) : 300, bytes_in: st >= 400 ? 120 : 5000 + Math.round(r() * 40000),
      dns_us: dns, connect_us: connect, tls_us: tls, request_us: 100, ttfb_us: ttfb, body_us: body, total_us: total, reused: false, caller: ID[caller] });
  }
  // one request that failed before a response
  out.push({ type: 'network', device, thread_name: 'sync', begin_us: 900, end_us: 10900, method: 'GET', scheme: 'https', host: 'api.shop.example', port: 443,
    path: '/v2/config', error: 'java.net.SocketTimeoutException', bytes_out: 250, bytes_in: 0, total_us: 10000, caller: ID['HttpClient.execute'] });
  return out;
}

// a launch event (contract-launch) whose call tree is the first screen (it ends at end)
function launchEvent(kind, r, device, end) {
  const ev = { type: 'launch', kind, thread: 0, device, start_us: kind === 'cold' ? -60000 : kind === 'warm' ? 0 : end + 2, phases: {}, first_frame_us: end + 40, activity: 'a.a' };
  if (kind === 'cold') {
    ev.phases.application_attach_base_context = [-50000, -46000 + Math.round(r() * 2000)];
    ev.phases.application_on_create = [-45000, -12000 + Math.round(r() * 8000)];
    ev.fully_drawn_us = end + 20000 + Math.round(r() * 30000);
  }
  if (kind !== 'hot') ev.phases.activity_on_create = [0, end];
  ev.phases.activity_on_start = [end + 2, end + 8 + Math.round(r() * 10)];
  ev.phases.activity_on_resume = [end + 20, end + 30 + Math.round(r() * 9)];
  return ev;
}

// One batch as JSON text: screens on the main thread, syncs on a worker,
// a block event around the slowest screen (an ANR when anr), a launch
// event (launch: its kind) and network events. Launch and network events are
// skipped by a server without them (unknown type).
export function batchJson({ app, build, session, device, origin, screens, slow, seed, anr, launch }) {
  const r = rng(seed);
  const re = rng(seed + 5000); // the events' own (the calls stay as they were)
  const jitter = () => 0.6 + r() * 0.8;
  const main = [];
  const work = [];
  let t = 0;
  const events = [];
  for (let s = 0; s < screens; s++) {
    const begin = t;
    t = emit(screen(slow, r), t, main, jitter) + 50;
    if (s === 0 && launch) events.push(launchEvent(launch, re, device, t - 50));
    if (s === 0) events.push({ type: 'block', thread: 0, begin_us: begin, end_us: t - 10, target: 'android.os.Handler/a.a$1', kind: 'looper', device, anr: !!anr, ...(anr ? { stack: ['c.a.a(SourceFile:12)', 'b.c.a(SourceFile:30)', 'b.a.a(SourceFile:8)', 'a.a.a(SourceFile:21)', 'android.os.Looper.loop(Looper.java:288)'] } : {}) });
    t += 1000;
  }
  let wt = 0;
  for (let s = 0; s < Math.max(1, screens >> 1); s++) wt = emit(worker(r), wt, work, jitter) + 100;
  events.push(...networkEvents(re, device, 8, slow));
  return JSON.stringify({
    batch_id: randomUUID(), app, build, session_id: session, origin_wall_us: origin,
    device: { model: 'Pixel 7', os: '14', sdk: 34 },
    threads: [{ id: 1, name: 'main', main: true, truncated: false, records: main },
      { id: 2, name: 'sync', main: false, truncated: false, records: work }],
    events,
  });
}

export function encode(bin, json) {
  return execFileSync(`${bin}/beatline-batch`, ['encode'], { input: json, maxBuffer: 1 << 28 });
}

async function req(url, method, key, body) {
  const res = await fetch(url, { method, headers: { Authorization: `Bearer ${key}` }, body });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${text}`);
  return text;
}

// Uploads both builds' files and posts their batches; returns the number
// of batches posted.
export async function seed({ bin, url, app, keys }) {
  const now = Date.now() * 1000;
  let posted = 0;
  for (const [bi, build] of ['7.0', '7.1'].entries()) {
    await req(`${url}/v1/apps/${app}/builds/${build}/mapping`, 'PUT', keys.upload_key, mappingFile());
    await req(`${url}/v1/apps/${app}/builds/${build}/method-ids`, 'PUT', keys.upload_key, methodIdFile());
    for (let b = 0; b < 6; b++) {
      const json = batchJson({
        app, build, session: `s-${build}-${b}`, device: `dev-${b % 3}`,
        origin: now - (6 - b) * 3600e6 - (1 - bi) * 86400e6, screens: 6, slow: bi ? 3 : 1, seed: 17 + b + 100 * bi, anr: bi === 1 && b === 5,
        launch: ['cold', 'cold', 'warm', 'cold', 'hot', 'warm'][b],
      });
      await req(`${url}/v1/apps/${app}/batches`, 'POST', keys.ingest_key, encode(bin, json));
      posted++;
    }
  }
  return posted;
}

// A build "big" whose merged call tree has exactly n nodes (distinct call
// paths: the children of a node are distinct methods), all on the main
// thread: the 100,000-node flame graph of docs/benchmarks.md, through the
// server like any data. Returns {ids, batch} (method-ID file text, JSON).
export function bigBuild(app, n, origin) {
  const M = 64;
  const ids = ['# beatline method-ids v1 names=original'];
  for (let i = 1; i <= M; i++) ids.push(`${i},1,com.example.big.pkg${i % 7}.Class${i} method${i} ()V`);
  const r = rng(99);
  // tree by breadth: parent index, method id
  const parent = [-1];
  const mid = [1];
  const kids = [[]];
  for (let h = 0; parent.length < n && h < parent.length; h++) {
    const k = 1 + Math.floor(r() * 6);
    const used = new Set();
    for (let i = 0; i < k && parent.length < n; i++) {
      let m;
      do m = 1 + Math.floor(r() * M); while (used.has(m));
      used.add(m);
      parent.push(h); mid.push(m); kids.push([]);
      kids[h].push(parent.length - 1);
    }
  }
  const recs = [];
  let t = 0;
  // depth first, iteratively: [node, entered]
  const st = [[0, false]];
  while (st.length) {
    const top = st.pop();
    const [x, entered] = top;
    if (entered) { t += 1 + Math.floor(r() * 50); recs.push([mid[x], 'o', t]); continue; }
    t += 1 + Math.floor(r() * 50);
    recs.push([mid[x], 'i', t]);
    st.push([x, true]);
    for (let k = kids[x].length - 1; k >= 0; k--) st.push([kids[x][k], false]);
  }
  const batch = JSON.stringify({
    batch_id: randomUUID(), app, build: 'big', session_id: 'big', origin_wall_us: origin,
    device: { model: 'bench', os: '14', sdk: 34 },
    threads: [{ id: 1, name: 'main', main: true, truncated: false, records: recs }], events: [],
  });
  return { ids: `${ids.join('\n')}\n`, batch };
}

export async function seedBig({ bin, url, app, keys, n }) {
  const { ids, batch } = bigBuild(app, n, Date.now() * 1000 - 3600e6);
  await req(`${url}/v1/apps/${app}/builds/big/method-ids`, 'PUT', keys.upload_key, ids);
  await req(`${url}/v1/apps/${app}/batches`, 'POST', keys.ingest_key, encode(bin, batch));
}
