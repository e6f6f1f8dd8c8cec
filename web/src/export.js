// Exports of a merged call tree (the node shape of GET call-tree), built in
// the browser from the API's tree: widths are inclusive time laid out as in
// the flame graph (children one after another from their parent's start),
// so the files show the same picture in other tools.
//
// speedscope: an "evented" profile (https://www.speedscope.app/file-format-schema.json),
// one open/close pair per node, in µs. Chrome trace-event JSON: one
// complete ("X") event per node (opens in Perfetto UI and chrome://tracing).
import { methodName } from './format.js';

// calls visit(node, start_us, end_us, depth, phase) with phase 'open' before a node's
// children and 'close' after them; a child that would end past its parent is cut
function walk(roots, visit) {
  let x = 0;
  for (const r of roots) {
    const st = [[r, x, x + (r.total_us || 0), 0, false]];
    x += r.total_us || 0;
    while (st.length) {
      const e = st.pop();
      const [n, a, b, d, done] = e;
      if (done) { visit(n, a, b, d, 'close'); continue; }
      visit(n, a, b, d, 'open');
      st.push([n, a, b, d, true]);
      const kids = n.children || [];
      let cx = a;
      const spans = kids.map((c) => { const s0 = Math.min(cx, b); cx += c.total_us || 0; return [s0, Math.min(cx, b)]; });
      for (let k = kids.length - 1; k >= 0; k--) st.push([kids[k], spans[k][0], spans[k][1], d + 1, false]);
    }
  }
  return x;
}

export function toSpeedscope(roots, name) {
  const frames = [];
  const index = new Map();
  const events = [];
  const frameOf = (m) => {
    const key = m ? `${m.class}\u0000${m.name}\u0000${m.descriptor}` : '';
    let i = index.get(key);
    if (i === undefined) {
      i = frames.length;
      index.set(key, i);
      frames.push(m && m.source_file ? { name: methodName(m, true), file: m.source_file } : { name: methodName(m, true) });
    }
    return i;
  };
  const end = walk(roots, (n, a, b, d, phase) => {
    events.push({ type: phase === 'open' ? 'O' : 'C', frame: frameOf(n.method), at: phase === 'open' ? a : b });
  });
  return {
    $schema: 'https://www.speedscope.app/file-format-schema.json',
    name, exporter: 'beatline', activeProfileIndex: 0,
    shared: { frames },
    profiles: [{ type: 'evented', name, unit: 'microseconds', startValue: 0, endValue: end, events }],
  };
}

export function toChromeTrace(roots, name) {
  const traceEvents = [{ name: 'thread_name', ph: 'M', pid: 1, tid: 1, args: { name } }];
  walk(roots, (n, a, b, d, phase) => {
    if (phase !== 'open') return;
    traceEvents.push({ name: methodName(n.method, true), cat: 'beatline', ph: 'X', ts: a, dur: b - a, pid: 1, tid: 1,
      args: { calls: n.count, total_us: n.total_us, self_us: n.self_us } });
  });
  return { traceEvents, displayTimeUnit: 'ms', otherData: { exporter: 'beatline', note: 'merged call tree: times are summed over calls, laid out one after another' } };
}

// offers obj as a JSON file download
export function download(obj, filename) {
  const url = URL.createObjectURL(new Blob([JSON.stringify(obj)], { type: 'application/json' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}
