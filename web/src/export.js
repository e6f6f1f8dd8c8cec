// Exports of a merged call tree (the flat tree of flame.js), built in
// the browser from the tree on screen: widths are inclusive time laid out as in
// the flame graph (children one after another from their parent's start),
// so the files show the same picture in other tools.
//
// speedscope: an "evented" profile (https://www.speedscope.app/file-format-schema.json),
// one open/close pair per node, in µs. Chrome trace-event JSON: one
// complete ("X") event per node (opens in Perfetto UI and chrome://tracing).
import { methodName } from './format.js';

// The flat tree's nodes (flame.js, depth-first preorder) laid out in time:
// [start, end) per node, children one after another from their parent's
// start, a child that would end past its parent cut at the parent's end.
function layout(t) {
  const a = new Float64Array(t.n);
  const b = new Float64Array(t.n);
  const next = new Float64Array(t.n);
  let x = 0;
  for (let i = 0; i < t.n; i++) {
    const p = t.parent[i];
    if (p < 0) { a[i] = x; b[i] = x + t.w[i]; x = b[i]; } else {
      a[i] = Math.min(next[p], b[p]); b[i] = Math.min(next[p] + t.w[i], b[p]); next[p] += t.w[i];
    }
    next[i] = a[i];
  }
  return { a, b, end: x };
}

export function toSpeedscope(t, name) {
  const { a, b, end } = layout(t);
  const frames = t.methods.map((m) => (m && m.source_file ? { name: methodName(m, true), file: m.source_file } : { name: methodName(m, true) }));
  const events = [];
  const open = []; // the open nodes, innermost last
  for (let i = 0; i <= t.n; i++) {
    // close what does not hold node i (all of them after the last node)
    while (open.length && (i === t.n || t.end[open[open.length - 1]] <= i)) {
      const j = open.pop();
      events.push({ type: 'C', frame: t.mi[j], at: b[j] });
    }
    if (i === t.n) break;
    events.push({ type: 'O', frame: t.mi[i], at: a[i] });
    open.push(i);
  }
  return {
    $schema: 'https://www.speedscope.app/file-format-schema.json',
    name, exporter: 'beatline', activeProfileIndex: 0,
    shared: { frames },
    profiles: [{ type: 'evented', name, unit: 'microseconds', startValue: 0, endValue: end, events }],
  };
}

export function toChromeTrace(t, name) {
  const { a, b } = layout(t);
  const names = t.methods.map((m) => methodName(m, true));
  const traceEvents = [{ name: 'thread_name', ph: 'M', pid: 1, tid: 1, args: { name } }];
  for (let i = 0; i < t.n; i++) {
    traceEvents.push({ name: names[t.mi[i]], cat: 'beatline', ph: 'X', ts: a[i], dur: b[i] - a[i], pid: 1, tid: 1,
      args: { calls: t.count[i], total_us: t.w[i], self_us: t.self[i] } });
  }
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
