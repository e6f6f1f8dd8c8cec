// Beatline's dashboard: Preact pages over the JSON API (docs/api.md).
// Every view's state is in the URL's fragment (#/page?build=…&…), so a
// link opens the same view; the read key is never part of it.
import { render } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import 'uplot/dist/uPlot.min.css';
import './style.css';
import { api, ApiError, apiUrl, health, keyMessage, metric, session } from './api.js';
import { download, toChromeTrace, toSpeedscope } from './export.js';
import { FlameGraph, flatten, methodOf, nodeOfPath, nodePath, treeOf } from './flame.js';
import { flameQuery, parseHash } from './route.js';
import { fmtBytes, fmtDur, fmtInt, fmtPct, fmtTime, methodKey, methodName, shortName } from './format.js';

// a method's name with line-break chances after its dots (narrow screens)
function Name({ m }) {
  const parts = methodName(m).split('.');
  return <>{parts.map((p, i) => (i < parts.length - 1 ? <>{p}.<wbr /></> : p))}</>;
}

// ---- routing --------------------------------------------------------------
function href(page, params = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, v);
  const s = q.toString();
  return `#/${page}${s ? `?${s}` : ''}`;
}
function go(page, params, replace = false) {
  const h = href(page, params);
  if (replace) history.replaceState(null, '', h);
  else history.pushState(null, '', h);
  window.dispatchEvent(new Event('beatline:route'));
}
function useRoute() {
  const [r, setR] = useState(parseHash);
  useEffect(() => {
    const f = () => setR(parseHash());
    window.addEventListener('hashchange', f);
    window.addEventListener('popstate', f);
    window.addEventListener('beatline:route', f);
    return () => { window.removeEventListener('hashchange', f); window.removeEventListener('popstate', f); window.removeEventListener('beatline:route', f); };
  }, []);
  return r;
}
// a page's params with one change, written to the URL (replace: filters)
const setParam = (page, params, k, v) => go(page, { ...params, [k]: v }, true);

// ---- data loading ---------------------------------------------------------
// The response of a request early.js sent before the app loaded, when it is
// this one (same URL); taken once.
function takeEarly(path, params) {
  const e = window.__beatlineEarly;
  if (!e || e.url !== apiUrl(path, params)) return undefined;
  delete window.__beatlineEarly;
  return e.res;
}

// enabled false: nothing is asked (yet); the state stays loading
function useApi(path, params, deps, enabled = true) {
  const [s, setS] = useState({ loading: true });
  useEffect(() => {
    if (!enabled) return undefined;
    const ac = new AbortController();
    setS((o) => ({ ...o, loading: true, error: null }));
    api(path, params, { signal: ac.signal, started: takeEarly(path, params) })
      .then((data) => { if (!ac.signal.aborted) setS({ data, loading: false }); })
      .catch((e) => { if (e.name !== 'AbortError' && !ac.signal.aborted) setS({ error: e, loading: false }); });
    return () => ac.abort();
  }, [...deps, enabled]);
  return s;
}
function useBuilds() {
  return useApi('/builds', {}, []);
}

function Status({ s, what }) {
  if (s.error) {
    if (s.error.status === 401 || s.error.status === 403) {
      return <p class="error" role="alert">The read key was refused ({s.error.message}). <a href="#/signin" onClick={() => session.clear()}>Sign in again</a>.</p>;
    }
    return <p class="error" role="alert">Cannot load {what}: {s.error.message}</p>;
  }
  if (s.loading && !s.data) return <p class="muted" aria-live="polite">Loading {what}…</p>;
  return null;
}

// builds newest first
const newestFirst = (builds) => [...builds].sort((a, b) => b.created_at - a.created_at);

function BuildSelect({ builds, value, onChange, allowAll = true, label = 'Build' }) {
  return (
    <label>{label}{' '}
      <select value={value || ''} onChange={(e) => onChange(e.target.value)} aria-label={label === 'Build' ? 'build' : `${label.toLowerCase()} build`}>
        {allowAll && <option value="">{allowAll === true ? 'all builds' : allowAll}</option>}
        {newestFirst(builds || []).map((b) => <option value={b.build}>{b.build}</option>)}
      </select>
    </label>
  );
}
function ThreadSelect({ value, onChange }) {
  return (
    <label>Thread{' '}
      <select value={value || 'all'} onChange={(e) => onChange(e.target.value)} aria-label="thread">
        <option value="all">all threads</option>
        <option value="main">main thread</option>
      </select>
    </label>
  );
}

// ---- sign-in --------------------------------------------------------------
function SignIn({ next }) {
  const [app, setApp] = useState(session.app || '');
  const [key, setKey] = useState('');
  const [err, setErr] = useState('');
  const [busy, setBusy] = useState(false);
  async function submit(e) {
    e.preventDefault();
    setErr('');
    if (!app.trim() || !key.trim()) { setErr('Enter the app name and its read key.'); return; }
    setBusy(true);
    try {
      await api('/builds', {}, { app: app.trim(), key: key.trim() });
      session.set(app.trim(), key.trim());
      setKey('');
      // a deep link that led here opens once signed in
      if (next === 'signin') go('overview', {}, true);
      else window.dispatchEvent(new Event('beatline:route'));
    } catch (x) {
      setErr(x instanceof ApiError ? keyMessage(x, app.trim()) : 'Cannot sign in.');
    } finally { setBusy(false); }
  }
  return (
    <main class="signin">
      <h1>Beatline</h1>
      <p class="muted">Method-level performance of your app's builds. Sign in with the app's read key (<code>beatline-server app create</code> prints it). It is kept in this tab only.</p>
      <form onSubmit={submit} autocomplete="off">
        <label>App <input name="app" value={app} onInput={(e) => setApp(e.target.value)} autofocus /></label>
        <label>Read key <input name="key" type="password" value={key} onInput={(e) => setKey(e.target.value)} /></label>
        <button type="submit" disabled={busy}>{busy ? 'Checking…' : 'Sign in'}</button>
        {err && <p class="error" role="alert" id="signin-error">{err}</p>}
      </form>
    </main>
  );
}

// ---- overview -------------------------------------------------------------
function Overview() {
  const b = useBuilds();
  const [h, setH] = useState(null);
  const [waiting, setWaiting] = useState(null);
  useEffect(() => { health().then(setH); metric('beatline_batches_waiting').then(setWaiting); }, []);
  const builds = b.data ? newestFirst(b.data.builds) : [];
  return (
    <section>
      <h2>Overview</h2>
      <p>Server: {h ? <span class={`badge ${h.status === 'ok' ? 'ok' : 'bad'}`}>{h.status}</span> : '…'}
        {h && h.error ? ` — ${h.error}` : ''}
        {waiting != null && <> · batches waiting for their build's uploads (all apps): <b>{fmtInt(waiting)}</b></>}</p>
      <Status s={b} what="builds" />
      {b.data && (builds.length ? (
        <div class="scroll"><table class="grid" id="builds">
          <thead><tr><th>Build</th><th>Created</th><th class="num">Batches</th><th class="num">Records</th><th>Method IDs</th><th>Mapping</th><th>Status</th><th /></tr></thead>
          <tbody>{builds.map((x) => (
            <tr>
              <td><b>{x.build}</b></td>
              <td>{fmtTime(x.created_at)}</td>
              <td class="num">{fmtInt(x.batches)}</td>
              <td class="num">{fmtInt(x.records)}</td>
              <td>{x.method_ids ? `${fmtInt(x.method_ids.methods)} methods (${x.method_ids.names})` : <span class="warn">missing: batches wait</span>}</td>
              <td>{x.mapping ? fmtBytes(x.mapping.bytes) : 'none'}</td>
              <td>{x.symbolicated ? <span class="badge ok">symbolicated</span> : <span class="badge bad">waiting for uploads</span>}
                {x.warnings && x.warnings.map((w) => <div class="warn">{w}</div>)}</td>
              <td class="links"><a href={href('slow', { build: x.build })}>slow methods</a> <a href={href('flame', { build: x.build })}>flame graph</a> <a href={href('blocks', { build: x.build })}>blocks</a> <a href={href('launches', { build: x.build })}>launches</a> <a href={href('network', { build: x.build })}>network</a> <a href={href('compare', { b: x.build })}>compare</a></td>
            </tr>))}</tbody>
        </table></div>) : <p>No builds yet: upload a build's method-ID file and post batches (see the README).</p>)}
    </section>
  );
}

// ---- slow methods ---------------------------------------------------------
const SORTS = [['count', 'Calls'], ['total', 'Total'], ['self', 'Self'], ['p50', 'p50'], ['p90', 'p90'], ['p99', 'p99'], ['max', 'Max']];
const FIELD = { count: 'count', total: 'total_us', self: 'self_us', p50: 'p50_us', p90: 'p90_us', p99: 'p99_us', max: 'max_us' };
const RANGES = [['', 'all time'], ['3600', 'last hour'], ['86400', 'last 24 h'], ['604800', 'last 7 days'], ['2592000', 'last 30 days']];

function sinceOf(range) {
  return range ? String(Math.floor(Date.now() / 1000) - Number(range)) : undefined;
}

function UnitSelect({ value, onChange }) {
  return (
    <label>Units{' '}
      <select value={value || 'auto'} onChange={(e) => onChange(e.target.value)} aria-label="units">
        <option value="auto">auto</option><option value="us">µs</option><option value="ms">ms</option><option value="s">s</option>
      </select>
    </label>
  );
}

function SlowMethods({ params }) {
  const P = (k, v) => setParam('slow', params, k, v);
  const builds = useBuilds();
  const sort = params.sort || 'total';
  const thread = params.thread || 'all';
  const unit = params.unit || 'auto';
  const limit = params.limit || '1000';
  const since = useMemo(() => sinceOf(params.range), [params.range]);
  const s = useApi('/slow-methods', { build: params.build, thread, sort, since, limit }, [params.build, thread, sort, since, limit]);
  const q = (params.q || '').toLowerCase();
  const rows = s.data ? s.data.methods.filter((m) => !q || methodName(m.method, true).toLowerCase().includes(q)) : [];
  useEffect(() => { if (s.data) window.__beatlineRendered = performance.now(); }, [s.data]);
  return (
    <section>
      <h2>Slow methods</h2>
      <div class="filters" role="group" aria-label="filters">
        <BuildSelect builds={builds.data && builds.data.builds} value={params.build} onChange={(v) => P('build', v)} />
        <ThreadSelect value={thread} onChange={(v) => P('thread', v)} />
        <label>Time{' '}
          <select value={params.range || ''} onChange={(e) => P('range', e.target.value)} aria-label="time range">
            {RANGES.map(([v, l]) => <option value={v}>{l}</option>)}
          </select>
        </label>
        <label>Search <input type="search" placeholder="class or method" value={params.q || ''} onInput={(e) => P('q', e.target.value)} aria-label="search methods" /></label>
        <UnitSelect value={unit} onChange={(v) => P('unit', v)} />
      </div>
      <Status s={s} what="slow methods" />
      {s.data && (
        <>
          <p class="muted">{rows.length === s.data.methods.length ? `${fmtInt(rows.length)} methods` : `${fmtInt(rows.length)} of ${fmtInt(s.data.methods.length)} methods match`}
            {s.data.methods.length >= Number(limit) ? ` (the first ${limit} by ${sort}; search looks at these)` : ''}. Sorted by {sort}, descending; click a column to sort by it. Percentiles of a call's inclusive time.</p>
          <div class="scroll"><table class="grid" id="slow-table">
            <thead><tr><th>Method</th>{SORTS.map(([k, l]) => (
              <th class="num" aria-sort={k === sort ? 'descending' : 'none'}>
                <button class={`sort ${k === sort ? 'on' : ''}`} onClick={() => P('sort', k)}>{l}{k === sort ? ' ▼' : ''}</button>
              </th>))}</tr></thead>
            <tbody>{rows.map((m) => (
              <tr>
                <td class="method"><a href={href('method', { build: params.build, thread, m: methodKey(m.method) })} title={methodName(m.method, true)}><Name m={m.method} /></a></td>
                {SORTS.map(([k]) => <td class="num">{k === 'count' ? fmtInt(m.count) : fmtDur(m[FIELD[k]], unit)}</td>)}
              </tr>))}</tbody>
          </table></div>
        </>
      )}
    </section>
  );
}

// ---- method page ----------------------------------------------------------
// A uPlot chart. uPlot (half the app's script) is loaded when a chart is
// first shown, not with the app: the flame graph page starts without it.
// A series with `bars: [width, max px]` is drawn as bars.
function Chart({ opts, data }) {
  const ref = useRef(null);
  useEffect(() => {
    if (!ref.current) return undefined;
    let u = null;
    let live = true;
    import('uplot').then(({ default: UPlot }) => {
      if (!live || !ref.current) return;
      const w = Math.max(280, Math.min(900, ref.current.clientWidth));
      const series = opts.series.map(({ bars, ...sr }) => (bars ? { ...sr, paths: UPlot.paths.bars({ size: bars }) } : sr));
      u = new UPlot({ ...opts, series, width: w, height: 260 }, data, ref.current);
    });
    return () => { live = false; if (u) u.destroy(); };
  }, [JSON.stringify(data)]);
  return <div class="chart" ref={ref} />;
}

// callers and callees of a method from a merged call tree (flat, flame.js):
// every node of the method, its parent (caller) and children (callees),
// summed per method
function relatives(t, key) {
  const callers = new Map();
  const callees = new Map();
  const keys = t.methods.map((m) => (m ? methodKey(m) : '(root)'));
  const add = (map, i, n) => {
    const k = i < 0 ? '(root)' : keys[t.mi[i]];
    const e = map.get(k) || { method: i < 0 ? null : methodOf(t, i), count: 0, total_us: 0 };
    e.count += t.count[n]; e.total_us += t.w[n];
    map.set(k, e);
  };
  for (let i = 0; i < t.n; i++) {
    if (keys[t.mi[i]] !== key) continue;
    add(callers, t.parent[i], i);
    for (let c = i + 1; c < t.end[i]; c = t.end[c]) add(callees, c, c);
  }
  const sorted = (m) => [...m.values()].sort((a, b) => b.total_us - a.total_us);
  return { callers: sorted(callers), callees: sorted(callees) };
}

function Relatives({ title, rows, params, id }) {
  return (
    <div class="half">
      <h3>{title}</h3>
      {rows.length ? (
        <table class="grid" id={id}><thead><tr><th>Method</th><th class="num">Calls</th><th class="num">Total</th></tr></thead>
          <tbody>{rows.slice(0, 50).map((r) => (
            <tr><td class="method">{r.method ? <a href={href('method', { ...params, m: methodKey(r.method) })}><Name m={r.method} /></a> : <i>(a root: no caller)</i>}</td>
              <td class="num">{fmtInt(r.count)}</td><td class="num">{fmtDur(r.total_us, params.unit)}</td></tr>))}</tbody>
        </table>) : <p class="muted">none</p>}
    </div>
  );
}

// the API lists non-empty buckets only; the chart shows the empty ones
// between them too (8 per power of two: a bucket from lo is 2^(e-3) wide,
// e = floor(log2 lo); 1 µs below 8 µs), at most 400
function withEmptyBuckets(bs) {
  const out = [];
  for (let k = 0; k < bs.length; k++) {
    out.push(bs[k]);
    if (k + 1 === bs.length) break;
    let lo = bs[k].hi_us + 1;
    while (lo < bs[k + 1].lo_us && out.length < 400) {
      const w = lo < 8 ? 1 : 2 ** (Math.floor(Math.log2(lo)) - 3);
      out.push({ lo_us: lo, hi_us: lo + w - 1, count: 0 });
      lo += w;
    }
  }
  return out;
}

function MethodPage({ params }) {
  const key = params.m || '';
  const thread = params.thread || 'all';
  const builds = useBuilds();
  const stats = useApi('/slow-methods', { build: params.build, thread, limit: 10000 }, [params.build, thread]);
  const tree = useApi('/call-tree', { build: params.build, thread, limit: 100000, max_depth: 4096, format: 'columns-binary' }, [params.build, thread]);
  const row = stats.data && stats.data.methods.find((m) => methodKey(m.method) === key);
  // the percentiles of each build (newest 8), one answer per build
  const [perBuild, setPerBuild] = useState(null);
  useEffect(() => {
    if (!builds.data) return;
    const bs = newestFirst(builds.data.builds).slice(0, 8).reverse();
    Promise.all(bs.map((b) => api('/slow-methods', { build: b.build, thread, limit: 10000 })
      .then((d) => ({ build: b.build, m: d.methods.find((x) => methodKey(x.method) === key) }))
      .catch(() => ({ build: b.build, m: null }))))
      .then(setPerBuild);
  }, [builds.data, thread, key]);
  const hist = useApi('/method-histogram', { method: key, build: params.build, thread }, [key, params.build, thread]);
  const rel = useMemo(() => (tree.data ? relatives(treeOf(tree.data), key) : null), [tree.data, key]);
  const buckets = useMemo(() => (hist.data ? withEmptyBuckets(hist.data.buckets) : []), [hist.data]);
  const present = perBuild ? perBuild.filter((x) => x.m) : [];
  return (
    <section>
      <h2 class="method-title">{row ? methodName(row.method) : key}</h2>
      {row && <p class="muted">{row.method.descriptor} {row.method.source_file && `· ${row.method.source_file}`}</p>}
      <div class="filters">
        <BuildSelect builds={builds.data && builds.data.builds} value={params.build} onChange={(v) => setParam('method', params, 'build', v)} />
        <ThreadSelect value={thread} onChange={(v) => setParam('method', params, 'thread', v)} />
        <a href={href('flame', { build: params.build, thread, q: row ? `${row.method.class}.${row.method.name}` : '' })}>find in the flame graph</a>
      </div>
      <Status s={stats} what="the method's figures" />
      {stats.data && !row && <p class="muted">This method has no finished call {params.build ? `in build ${params.build}` : ''} on {thread === 'main' ? 'the main thread' : 'any thread'}.</p>}
      {row && (
        <dl class="figures" id="figures">
          <div><dt>Calls</dt><dd>{fmtInt(row.count)}</dd></div>
          <div><dt>Total</dt><dd>{fmtDur(row.total_us)}</dd></div>
          <div><dt>Self</dt><dd>{fmtDur(row.self_us)}</dd></div>
          <div><dt>Mean</dt><dd>{fmtDur(row.total_us / row.count)}</dd></div>
          <div><dt>p50</dt><dd>{fmtDur(row.p50_us)}</dd></div>
          <div><dt>p90</dt><dd>{fmtDur(row.p90_us)}</dd></div>
          <div><dt>p99</dt><dd>{fmtDur(row.p99_us)}</dd></div>
          <div><dt>Max</dt><dd>{fmtDur(row.max_us)}</dd></div>
        </dl>
      )}
      <h3>Distribution of call durations <span class="muted">(calls per bucket; buckets 12.5% wide)</span></h3>
      <Status s={hist} what="the distribution" />
      {buckets.length ? (
        <div id="histogram"><Chart opts={{
          scales: { x: { time: false, range: (u, a, b) => [a - 0.6, b + 0.6] } },
          axes: [{ values: (u, ticks) => ticks.map((t) => (buckets[t] ? fmtDur(buckets[t].lo_us) : '')) }, { label: 'calls' }],
          series: [{ label: 'from', value: (u, v) => (v == null || !buckets[v] ? '' : `${fmtDur(buckets[v].lo_us)} – ${fmtDur(buckets[v].hi_us)}`) },
            { label: 'calls', stroke: '#2b7bb9', fill: 'rgba(43,123,185,0.35)', bars: [0.8, 60], points: { show: false } }],
        }} data={[buckets.map((_, i) => i), buckets.map((b) => b.count)]} /></div>
      ) : hist.data && <p class="muted">No finished call in this selection.</p>}
      <h3>Call duration by build (p50 / p90 / p99 / max, ms)</h3>
      {present.length ? (
        <Chart opts={{
          scales: { x: { time: false, range: (u, a, b) => [a - 0.3, b + 0.3] } },
          axes: [{ splits: () => present.map((_, i) => i), values: (u, ticks) => ticks.map((t) => (present[t] ? present[t].build : '')) }, { label: 'ms' }],
          series: [{ label: 'build', value: (u, v) => (v == null || !present[v] ? '' : present[v].build) },
            { label: 'p50', stroke: '#2b7bb9', width: 2 }, { label: 'p90', stroke: '#e08a00', width: 2 },
            { label: 'p99', stroke: '#c2185b', width: 2 }, { label: 'max', stroke: '#777', dash: [4, 4] }],
        }} data={[present.map((_, i) => i), ...['p50_us', 'p90_us', 'p99_us', 'max_us'].map((f) => present.map((x) => x.m[f] / 1000))]} />
      ) : <p class="muted">{perBuild ? 'No build has calls of this method.' : 'Loading…'}</p>}
      <Status s={tree} what="the call tree" />
      {rel && (
        <div class="two">
          <Relatives title="Callers" rows={rel.callers} params={{ build: params.build, thread, unit: params.unit }} id="callers" />
          <Relatives title="Callees" rows={rel.callees} params={{ build: params.build, thread, unit: params.unit }} id="callees" />
        </div>
      )}
      {tree.data && tree.data.truncated && <p class="muted">The call tree was cut at 100,000 nodes: callers and callees are of the printed part.</p>}
    </section>
  );
}

// ---- flame graph ----------------------------------------------------------
// per node of t: its call path's inclusive time in a base tree (the older
// build), for the differential flame graph; keys are the paths' names
function pathKeys(t) {
  const mk = t.methods.map((m) => methodKey(m || { class: '?', name: '?' }));
  const keys = new Array(t.n);
  for (let i = 0; i < t.n; i++) { const p = t.parent[i]; keys[i] = `${p >= 0 ? keys[p] : ''}\n${mk[t.mi[i]]}`; }
  return keys;
}
function diffAgainst(t, bt) {
  const base = new Map();
  const bk = pathKeys(bt);
  for (let i = 0; i < bt.n; i++) base.set(bk[i], (base.get(bk[i]) || 0) + bt.w[i]);
  const baseTotal = bt.total;
  const keys = pathKeys(t);
  const was = new Float64Array(t.n);
  const known = new Uint8Array(t.n);
  for (let i = 0; i < t.n; i++) if (base.has(keys[i])) { was[i] = base.get(keys[i]); known[i] = 1; }
  const delta = (i) => (t.total ? t.w[i] / t.total : 0) - (baseTotal ? was[i] / baseTotal : 0);
  return {
    color(i) {
      if (!known[i]) return 'hsl(0, 85%, 45%)';
      const d = delta(i);
      const f = Math.min(1, Math.abs(d) / 0.05);
      return d >= 0 ? `hsl(0, 80%, ${Math.round(92 - 40 * f)}%)` : `hsl(215, 80%, ${Math.round(92 - 40 * f)}%)`;
    },
    tip(i) {
      if (!known[i]) return ['new in this build (no such call path in the other)'];
      const d = delta(i);
      return [`share of all time ${d >= 0 ? '+' : '−'}${fmtPct(Math.abs(d))} (was ${fmtPct(baseTotal ? was[i] / baseTotal : 0)}, ${fmtDur(was[i])})`];
    },
  };
}

// tree: a flat tree (flame.js treeOf); baseTree: the other build's, for
// the differential colours
function Flame({ tree: t, zoom, onZoom, search, mode, id, baseTree }) {
  const ref = useRef(null);
  const fg = useRef(null);
  const [found, setFound] = useState(null);
  const diff = useRef(null);
  useEffect(() => {
    fg.current = new FlameGraph(ref.current, {
      onZoom: (i) => onZoom && onZoom(i < 0 ? '' : nodePath(fg.current.t, i)),
      colorOf: baseTree ? (i) => diff.current.color(i) : undefined,
      extraTip: baseTree ? (i) => diff.current.tip(i) : undefined,
    });
    return () => fg.current.destroy();
  }, []);
  if (baseTree && (!diff.current || diff.current.t !== t || diff.current.base !== baseTree)) {
    diff.current = { ...diffAgainst(t, baseTree), t, base: baseTree };
  }
  useEffect(() => {
    const t0 = performance.now();
    fg.current.setData(t);
    const now = performance.now();
    performance.measure('flame draw', { start: t0, end: now });
    const f = { nodes: t.n, draw_ms: now - t0, at: now };
    window.__beatlineFlame = f;
    // painted: the frame after the one this draw went into
    requestAnimationFrame(() => setTimeout(() => { f.painted = performance.now(); }, 0));
  }, [t]);
  useEffect(() => { fg.current.setZoom(zoom ? nodeOfPath(t, zoom) : -1); }, [zoom, t]);
  useEffect(() => { setFound(fg.current.setSearch(search || '')); }, [search, t]);
  useEffect(() => { fg.current.setMode(mode || 'incl'); }, [mode]);
  return (
    <div>
      {search && found && <p class="muted" id="flame-found">“{search}”: {fmtInt(found.frames)} frame{found.frames === 1 ? '' : 's'}, {fmtPct(found.share)} of the time</p>}
      <div class="flame" ref={ref} id={id} />
    </div>
  );
}

// A flat tree from an API answer, made once per answer; its making is timed
// (window.__beatlineTree: the flame graph's benchmark, docs/benchmarks.md)
function useTree(data) {
  return useMemo(() => {
    if (!data) return null;
    const t0 = performance.now();
    const t = treeOf(data);
    window.__beatlineTree = { nodes: t.n, flatten_ms: performance.now() - t0 };
    performance.measure('flame layout', { start: t0 });
    return t;
  }, [data]);
}

function TreeTable({ tree: t, unit }) {
  // the first nodes in depth-first order as an indented table (the same
  // tree, readable by keyboard and screen readers)
  const rows = [];
  for (let i = 0; i < Math.min(t.n, 300); i++) rows.push(i);
  return (
    <div class="scroll"><table class="grid" id="tree-table"><thead><tr><th>Call path</th><th class="num">Calls</th><th class="num">Total</th><th class="num">Self</th></tr></thead>
      <tbody>{rows.map((i) => (
        <tr><td class="method"><span class="indent" data-d={Math.min(t.depth[i], 30)}>{'· '.repeat(Math.min(t.depth[i], 30))}</span>{methodName(methodOf(t, i))}</td>
          <td class="num">{fmtInt(t.count[i])}</td><td class="num">{fmtDur(t.w[i], unit)}</td><td class="num">{fmtDur(t.self[i], unit)}</td></tr>))}</tbody>
    </table>{rows.length >= 300 && <p class="muted">The first 300 nodes in depth-first order.</p>}</div>
  );
}

function FlamePage({ params }) {
  const P = (k, v) => setParam('flame', params, k, v);
  const thread = params.thread || 'all';
  const builds = useBuilds();
  const s = useApi('/call-tree', flameQuery(params), [params.build, thread]);
  const t = useTree(s.data);
  const [q, setQ] = useState(params.q || '');
  useEffect(() => setQ(params.q || ''), [params.q]);
  return (
    <section>
      <h2>Flame graph {s.data && <span class="muted">build {s.data.build}, {thread === 'main' ? 'main thread' : 'all threads'}</span>}</h2>
      <div class="filters">
        <BuildSelect builds={builds.data && builds.data.builds} value={params.build} onChange={(v) => go('flame', { ...params, build: v, zoom: '' }, true)} allowAll="newest with data" />
        <ThreadSelect value={thread} onChange={(v) => go('flame', { ...params, thread: v, zoom: '' }, true)} />
        <label>Search <input type="search" id="flame-search" value={q} placeholder="class or method" onInput={(e) => { setQ(e.target.value); P('q', e.target.value); }} /></label>
        <span role="group" aria-label="colour">
          <button class={`toggle ${params.mode !== 'self' ? 'on' : ''}`} aria-pressed={params.mode !== 'self'} onClick={() => P('mode', '')}>inclusive</button>
          <button class={`toggle ${params.mode === 'self' ? 'on' : ''}`} aria-pressed={params.mode === 'self'} onClick={() => P('mode', 'self')}>self</button>
        </span>
        <span role="group" aria-label="view">
          <button class={`toggle ${params.view !== 'table' ? 'on' : ''}`} onClick={() => P('view', '')}>graph</button>
          <button class={`toggle ${params.view === 'table' ? 'on' : ''}`} onClick={() => P('view', 'table')}>table</button>
        </span>
        <button id="flame-reset" onClick={() => P('zoom', '')} disabled={!params.zoom}>Reset zoom</button>
        {t && t.n > 0 && (
          <span role="group" aria-label="export">
            <button id="export-speedscope" onClick={() => download(toSpeedscope(t, `${session.app} ${s.data.build} ${thread}`), `beatline-${s.data.build}-${thread}.speedscope.json`)}>speedscope</button>{' '}
            <button id="export-chrome" title="Chrome trace-event JSON: opens in Perfetto UI" onClick={() => download(toChromeTrace(t, `${session.app} ${s.data.build} ${thread}`), `beatline-${s.data.build}-${thread}.trace.json`)}>Chrome trace</button>
          </span>)}
      </div>
      <p class="muted">Widths are inclusive time of the merged call tree (exact, every call). {params.mode === 'self' ? 'Colour: share of self time (red = most).' : 'Colour: package.'} Click a frame to zoom, again (or Escape) to go back; hover for figures. Keyboard: Tab to the graph, arrows select a frame, Enter zooms.</p>
      <Status s={s} what="the call tree" />
      {s.data && s.data.truncated && <p class="warn">The tree was cut at 100,000 nodes (the API's limit for one answer).</p>}
      {t && (t.n ? (params.view === 'table' ? <TreeTable tree={t} unit={params.unit} />
        : <Flame id="flame" tree={t} zoom={params.zoom} onZoom={(z) => go('flame', { ...params, zoom: z })} search={q} mode={params.mode} />)
        : <p>No calls in this build{thread === 'main' ? ' on the main thread' : ''}.</p>)}
    </section>
  );
}

// ---- blocks ---------------------------------------------------------------
const BSORTS = [['count', 'Blocks'], ['p50', 'p50'], ['p90', 'p90'], ['p99', 'p99'], ['max', 'Max']];
function BlocksPage({ params }) {
  const builds = useBuilds();
  const sort = params.sort || 'count';
  const since = useMemo(() => sinceOf(params.range), [params.range]);
  const s = useApi('/blocks', { build: params.build, sort, since, limit: 500 }, [params.build, sort, since]);
  const P = (k, v) => setParam('blocks', params, k, v);
  return (
    <section>
      <h2>Blocks <span class="muted">main-thread messages over the runtime's threshold{s.data ? `, build ${s.data.build}` : ''}</span></h2>
      <div class="filters">
        <BuildSelect builds={builds.data && builds.data.builds} value={params.build} onChange={(v) => P('build', v)} allowAll="newest with data" />
        <label>Time{' '}<select value={params.range || ''} onChange={(e) => P('range', e.target.value)} aria-label="time range">{RANGES.map(([v, l]) => <option value={v}>{l}</option>)}</select></label>
      </div>
      <Status s={s} what="blocks" />
      {s.data && (s.data.blocks.length ? (
        <div class="scroll"><table class="grid" id="blocks-table">
          <thead><tr><th>Culprit</th>{BSORTS.map(([k, l]) => <th class="num" aria-sort={k === sort ? 'descending' : 'none'}><button class={`sort ${k === sort ? 'on' : ''}`} onClick={() => P('sort', k)}>{l}{k === sort ? ' ▼' : ''}</button></th>)}<th class="num">Devices</th><th class="num">ANRs</th><th>Last seen</th></tr></thead>
          <tbody>{s.data.blocks.map((g) => (
            <tr><td class="method"><a href={href('block', { build: s.data.build, sig: g.signature })}>{g.method ? <Name m={g.method} /> : '(no calls in the window)'}</a>
              <div class="muted small">{g.path.map(shortName).join(' › ')}</div></td>
              <td class="num">{fmtInt(g.count)}</td><td class="num">{fmtDur(g.p50_us)}</td><td class="num">{fmtDur(g.p90_us)}</td><td class="num">{fmtDur(g.p99_us)}</td><td class="num">{fmtDur(g.max_us)}</td>
              <td class="num">{fmtInt(g.devices)}</td><td class="num">{g.anrs ? <span class="badge bad">{g.anrs}</span> : 0}</td><td>{fmtTime(g.last_at)}</td></tr>))}</tbody>
        </table></div>) : <p>No blocks in this build.</p>)}
    </section>
  );
}

function BlockPage({ params }) {
  const s = useApi(`/blocks/${encodeURIComponent(params.sig || '')}`, { build: params.build, limit: 100000 }, [params.build, params.sig]);
  const g = s.data;
  const bt = useMemo(() => (g ? flatten(g.call_tree) : null), [g]);
  return (
    <section>
      <p><a href={href('blocks', { build: params.build })}>← all blocks</a></p>
      <h2>Block: {g ? (g.method ? methodName(g.method) : '(no calls in the window)') : '…'}</h2>
      <Status s={s} what="the block group" />
      {g && (<>
        <dl class="figures" id="block-figures">
          <div><dt>Blocks</dt><dd>{fmtInt(g.count)}</dd></div>
          <div><dt>p50</dt><dd>{fmtDur(g.p50_us)}</dd></div>
          <div><dt>p90</dt><dd>{fmtDur(g.p90_us)}</dd></div>
          <div><dt>p99</dt><dd>{fmtDur(g.p99_us)}</dd></div>
          <div><dt>Max</dt><dd>{fmtDur(g.max_us)}</dd></div>
          <div><dt>Devices</dt><dd>{fmtInt(g.devices)}</dd></div>
          <div><dt>Sessions</dt><dd>{fmtInt(g.sessions)}</dd></div>
          <div><dt>ANRs</dt><dd>{fmtInt(g.anrs)}</dd></div>
        </dl>
        <p class="muted">First seen {fmtTime(g.first_at)}, last {fmtTime(g.last_at)}. Latest message target: <code>{g.target || '–'}</code>. Signature <code>{g.signature}</code>.</p>
        <h3>Heaviest path</h3>
        <ol class="path">{g.path.map((m, i) => <li class={i === g.path.length - 1 ? 'culprit' : ''}>{methodName(m)}{i === g.path.length - 1 ? ' — culprit' : ''}</li>)}</ol>
        {g.anr_stack && (<>
          <h3>ANR stack <span class="muted">sampled {fmtTime(g.anr_stack.at_us)}, innermost first</span></h3>
          <pre class="stack" id="anr-stack">{g.anr_stack.frames.join('\n')}</pre>
        </>)}
        <h3>Merged call tree of the group's blocks</h3>
        {g.truncated && <p class="warn">Cut at 100,000 nodes.</p>}
        {bt.n ? <Flame id="block-flame" tree={bt} zoom={params.zoom} onZoom={(z) => go('block', { ...params, zoom: z })} /> : <p>No calls.</p>}
      </>)}
    </section>
  );
}

// ---- launches ---------------------------------------------------------------
// GET /launches (per kind: phases, TTID, TTFD with percentiles; the slowest
// methods within launches) and GET /launches/tree (the merged call tree of
// one kind's launches: process start, or the first Activity.onCreate, to
// the first frame). docs/api.md "Launches".
const KINDS = [['cold', 'Cold'], ['warm', 'Warm'], ['hot', 'Hot']];
const PHASES = {
  application_attach_base_context: 'Application.attachBaseContext',
  application_on_create: 'Application.onCreate',
  activity_on_create: 'Activity.onCreate',
  activity_on_start: 'Activity.onStart',
  activity_on_resume: 'Activity.onResume',
};
const phaseName = (p) => PHASES[p] || p;
const KIND_HELP = {
  cold: 'the process was started for this launch',
  warm: 'the process was alive, the activity was created again',
  hot: 'the activity was brought back to the front',
};

function PhaseChart({ phases }) {
  // short axis labels (App. = Application, Act. = Activity)
  const labels = phases.map((p) => phaseName(p.phase).replace(/^Application\./, 'App.').replace(/^Activity\./, 'Act.'));
  return (
    <div id="launch-chart"><Chart opts={{
      scales: { x: { time: false, range: (u, a, b) => [a - 0.5, b + 0.5] }, y: { range: (u, a, b) => [0, (b || 1) * 1.08] } },
      axes: [{ splits: () => labels.map((_, i) => i), values: (u, ticks) => ticks.map((t) => (labels[t] !== undefined ? labels[t] : '')), size: 40 },
        { label: 'ms', values: (u, ticks) => ticks.map((v) => `${v}`) }],
      series: [{ label: 'phase', value: (u, v) => (v == null || !phases[v] ? '' : phaseName(phases[v].phase)) },
        { label: 'p50', stroke: '#2b7bb9', fill: 'rgba(43,123,185,0.45)', bars: [0.55, 90], points: { show: false } },
        { label: 'p90', stroke: '#e08a00', paths: () => null, points: { show: true, size: 9, fill: '#e08a00', stroke: '#e08a00' } },
        { label: 'p99', stroke: '#c2185b', paths: () => null, points: { show: true, size: 9, fill: '#c2185b', stroke: '#c2185b' } },
        { label: 'max', stroke: '#444', paths: () => null, points: { show: true, size: 7, fill: '#fff', stroke: '#444' } }],
    }} data={[phases.map((_, i) => i), ...['p50_us', 'p90_us', 'p99_us', 'max_us'].map((f) => phases.map((p) => (p[f] == null ? null : p[f] / 1000)))]} /></div>
  );
}

function Pcts({ m, id }) {
  if (!m) return <p class="muted">none recorded</p>;
  return (
    <dl class="figures" id={id}>
      {m.count != null && <div><dt>Launches</dt><dd>{fmtInt(m.count)}</dd></div>}
      <div><dt>p50</dt><dd>{fmtDur(m.p50_us)}</dd></div>
      <div><dt>p90</dt><dd>{fmtDur(m.p90_us)}</dd></div>
      <div><dt>p99</dt><dd>{fmtDur(m.p99_us)}</dd></div>
      {m.max_us != null && <div><dt>Max</dt><dd>{fmtDur(m.max_us)}</dd></div>}
    </dl>
  );
}

function LaunchesPage({ params }) {
  const builds = useBuilds();
  const since = useMemo(() => sinceOf(params.range), [params.range]);
  const s = useApi('/launches', { build: params.build, since }, [params.build, since]);
  const kinds = s.data ? s.data.launches || [] : [];
  const kind = params.kind || (kinds[0] && kinds[0].kind) || 'cold';
  const k = kinds.find((x) => x.kind === kind);
  const build = params.build || (s.data && s.data.build);
  const tr = useApi('/launches/tree', { build, kind, limit: 100000 }, [build, kind], !!k);
  const t = useTree(tr.data);
  const P = (key, v) => setParam('launches', params, key, v);
  return (
    <section>
      <h2>Launches {s.data && <span class="muted">build {s.data.build}</span>}</h2>
      <div class="filters">
        <BuildSelect builds={builds.data && builds.data.builds} value={params.build} onChange={(v) => go('launches', { ...params, build: v, zoom: '' }, true)} allowAll="newest with data" />
        <label>Time{' '}<select value={params.range || ''} onChange={(e) => P('range', e.target.value)} aria-label="time range">{RANGES.map(([v, l]) => <option value={v}>{l}</option>)}</select></label>
        <span role="group" aria-label="launch kind">
          {KINDS.map(([v, l]) => (
            <button class={`toggle ${kind === v ? 'on' : ''}`} aria-pressed={kind === v} id={`kind-${v}`} title={KIND_HELP[v]}
              onClick={() => go('launches', { ...params, kind: v, zoom: '' }, true)}>{l}</button>))}
        </span>
      </div>
      <p class="muted">Cold: {KIND_HELP.cold}; warm: {KIND_HELP.warm}; hot: {KIND_HELP.hot}. TTID: time to the first frame; TTFD: to <code>reportFullyDrawn()</code>. Exact per launch (every call, not sampled).</p>
      <Status s={s} what="launches" />
      {s.data && (kinds.length ? (
        <div class="scroll"><table class="grid" id="launch-kinds">
          <thead><tr><th>Kind</th><th class="num">Launches</th><th class="num">TTID p50</th><th class="num">TTID p90</th><th class="num">TTID p99</th><th class="num">TTFD p50</th><th class="num">TTFD p90</th><th>Activity</th><th>Last seen</th></tr></thead>
          <tbody>{kinds.map((x) => (
            <tr class={x.kind === kind ? 'selected' : ''}>
              <td><a href={href('launches', { ...params, kind: x.kind, zoom: '' })} aria-current={x.kind === kind ? 'true' : undefined}>{x.kind}</a></td>
              <td class="num">{fmtInt(x.count)}</td>
              <td class="num">{fmtDur(x.ttid && x.ttid.p50_us)}</td><td class="num">{fmtDur(x.ttid && x.ttid.p90_us)}</td><td class="num">{fmtDur(x.ttid && x.ttid.p99_us)}</td>
              <td class="num">{fmtDur(x.ttfd && x.ttfd.p50_us)}</td><td class="num">{fmtDur(x.ttfd && x.ttfd.p90_us)}</td>
              <td class="activity">{x.activity ? x.activity.split('.').map((p, i, a) => (i < a.length - 1 ? <>{p}.<wbr /></> : p)) : '–'}</td><td>{fmtTime(x.last_at)}</td>
            </tr>))}</tbody>
        </table></div>) : <p>No launches in this build{params.range ? ' and time range' : ''}.</p>)}
      {s.data && kinds.length > 0 && !k && <p>No {kind} launches in this build.</p>}
      {k && (<>
        <h3>{KINDS.find(([v]) => v === kind)[1]} launches: time to first frame (TTID)</h3>
        <Pcts m={k.ttid} id="launch-ttid" />
        {k.ttfd && <><h3>Time to fully drawn (TTFD)</h3><Pcts m={k.ttfd} id="launch-ttfd" /></>}
        <h3>Phases <span class="muted">duration of each lifecycle callback; bar: p50, dots: p90, p99, max</span></h3>
        {k.phases && k.phases.length ? (<>
          <PhaseChart phases={k.phases} />
          <div class="scroll"><table class="grid" id="launch-phases">
            <thead><tr><th>Phase</th><th class="num">Launches</th><th class="num">p50</th><th class="num">p90</th><th class="num">p99</th><th class="num">Max</th></tr></thead>
            <tbody>{k.phases.map((p) => (
              <tr><td class="method">{phaseName(p.phase)}</td><td class="num">{fmtInt(p.count != null ? p.count : k.count)}</td>
                <td class="num">{fmtDur(p.p50_us)}</td><td class="num">{fmtDur(p.p90_us)}</td><td class="num">{fmtDur(p.p99_us)}</td><td class="num">{fmtDur(p.max_us)}</td></tr>))}</tbody>
          </table></div></>) : <p class="muted">No lifecycle phase recorded for these launches.</p>}
        {k.slowest_methods && k.slowest_methods.length > 0 && (<>
          <h3>Slowest methods within {kind} launches</h3>
          <div class="scroll"><table class="grid" id="launch-methods">
            <thead><tr><th>Method</th><th class="num">Calls</th><th class="num">Total</th><th class="num">Self</th><th class="num">In launches</th></tr></thead>
            <tbody>{k.slowest_methods.map((m) => (
              <tr><td class="method"><a href={href('method', { build, m: methodKey(m.method) })}><Name m={m.method} /></a></td>
                <td class="num">{fmtInt(m.count)}</td><td class="num">{fmtDur(m.total_us)}</td><td class="num">{fmtDur(m.self_us)}</td><td class="num">{fmtInt(m.launches)}</td></tr>))}</tbody>
          </table></div></>)}
        <h3>Launch flame graph <span class="muted">the main thread's calls from launch start to first frame, merged over the {kind} launches</span></h3>
        <div class="filters">
          <label>Search <input type="search" id="launch-search" value={params.q || ''} placeholder="class or method" onInput={(e) => P('q', e.target.value)} /></label>
          <button onClick={() => P('zoom', '')} disabled={!params.zoom}>Reset zoom</button>
        </div>
        <Status s={tr} what="the launch call tree" />
        {tr.data && tr.data.truncated && <p class="warn">The tree was cut at 100,000 nodes.</p>}
        {t && (t.n ? <Flame id="launch-flame" tree={t} zoom={params.zoom} search={params.q} onZoom={(z) => go('launches', { ...params, kind, zoom: z })} />
          : <p>No calls recorded in these launches.</p>)}
      </>)}
    </section>
  );
}

// ---- network ------------------------------------------------------------------
// GET /network: requests grouped by host, HTTP method and URL pattern, with
// error rates, percentiles, bytes and the app methods that made them.
// docs/api.md "Network".
const NSORTS = [['count', 'Requests'], ['errors', 'Errors'], ['p50', 'p50'], ['p90', 'p90'], ['p99', 'p99'], ['bytes', 'Bytes']];
const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'];

function Callers({ r, build }) {
  const [all, setAll] = useState(false);
  const cs = r.callers || [];
  if (!cs.length) return <span class="muted">–</span>;
  const shown = all ? cs : cs.slice(0, 2);
  return (
    <ul class="callers">
      {shown.map((c) => (
        <li>{c.method ? <a href={href('method', { build, m: methodKey(c.method) })} title={methodName(c.method, true)}>{shortName(c.method)}</a> : <i>unknown</i>}
          {' '}<span class="muted">×{fmtInt(c.count)}</span></li>))}
      {cs.length > 2 && <li><button class="link" aria-expanded={all} onClick={() => setAll(!all)}>{all ? 'fewer' : `${cs.length - 2} more`}</button></li>}
    </ul>
  );
}

// status classes with their counts, and the failures without a response
// (errors that are not 4xx/5xx)
function StatusCounts({ r }) {
  const st = r.status || {};
  const keys = Object.keys(st).filter((x) => st[x]).sort();
  const failed = (r.errors || 0) - (st['4xx'] || 0) - (st['5xx'] || 0);
  return (
    <span class="small">{keys.map((x) => <span class={`st st${x[0]}`}>{x} {fmtInt(st[x])} </span>)}
      {failed > 0 && <span class="st st5">no response {fmtInt(failed)}</span>}</span>
  );
}

function NetworkPage({ params }) {
  const builds = useBuilds();
  const sort = params.sort || 'count';
  const since = useMemo(() => sinceOf(params.range), [params.range]);
  const s = useApi('/network', { build: params.build, host: params.host, method: params.method, sort, since, limit: 500 },
    [params.build, params.host, params.method, sort, since]);
  const P = (k, v) => setParam('network', params, k, v);
  const q = (params.q || '').toLowerCase();
  const all = s.data ? s.data.requests || [] : [];
  const rows = all.filter((r) => !q || `${r.host}${r.pattern}`.toLowerCase().includes(q));
  const hosts = [...new Set(all.map((r) => r.host))].sort();
  const build = params.build || (s.data && s.data.build);
  return (
    <section>
      <h2>Network {s.data && s.data.build && <span class="muted">build {s.data.build}</span>}</h2>
      <div class="filters">
        <BuildSelect builds={builds.data && builds.data.builds} value={params.build} onChange={(v) => P('build', v)} allowAll="newest with data" />
        <label>Host <input list="net-hosts" value={params.host || ''} placeholder="all hosts" onChange={(e) => P('host', e.target.value.trim().toLowerCase())} aria-label="host" /></label>
        <datalist id="net-hosts">{hosts.map((h) => <option value={h} />)}</datalist>
        <label>Method{' '}<select value={params.method || ''} onChange={(e) => P('method', e.target.value)} aria-label="HTTP method">
          <option value="">all</option>{HTTP_METHODS.map((m) => <option value={m}>{m}</option>)}</select></label>
        <label>Time{' '}<select value={params.range || ''} onChange={(e) => P('range', e.target.value)} aria-label="time range">{RANGES.map(([v, l]) => <option value={v}>{l}</option>)}</select></label>
        <label>Search <input type="search" placeholder="host or path" value={params.q || ''} onInput={(e) => P('q', e.target.value)} aria-label="search patterns" /></label>
      </div>
      <p class="muted">One row per host, HTTP method and URL pattern (numbers, ids and tokens in paths become placeholders like <code>{'{id}'}</code>). Error: status ≥ 400 or no response. Durations: the whole request (p50/p90/p99) and to its first response byte (TTFB). Callers: the app's methods that were running when the request started. Click a column to sort by it.</p>
      <Status s={s} what="network requests" />
      {s.data && (rows.length ? (
        <div class="scroll"><table class="grid" id="network-table">
          <thead><tr><th>Request</th>{NSORTS.slice(0, 2).map(([k, l]) => (
            <th class="num" aria-sort={k === sort ? 'descending' : 'none'}><button class={`sort ${k === sort ? 'on' : ''}`} onClick={() => P('sort', k)}>{l}{k === sort ? ' ▼' : ''}</button></th>))}
            <th class="num">Error rate</th><th>Status</th>
            {NSORTS.slice(2, 5).map(([k, l]) => (
              <th class="num" aria-sort={k === sort ? 'descending' : 'none'}><button class={`sort ${k === sort ? 'on' : ''}`} onClick={() => P('sort', k)}>{l}{k === sort ? ' ▼' : ''}</button></th>))}
            <th class="num">TTFB p50</th>
            <th class="num" aria-sort={sort === 'bytes' ? 'descending' : 'none'}><button class={`sort ${sort === 'bytes' ? 'on' : ''}`} onClick={() => P('sort', 'bytes')}>In / out{sort === 'bytes' ? ' ▼' : ''}</button></th>
            <th>Callers</th></tr></thead>
          <tbody>{rows.map((r) => (
            <tr class={r.error_rate >= 0.05 ? 'failing' : ''}>
              <td class="method"><span class="badge">{r.http_method}</span> {r.host}<wbr />{r.pattern}</td>
              <td class="num">{fmtInt(r.count)}</td><td class="num">{fmtInt(r.errors)}</td>
              <td class="num">{r.error_rate >= 0.05 ? <span class="up">{fmtPct(r.error_rate)}</span> : fmtPct(r.error_rate)}</td>
              <td><StatusCounts r={r} /></td>
              <td class="num">{fmtDur(r.p50_us)}</td><td class="num">{fmtDur(r.p90_us)}</td><td class="num">{fmtDur(r.p99_us)}</td>
              <td class="num">{fmtDur(r.ttfb_p50_us)}</td>
              <td class="num">{fmtBytes(r.bytes_in)} / {fmtBytes(r.bytes_out)}</td>
              <td><Callers r={r} build={build} /></td>
            </tr>))}</tbody>
        </table></div>) : <p>No requests {all.length ? 'match the search' : 'in this selection'}.</p>)}
    </section>
  );
}

// ---- compare builds ---------------------------------------------------------
// A method is flagged when both builds have at least minCalls finished calls
// and its p50, p90 or p99 changed by at least minChange % (up: regression,
// down: improvement); regressions first, by their largest rise.
function compareRows(a, b, minCalls, minChange) {
  const totalA = a.reduce((x, m) => x + m.count, 0) || 1;
  const totalB = b.reduce((x, m) => x + m.count, 0) || 1;
  const byKey = new Map(a.map((m) => [methodKey(m.method), m]));
  const rows = [];
  const seen = new Set();
  for (const mb of b) {
    const k = methodKey(mb.method);
    seen.add(k);
    const ma = byKey.get(k);
    const rel = (f) => (ma && ma[f] > 0 ? mb[f] / ma[f] - 1 : null);
    const ch = { p50: rel('p50_us'), p90: rel('p90_us'), p99: rel('p99_us') };
    const enough = ma && ma.count >= minCalls && mb.count >= minCalls;
    const vals = Object.values(ch).filter((v) => v !== null);
    const up = vals.length ? Math.max(...vals) : 0;
    const down = vals.length ? Math.min(...vals) : 0;
    const flag = !enough ? '' : up * 100 >= minChange ? 'regression' : -down * 100 >= minChange ? 'improvement' : '';
    rows.push({ method: mb.method, a: ma, b: mb, ch, share: mb.count / totalB - (ma ? ma.count / totalA : 0), flag, up, down });
  }
  for (const ma of a) if (!seen.has(methodKey(ma.method))) rows.push({ method: ma.method, a: ma, b: null, ch: {}, share: -ma.count / totalA, flag: '', up: 0, down: 0 });
  const rank = (r) => (r.flag === 'regression' ? 0 : r.flag === 'improvement' ? 1 : 2);
  rows.sort((x, y) => rank(x) - rank(y) || (rank(x) === 1 ? x.down - y.down : y.up - x.up) || ((y.b ? y.b.total_us : 0) - (x.b ? x.b.total_us : 0)));
  return rows;
}

function Change({ v }) {
  if (v === null || v === undefined) return <span class="muted">–</span>;
  const pct = Math.round(v * 100);
  return <span class={pct >= 10 ? 'up' : pct <= -10 ? 'down' : ''}>{pct > 0 ? '+' : ''}{pct}%</span>;
}

function ComparePage({ params }) {
  const builds = useBuilds();
  const list = builds.data ? newestFirst(builds.data.builds) : [];
  const b = params.b || (list[0] && list[0].build);
  // before: the build just older than b (or newer, for the oldest)
  const bi = list.findIndex((x) => x.build === b);
  const a = params.a || ((list[bi + 1] || list[bi - 1] || {}).build);
  const thread = params.thread || 'all';
  const minCalls = Number(params.min_calls || 10);
  const minChange = Number(params.min_change || 20);
  const P = (k, v) => setParam('compare', { ...params, a, b }, k, v);
  const sa = useApi('/slow-methods', { build: a, thread, limit: 10000 }, [a, thread, !!a]);
  const sb = useApi('/slow-methods', { build: b, thread, limit: 10000 }, [b, thread, !!b]);
  const ta = useApi('/call-tree', { build: a, thread, limit: 100000, max_depth: 4096, format: 'columns-binary' }, [a, thread]);
  const tb = useApi('/call-tree', { build: b, thread, limit: 100000, max_depth: 4096, format: 'columns-binary' }, [b, thread]);
  const fa = useMemo(() => (ta.data ? treeOf(ta.data) : null), [ta.data]);
  const fb = useMemo(() => (tb.data ? treeOf(tb.data) : null), [tb.data]);
  const rows = useMemo(() => (sa.data && sb.data ? compareRows(sa.data.methods, sb.data.methods, minCalls, minChange) : null), [sa.data, sb.data, minCalls, minChange]);
  if (builds.data && list.length < 2) return <section><h2>Compare builds</h2><p>Comparing needs two builds with data.</p></section>;
  const regressions = rows ? rows.filter((r) => r.flag === 'regression').length : 0;
  return (
    <section>
      <h2>Compare builds</h2>
      <div class="filters">
        <BuildSelect builds={list} value={a} onChange={(v) => P('a', v)} allowAll={false} label="Before" />
        <BuildSelect builds={list} value={b} onChange={(v) => P('b', v)} allowAll={false} label="After" />
        <ThreadSelect value={thread} onChange={(v) => P('thread', v)} />
        <label>Min. calls <input type="number" min="1" class="short" value={minCalls} onChange={(e) => P('min_calls', e.target.value)} aria-label="minimum calls" /></label>
        <label>Min. change % <input type="number" min="1" class="short" value={minChange} onChange={(e) => P('min_change', e.target.value)} aria-label="minimum change" /></label>
      </div>
      <p class="muted">Flagged: both builds have at least {minCalls} calls and p50, p90 or p99 changed by at least {minChange}% (up: regression, down: improvement). Call share: the method's calls as a share of all calls of the build, change in percentage points.</p>
      <Status s={sa.error ? sa : sb} what="slow methods" />
      {rows && <p id="compare-summary"><b>{regressions}</b> regression{regressions === 1 ? '' : 's'} from {a} to {b}.</p>}
      {rows && (
        <div class="scroll"><table class="grid" id="compare-table">
          <thead><tr><th>Method</th><th /><th class="num">Calls {a}</th><th class="num">Calls {b}</th><th class="num">Call share</th><th class="num">p50 {b}</th><th class="num">p50</th><th class="num">p90 {b}</th><th class="num">p90</th><th class="num">p99 {b}</th><th class="num">p99</th></tr></thead>
          <tbody>{rows.slice(0, 300).map((r) => (
            <tr class={r.flag}>
              <td class="method"><a href={href('method', { build: b, thread, m: methodKey(r.method) })}><Name m={r.method} /></a></td>
              <td>{r.flag && <span class={`badge ${r.flag === 'regression' ? 'bad' : 'ok'}`}>{r.flag}</span>}</td>
              <td class="num">{r.a ? fmtInt(r.a.count) : '–'}</td><td class="num">{r.b ? fmtInt(r.b.count) : '–'}</td>
              <td class="num">{Math.abs(r.share) < 0.0005 ? '0.0' : `${r.share > 0 ? '+' : '−'}${Math.abs(r.share * 100).toFixed(1)}`} pp</td>
              <td class="num">{r.b ? fmtDur(r.b.p50_us) : '–'}</td><td class="num"><Change v={r.ch.p50} /></td>
              <td class="num">{r.b ? fmtDur(r.b.p90_us) : '–'}</td><td class="num"><Change v={r.ch.p90} /></td>
              <td class="num">{r.b ? fmtDur(r.b.p99_us) : '–'}</td><td class="num"><Change v={r.ch.p99} /></td>
            </tr>))}</tbody>
        </table></div>)}
      <h3>Differential flame graph <span class="muted">{b}'s merged call tree; colour: change of each call path's share of all time since {a} (red: more, blue: less, dark red: new path)</span></h3>
      <Status s={ta.error ? ta : tb} what="the call trees" />
      {fa && fb && (fb.n
        ? <Flame id="diff-flame" tree={fb} baseTree={fa} zoom={params.zoom} onZoom={(z) => go('compare', { ...params, a, b, zoom: z })} />
        : <p>No calls in {b}.</p>)}
    </section>
  );
}

// ---- shell ----------------------------------------------------------------
const PAGES = [['overview', 'Overview'], ['slow', 'Slow methods'], ['flame', 'Flame graph'], ['blocks', 'Blocks'], ['launches', 'Launches'], ['network', 'Network'], ['compare', 'Compare builds']];
function App() {
  const { page, params } = useRoute();
  if (!session.key || page === 'signin') return <SignIn next={page} />;
  const keep = params.build ? { build: params.build } : {};
  const body = {
    overview: () => <Overview />, slow: () => <SlowMethods params={params} />, method: () => <MethodPage params={params} />,
    flame: () => <FlamePage params={params} />, compare: () => <ComparePage params={params} />, blocks: () => <BlocksPage params={params} />, block: () => <BlockPage params={params} />,
    launches: () => <LaunchesPage params={params} />, network: () => <NetworkPage params={params} />,
  }[page];
  return (
    <>
      <header>
        <a class="brand" href="#/overview">Beatline</a>
        <nav aria-label="pages">{PAGES.map(([p, l]) => <a href={href(p, keep)} aria-current={p === page || (page === 'method' && p === 'slow') || (page === 'block' && p === 'blocks') ? 'page' : undefined}>{l}</a>)}</nav>
        <span class="who">app <b>{session.app}</b> <button class="link" onClick={() => { session.clear(); go('signin', {}, true); }}>sign out</button></span>
      </header>
      <main>{body ? body() : <p class="error">No page “{page}”. <a href="#/overview">Overview</a></p>}</main>
    </>
  );
}

performance.mark('app start');
render(<App />, document.getElementById('app'));
performance.measure('app first render', 'app start');
