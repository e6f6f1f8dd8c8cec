import { decodeColumns } from './columns.js';

// The JSON API (docs/api.md) with the read key. The key lives in
// sessionStorage only (this tab, until it closes): never in a URL, a cookie
// or a log line.
const KEY = 'beatline.readKey';
const APP = 'beatline.app';

export const session = {
  get key() { return sessionStorage.getItem(KEY); },
  get app() { return sessionStorage.getItem(APP); },
  set(app, key) { sessionStorage.setItem(APP, app); sessionStorage.setItem(KEY, key); },
  clear() { sessionStorage.removeItem(KEY); sessionStorage.removeItem(APP); },
};

export class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

// The URL of GET /v1/apps/{app}{path}?params (empty params left out).
export function apiUrl(path, params = {}, app = session.app) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, v);
  const qs = q.toString();
  return `/v1/apps/${encodeURIComponent(app)}${path}${qs ? `?${qs}` : ''}`;
}
// The request itself, with the key in its Authorization header.
export function apiFetch(url, key, signal) {
  return fetch(url, { headers: { Authorization: `Bearer ${key}` }, signal, cache: 'no-store' });
}

// GET /v1/apps/{app}{path}?params with the session's key; the JSON answer
// (a binary call tree decoded to the same shape), or ApiError(status, the server's "error" text). started: the response of
// the same request already sent (early.js), awaited instead of a new one.
export async function api(path, params = {}, { app = session.app, key = session.key, signal, started } = {}) {
  let res;
  try {
    res = await (started || apiFetch(apiUrl(path, params, app), key, signal));
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, 'the server cannot be reached');
  }
  // timed (performance.measure "api PATH body": the body's arrival and its
  // JSON parse; the flame graph's benchmark splits it with resource timing)
  // (application/octet-stream: format=columns-binary, read by decodeColumns)
  const t0 = performance.now();
  let body = null;
  if (res.ok && (res.headers.get('Content-Type') || '').startsWith('application/octet-stream')) {
    try { body = decodeColumns(await res.arrayBuffer()); } catch (e) { throw new ApiError(0, e.message); }
  } else {
    try { body = await res.json(); } catch { /* not JSON */ }
  }
  performance.measure(`api ${path} body`, { start: t0 });
  if (!res.ok) throw new ApiError(res.status, (body && body.error) || `HTTP ${res.status}`);
  return body;
}

// The wording a person needs for a refused key.
export function keyMessage(err, app) {
  if (err.status === 401 || err.status === 403)
    return `This read key is not accepted for the app “${app}”: check the key (it starts with blk_read_) and the app's name.`;
  if (err.status === 400) return `“${app}” is not a valid app name.`;
  return `Cannot sign in: ${err.message}`;
}

// GET /healthz and /metrics (no key).
export async function health() {
  try {
    const r = await fetch('/healthz', { cache: 'no-store' });
    return await r.json();
  } catch { return { status: 'unreachable' }; }
}
export async function metric(name) {
  try {
    const t = await (await fetch('/metrics', { cache: 'no-store' })).text();
    for (const line of t.split('\n')) {
      const [k, v] = line.split(' ');
      if (k === name) return Number(v);
    }
  } catch { /* shown as unknown */ }
  return null;
}
