// Units as people read them. Durations arrive in µs (docs/api.md).

// unit: 'auto' | 'us' | 'ms' | 's'
export function fmtDur(us, unit = 'auto') {
  if (us == null || !Number.isFinite(us)) return '–';
  let u = unit;
  if (u === 'auto') u = us < 1000 ? 'us' : us < 1e6 ? 'ms' : 's';
  if (u === 'us') return `${Math.round(us).toLocaleString('en-US')} µs`;
  if (u === 'ms') return `${trim(us / 1000)} ms`;
  return `${trim(us / 1e6)} s`;
}

function trim(v) {
  const a = Math.abs(v);
  const d = a >= 100 ? 0 : a >= 10 ? 1 : 2;
  return v.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: 0 });
}

export const fmtInt = (n) => (n == null ? '–' : Number(n).toLocaleString('en-US'));
export const fmtPct = (f) => (Number.isFinite(f) ? `${(f * 100).toFixed(f < 0.1 ? 1 : 0)}%` : '–');
export const fmtTime = (usEpoch) =>
  usEpoch ? new Date(usEpoch / 1000).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC') : '–';
export const fmtBytes = (b) =>
  b == null ? '–' : b < 1024 ? `${b} B` : b < 1 << 20 ? `${(b / 1024).toFixed(1)} KiB` : `${(b / (1 << 20)).toFixed(1)} MiB`;

// A method object {class, name, descriptor, source_file} as one line.
export function methodName(m, withDesc = false) {
  if (!m) return '(no calls)';
  const cls = m.class || '?';
  return `${cls}.${m.name}${withDesc && m.descriptor ? m.descriptor : ''}`;
}
export function shortName(m) {
  if (!m) return '(no calls)';
  const cls = m.class || '?';
  const dot = cls.lastIndexOf('.');
  return `${dot >= 0 ? cls.slice(dot + 1) : cls}.${m.name}`;
}
// The key the call-tree `root` parameter takes: class.method(descriptor).
export const methodKey = (m) => `${m.class}.${m.name}${m.descriptor || ''}`;
