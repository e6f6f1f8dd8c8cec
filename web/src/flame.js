// A canvas flame graph of a merged call tree (the node shape of GET
// call-tree: {method, count, total_us, self_us, children}). One canvas, no
// DOM node per frame: d3-flame-graph (SVG, one <g> per frame) took 13 s to
// render and 6 s per click at 100,000 nodes here (docs/benchmarks.md).
//
// The tree is flattened once into typed arrays in depth-first preorder, so
// a node's subtree is the index range [i, end[i]) and a frame is drawn or
// hit-tested by one pass over the arrays. Widths are inclusive time
// (total_us); the colour shows either the method's package (inclusive
// mode) or the frame's self share (self mode: hotter = more self time).

import { fmtDur, fmtInt, fmtPct, methodName } from './format.js';

const ROW = 18;
const FONT = '11px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace';
const CHAR_W = 6.7;

// The flat tree every view draws from: nodes in depth-first preorder (a
// node's subtree is the index range [i, end[i])), numbers in typed arrays,
// each method once (mi[i] indexes methods / mname / mlabel / mcolor).
//
// fromColumns reads GET call-tree?format=columns or columns-binary
// (docs/api.md) directly:
// about a tenth of the nested JSON's text and no object per node, which is
// what made the 100,000-node first render slow (docs/benchmarks.md).
export function fromColumns(c) {
  const n = c.nodes | 0;
  // format=columns-binary's columns are typed arrays already (columns.js):
  // used as they are; JSON lists are copied into typed arrays
  const typed = (a, T) => (ArrayBuffer.isView(a) ? a : T.from(a));
  const parent = typed(c.parent, Int32Array);
  const mi = typed(c.method, Int32Array);
  const w = typed(c.total_us, Float64Array);
  const t = {
    n, parent, mi, w, self: typed(c.self_us, Float64Array), count: typed(c.count, Float64Array),
    depth: new Uint16Array(n), end: new Int32Array(n), x0: new Float64Array(n), childIdx: new Int32Array(n),
    maxDepth: 0, total: 0, ...methodTables(c.methods || []),
  };
  if (parent.length !== n || mi.length !== n || w.length !== n) throw new Error('call tree: columns of different lengths');
  const kids = new Int32Array(n); // children seen so far per node
  const next = new Float64Array(n); // where a node's next child starts
  let roots = 0;
  let rx = 0;
  for (let i = 0; i < n; i++) {
    const p = parent[i];
    if (p >= i) throw new Error('call tree: a parent after its child');
    t.end[i] = i + 1;
    if (p < 0) {
      t.x0[i] = rx; rx += w[i]; t.childIdx[i] = roots++;
    } else {
      const d = t.depth[p] + 1;
      t.depth[i] = d;
      if (d > t.maxDepth) t.maxDepth = d;
      t.x0[i] = next[p]; next[p] += w[i]; t.childIdx[i] = kids[p]++;
    }
    next[i] = t.x0[i];
  }
  for (let i = n - 1; i > 0; i--) { const p = parent[i]; if (p >= 0 && t.end[i] > t.end[p]) t.end[p] = t.end[i]; }
  t.total = rx;
  return t;
}

// per method: full name (search), label (frames), colour (package)
function methodTables(methods) {
  const colors = new Map();
  const mname = new Array(methods.length);
  const mlabel = new Array(methods.length);
  const mcolor = new Array(methods.length);
  methods.forEach((m, k) => {
    const cls = (m && m.class) || '?';
    const nm = m ? m.name : '(no calls)';
    mname[k] = `${cls}.${nm}`;
    const dot = cls.lastIndexOf('.');
    mlabel[k] = `${dot >= 0 ? cls.slice(dot + 1) : cls}.${nm}`;
    const pkg = dot >= 0 ? cls.slice(0, dot) : '';
    let col = colors.get(pkg);
    if (!col) { col = hue(pkg); colors.set(pkg, col); }
    mcolor[k] = col;
  });
  return { methods, mname, mlabel, mcolor };
}

// A nested tree (the node shape of GET call-tree's json format, of
// /blocks/{sig}'s call_tree, of /launches/tree) as columns, then flat.
export function toColumns(roots) {
  const parent = []; const method = []; const count = []; const total = []; const self = [];
  const methods = []; const index = new Map();
  const st = [];
  for (let r = roots.length - 1; r >= 0; r--) st.push(roots[r], -1);
  while (st.length) {
    const p = st.pop(); const node = st.pop();
    const i = parent.length;
    const m = node.method || null;
    const key = m ? `${m.class}\u0000${m.name}\u0000${m.descriptor}` : '';
    let k = index.get(key);
    if (k === undefined) { k = methods.length; index.set(key, k); methods.push(m); }
    parent.push(p); method.push(k); count.push(node.count || 0); total.push(node.total_us || 0); self.push(node.self_us || 0);
    const ch = node.children;
    if (ch) for (let c = ch.length - 1; c >= 0; c--) st.push(ch[c], i);
  }
  return { nodes: parent.length, parent, method, count, total_us: total, self_us: self, methods };
}
export const flatten = (roots) => fromColumns(toColumns(roots || []));

// An API answer holding a tree, whichever form: format=columns, or nested
// under roots / call_tree / tree (a bare array of roots too).
export function treeOf(answer) {
  if (!answer) return fromColumns(toColumns([]));
  if (Array.isArray(answer)) return flatten(answer);
  if (answer.format === 'columns' || answer.format === 'columns-binary' || Array.isArray(answer.parent)) return fromColumns(answer);
  return flatten(answer.roots || answer.call_tree || (Array.isArray(answer.tree) ? answer.tree : []) || []);
}
// the method object of node i, and its key (class.name(descriptor))
export const methodOf = (t, i) => t.methods[t.mi[i]];

// a stable warm colour per package (flame-graph convention)
function hue(pkg) {
  let h = 0;
  for (let k = 0; k < pkg.length; k++) h = (h * 31 + pkg.charCodeAt(k)) | 0;
  const a = Math.abs(h);
  return `hsl(${10 + (a % 40)}, ${65 + (a % 20)}%, ${55 + ((a >> 5) % 12)}%)`;
}
function heat(f) { // self share 0..1 → pale yellow .. red
  return `hsl(${Math.round(50 - 50 * f)}, 85%, ${Math.round(78 - 28 * f)}%)`;
}

// The path of child positions from the root ("2.0.1"): a stable deep-link
// name of a node for the same data.
export function nodePath(t, i) {
  const parts = [];
  for (let k = i; k >= 0; k = t.parent[k]) parts.push(t.childIdx[k]);
  return parts.reverse().join('.');
}
export function nodeOfPath(t, path) {
  if (!path) return -1;
  const want = path.split('.').map(Number);
  let i = 0;
  let lo = 0;
  let hi = t.n;
  for (let d = 0; d < want.length; d++) {
    let found = -1;
    for (i = lo; i < hi; i = t.end[i]) if (t.depth[i] === d && t.childIdx[i] === want[d]) { found = i; break; }
    if (found < 0) return -1;
    lo = found + 1; hi = t.end[found];
    i = found;
  }
  return i;
}

export class FlameGraph {
  // el: a container element; opts.onZoom(index or -1), opts.onHover
  constructor(el, opts = {}) {
    this.el = el;
    this.opts = opts;
    this.canvas = document.createElement('canvas');
    this.canvas.className = 'flame-canvas';
    this.canvas.tabIndex = 0;
    this.canvas.setAttribute('role', 'img');
    this.canvas.setAttribute('aria-label', 'flame graph: click a frame to zoom; keyboard: arrows select a frame, Enter zooms, Escape resets');
    this.tip = document.createElement('div');
    this.tip.className = 'flame-tip';
    this.tip.hidden = true;
    el.append(this.canvas, this.tip);
    this.t = null;
    this.zoom = -1;
    this.search = '';
    this.match = null;
    this.mode = 'incl';
    this.hover = -1;
    this.canvas.addEventListener('click', (e) => this.onClick(e));
    this.canvas.addEventListener('mousemove', (e) => this.onMove(e));
    this.canvas.addEventListener('mouseleave', () => { this.hover = -1; this.tip.hidden = true; });
    // keyboard: arrows move a selected frame (up: caller, down: first
    // callee, left/right: siblings), Enter zooms to it, Escape resets
    this.sel = -1;
    this.live = document.createElement('div');
    this.live.className = 'sr-only';
    this.live.setAttribute('aria-live', 'polite');
    el.append(this.live);
    this.canvas.addEventListener('focus', () => {
      // a keyboard focus selects a frame; a click's focus does not
      if (this.sel < 0 && this.t && this.t.n && this.canvas.matches(':focus-visible')) this.select(this.zoom >= 0 ? this.zoom : 0);
    });
    this.canvas.addEventListener('blur', () => { this.tip.hidden = true; });
    this.canvas.addEventListener('keydown', (e) => this.onKey(e));
    this.ro = new ResizeObserver(() => this.draw());
    this.ro.observe(el);
  }
  destroy() { this.ro.disconnect(); this.el.replaceChildren(); }
  setData(t) { this.t = t; this.zoom = -1; this.sel = -1; this.setSearch(this.search, false); this.draw(); }
  setMode(m) { this.mode = m; this.draw(); }
  setZoom(i, notify = false) {
    this.zoom = i;
    this.draw();
    if (notify && this.opts.onZoom) this.opts.onZoom(i);
  }
  // highlights frames whose name contains q (case-insensitive); returns
  // {frames, share}: matching frames and their share of the time (outermost
  // matches only, so nested matches are not counted twice)
  setSearch(q, redraw = true) {
    this.search = q;
    const t = this.t;
    this.match = null;
    let frames = 0; let time = 0;
    if (t && q) {
      const lq = q.toLowerCase();
      const mm = Uint8Array.from(t.mname, (s) => (s.toLowerCase().includes(lq) ? 1 : 0)); // per method
      this.match = new Uint8Array(t.n);
      let coveredUntil = -1;
      for (let i = 0; i < t.n; i++) {
        if (mm[t.mi[i]]) {
          this.match[i] = 1; frames++;
          if (i >= coveredUntil) { time += t.w[i]; coveredUntil = t.end[i]; }
        }
      }
    }
    if (redraw) this.draw();
    return { frames, share: t && t.total ? time / t.total : 0 };
  }
  view() {
    const t = this.t;
    if (this.zoom < 0) return { x0: 0, w: t.total || 1, d0: 0 };
    return { x0: t.x0[this.zoom], w: t.w[this.zoom] || 1, d0: 0 };
  }
  draw() {
    const t = this.t;
    const c = this.canvas;
    const cssW = Math.max(200, this.el.clientWidth);
    const depth = t ? t.maxDepth + 1 : 1;
    const cssH = Math.min(depth, 400) * ROW + 2;
    const dpr = window.devicePixelRatio || 1;
    if (c.width !== Math.round(cssW * dpr) || c.height !== Math.round(cssH * dpr)) {
      c.width = Math.round(cssW * dpr); c.height = Math.round(cssH * dpr);
      c.style.width = `${cssW}px`; c.style.height = `${cssH}px`;
    }
    const g = c.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, cssW, cssH);
    if (!t || !t.n) return;
    g.font = FONT;
    g.textBaseline = 'middle';
    const { x0, w } = this.view();
    const scale = cssW / w;
    const z = this.zoom;
    const zEnd = z >= 0 ? t.end[z] : t.n;
    const anc = new Set();
    for (let k = z; k >= 0; k = t.parent[k]) anc.add(k);
    let i = 0;
    while (i < t.n) {
      const inSub = z < 0 || (i >= z && i < zEnd);
      if (!inSub && !anc.has(i)) { i = t.end[i]; continue; } // beside the zoomed frame
      let px; let pw;
      if (anc.has(i) && i !== z) { px = 0; pw = cssW; } else { px = (t.x0[i] - x0) * scale; pw = t.w[i] * scale; }
      // under a pixel: not drawn, nor is its subtree (narrower still); so a
      // 100,000-node tree costs the frames one can see, not its size
      if (pw < 1 || px > cssW || px + pw < 0) { i = inSub ? t.end[i] : i + 1; continue; }
      const y = t.depth[i] * ROW;
      if (t.depth[i] >= 400) { i = t.end[i]; continue; }
      const dim = this.match && !this.match[i];
      g.fillStyle = this.match && this.match[i] ? '#d63af9'
        : this.opts.colorOf ? this.opts.colorOf(i)
          : this.mode === 'self' ? heat(t.w[i] ? t.self[i] / t.w[i] : 0) : t.mcolor[t.mi[i]];
      g.globalAlpha = dim ? 0.35 : anc.has(i) && i !== z ? 0.6 : 1;
      g.fillRect(px, y, Math.max(pw - 0.5, 1), ROW - 1);
      if (pw > 28) {
        const label = t.mlabel[t.mi[i]];
        const fit = Math.floor((pw - 6) / CHAR_W);
        g.fillStyle = '#1b1b1b';
        g.fillText(fit >= label.length ? label : `${label.slice(0, Math.max(1, fit - 1))}…`, Math.max(px, 0) + 3, y + ROW / 2);
      }
      g.globalAlpha = 1;
      if (i === this.sel) {
        g.strokeStyle = '#0b3d91';
        g.lineWidth = 2;
        g.strokeRect(Math.max(px, 0) + 1, y + 1, Math.min(pw, cssW) - 2.5, ROW - 3);
      }
      i++;
    }
  }
  onKey(e) {
    const t = this.t;
    if (!t || !t.n) return;
    const i = this.sel < 0 ? 0 : this.sel;
    let j = -1;
    if (e.key === 'Escape') { this.setZoom(-1, true); e.preventDefault(); return; }
    if (e.key === 'Enter' || e.key === ' ') { this.setZoom(i, true); e.preventDefault(); return; }
    if (e.key === 'ArrowUp') j = t.parent[i];
    else if (e.key === 'ArrowDown') j = i + 1 < t.end[i] ? i + 1 : -1;
    else if (e.key === 'ArrowRight') { const p = t.parent[i]; const stop = p >= 0 ? t.end[p] : t.n; j = t.end[i] < stop ? t.end[i] : -1; }
    else if (e.key === 'ArrowLeft') {
      const p = t.parent[i];
      for (let k = p >= 0 ? p + 1 : 0; k < i; k = t.end[k]) if (t.end[k] === i) j = k;
    } else return;
    e.preventDefault();
    if (j >= 0) this.select(j);
  }
  // selects frame i (keyboard): outlined, its figures in the tooltip and read out
  select(i) {
    this.sel = i;
    this.draw();
    const lines = this.tipLines(i);
    this.live.textContent = lines.join('. ');
    this.tip.replaceChildren(...lines.map((s, k) => { const d = document.createElement('div'); d.textContent = s; if (!k) d.className = 'tip-name'; return d; }));
    const { x0, w } = this.view();
    const cssW = this.canvas.clientWidth;
    const px = Math.max(0, (this.t.x0[i] - x0) * (cssW / w));
    this.tip.hidden = false;
    this.tip.style.left = `${Math.min(px, Math.max(0, cssW - 340))}px`;
    this.tip.style.top = `${(this.t.depth[i] + 1) * ROW + 4}px`;
  }
  hit(e) {
    const t = this.t;
    if (!t) return -1;
    const r = this.canvas.getBoundingClientRect();
    const mx = e.clientX - r.left;
    const d = Math.floor((e.clientY - r.top) / ROW);
    const cssW = r.width;
    const { x0, w } = this.view();
    const scale = cssW / w;
    const z = this.zoom;
    for (let k = z; k >= 0; k = t.parent[k]) if (t.depth[k] === d) return k; // an ancestor bar (full width)
    let i = z >= 0 ? z : 0;
    const stop = z >= 0 ? t.end[z] : t.n;
    while (i < stop) {
      const px = (t.x0[i] - x0) * scale;
      const pw = t.w[i] * scale;
      if (mx < px || mx >= px + pw || t.depth[i] > d) { i = t.end[i]; continue; }
      if (t.depth[i] === d) return i;
      i++;
    }
    return -1;
  }
  onClick(e) {
    const i = this.hit(e);
    if (i < 0) return;
    this.setZoom(i === this.zoom ? this.t.parent[i] : i, true);
  }
  onMove(e) {
    const i = this.hit(e);
    if (i === this.hover && i >= 0) { this.placeTip(e); return; }
    this.hover = i;
    if (i < 0) { this.tip.hidden = true; return; }
    const lines = this.tipLines(i);
    this.tip.replaceChildren(...lines.map((s, k) => { const d = document.createElement('div'); d.textContent = s; if (!k) d.className = 'tip-name'; return d; }));
    this.tip.hidden = false;
    this.placeTip(e);
  }
  tipLines(i) {
    const t = this.t;
    const p = t.parent[i];
    return [
      methodName(methodOf(t, i), true),
      `calls ${fmtInt(t.count[i])} · total ${fmtDur(t.w[i])} · self ${fmtDur(t.self[i])}`,
      `${fmtPct(t.total ? t.w[i] / t.total : 0)} of all${p >= 0 ? ` · ${fmtPct(t.w[p] ? t.w[i] / t.w[p] : 0)} of its caller` : ''}`,
      ...(this.opts.extraTip ? this.opts.extraTip(i) : []),
    ];
  }
  placeTip(e) {
    const r = this.el.getBoundingClientRect();
    let x = e.clientX - r.left + 12;
    const y = e.clientY - r.top + 14;
    if (x + 320 > r.width) x = Math.max(0, x - 340);
    this.tip.style.left = `${x}px`;
    this.tip.style.top = `${y}px`;
  }
}
