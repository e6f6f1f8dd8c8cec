// Stand-in answers for GET /launches, /launches/tree and /network (issues
// 15 and 16), in the shapes of docs/api.md ("Launches", "Network"), for a
// server that does not have those endpoints yet. browser.mjs serves them
// through playwright's page routing ONLY when the real server answers
// 404 "no endpoint …"; a server that has the endpoints is used as it is
// (then the launch and network events test/seed.mjs posts are its data).
// The figures are made up but shaped like that seed: the shop app's
// methods, three launch kinds, four URL patterns on two hosts.

const M = (cls, name, descriptor, file) => ({ class: `com.example.shop.${cls}`, name, descriptor, source_file: file });
const ON_CREATE = M('MainActivity', 'onCreate', '(Landroid/os/Bundle;)V', 'MainActivity.java');
const MIGRATE = M('db.Database', 'migrate', '()V', 'Database.java');
const QUERY = M('db.Database', 'query', '(Ljava/lang/String;)Landroid/database/Cursor;', 'Database.java');
const VIEW = M('feed.FeedFragment', 'onViewCreated', '()V', 'FeedFragment.java');
const LOAD = M('feed.FeedRepository', 'load', '()Ljava/util/List;', 'FeedRepository.java');
const PARSE = M('net.JsonParser', 'parse', '(Ljava/lang/String;)Ljava/lang/Object;', 'JsonParser.java');
const BIND = M('feed.FeedAdapter', 'onBindViewHolder', '(I)V', 'FeedAdapter.java');
const FORMAT = M('util.Strings', 'format', '(Ljava/lang/String;)Ljava/lang/String;', 'Strings.java');
const RESIZE = M('image.ImageLoader', 'resize', '(II)V', 'ImageLoader.java');
const TOTAL = M('cart.CartViewModel', 'total', '()J', 'CartViewModel.java');
const EXECUTE = M('net.HttpClient', 'execute', '(Ljava/lang/String;)[B', 'HttpClient.java');
const UPLOAD = M('sync.SyncWorker', 'upload', '([B)V', 'SyncWorker.java');
const DECODE = M('image.ImageLoader', 'decode', '([B)Landroid/graphics/Bitmap;', 'ImageLoader.java');

const pct = (count, p50, p90, p99, max) => ({ count, p50_us: p50, p90_us: p90, p99_us: p99, max_us: max });
const phase = (name, ...a) => ({ phase: name, ...pct(...a) });
const hour = 3600e6;

function launches(build, now) {
  const x = build === '7.0' ? 1 : 1.6; // 7.1's database is slower (seed.mjs)
  const r = (v) => Math.round(v * x);
  return [
    { kind: 'cold', count: 3, first_at: now - 6 * hour, last_at: now - 3 * hour, activity: 'com.example.shop.MainActivity',
      phases: [phase('application_attach_base_context', 3, 4352, 5376, 5376, 5376), phase('application_on_create', 3, 31744, 36864, 36864, 36864),
        phase('activity_on_create', 3, r(30720), r(40960), r(40960), r(41234)), phase('activity_on_start', 3, 11, 16, 16, 16), phase('activity_on_resume', 3, 14, 18, 18, 18)],
      ttid: pct(3, r(90112), r(102400), r(102400), r(102912)), ttfd: pct(3, r(120832), r(143360), r(143360), r(144001)),
      slowest_methods: [{ method: QUERY, count: 3, total_us: r(30000), self_us: r(30000), launches: 3 }, { method: ON_CREATE, count: 3, total_us: r(91000), self_us: 6000, launches: 3 },
        { method: PARSE, count: 3, total_us: 15000, self_us: 15000, launches: 3 }] },
    { kind: 'warm', count: 2, first_at: now - 4 * hour, last_at: now - hour, activity: 'com.example.shop.MainActivity',
      phases: [phase('activity_on_create', 2, r(28672), r(34816), r(34816), r(34999)), phase('activity_on_start', 2, 12, 15, 15, 15), phase('activity_on_resume', 2, 13, 17, 17, 17)],
      ttid: pct(2, r(28800), r(34944), r(34944), r(35100)), ttfd: null,
      slowest_methods: [{ method: QUERY, count: 2, total_us: r(20000), self_us: r(20000), launches: 2 }] },
    { kind: 'hot', count: 1, first_at: now - 2 * hour, last_at: now - 2 * hour, activity: 'com.example.shop.MainActivity',
      phases: [phase('activity_on_start', 1, 9, 9, 9, 9), phase('activity_on_resume', 1, 15, 15, 15, 15)],
      ttid: pct(1, 38, 38, 38, 38), ttfd: null, slowest_methods: [] },
  ];
}

const node = (method, count, total, self, children = []) => ({ method, count, total_us: total, self_us: self, children });
function launchTree(build, kind) {
  if (kind === 'hot') return [];
  const n = kind === 'cold' ? 3 : 2;
  const x = build === '7.0' ? 1 : 3;
  const q = Math.round(10000 * x) * n;
  const load = q + 5000 * n + 800 * n;
  const view = load + 5 * 700 * n + 1000 * n + 500 * n;
  return [node(ON_CREATE, n, 2000 * n + 3000 * n + view, 2000 * n, [
    node(VIEW, n, view, 500 * n, [
      node(LOAD, n, load, 800 * n, [node(QUERY, n, q, q), node(PARSE, n, 5000 * n, 5000 * n)]),
      node(BIND, 5 * n, 5 * 700 * n, 5 * 300 * n, [node(RESIZE, 5 * n, 5 * 300 * n, 5 * 300 * n), node(FORMAT, 5 * n, 5 * 100 * n, 5 * 100 * n)]),
      node(TOTAL, n, 1000 * n, 1000 * n)]),
    node(MIGRATE, n, 3000 * n, 3000 * n)])];
}

function requests(build) {
  const slow = build === '7.0' ? 1 : 3;
  const row = (host, http_method, pattern, count, errors, status, p50, p90, p99, ttfb, bytes_in, bytes_out, callers) => ({
    host, pattern, http_method, count, errors, error_rate: count ? errors / count : 0, status,
    p50_us: p50, p90_us: p90, p99_us: p99, max_us: p99, ttfb_p50_us: ttfb, bytes_in, bytes_out, callers });
  return [
    row('api.shop.example', 'GET', '/v2/feed/{id}', 12, 0, { '2xx': 12 }, 61440, 88064, 94208, 43008, 301234, 3600, [{ method: LOAD, count: 12 }]),
    row('api.shop.example', 'GET', '/v2/users/{uuid}/cart', 12, 3, { '2xx': 9, '4xx': 3 }, 58368, 83968, 90112, 40960, 190000, 3600, [{ method: TOTAL, count: 12 }]),
    row('api.shop.example', 'POST', '/v2/sync/upload', 12, slow > 1 ? 5 : 0, slow > 1 ? { '2xx': 7, '5xx': 5 } : { '2xx': 12 },
      61440 * slow, 92160 * slow, 100352 * slow, 45056 * slow, 240000, 270000, [{ method: UPLOAD, count: 10 }, { method: EXECUTE, count: 2 }]),
    row('cdn.shop.example', 'GET', '/img/{hex}.jpg', 12, 0, { '2xx': 12 }, 63488, 86016, 92160, 44032, 280000, 3600, [{ method: DECODE, count: 12 }]),
    row('api.shop.example', 'GET', '/v2/config', 6, 6, {}, 10000, 10000, 10000, null, 0, 1500, [{ method: EXECUTE, count: 6 }]),
  ];
}

const SORTS = { count: 'count', errors: 'errors', p50: 'p50_us', p90: 'p90_us', p99: 'p99_us', bytes: (r) => r.bytes_in + r.bytes_out };

// The answer for a request URL (a URL object) of app `app`, or null when
// the path is none of the three. Errors as the real endpoints' (400 JSON).
export function fixture(u, now = Date.now() * 1000) {
  const m = u.pathname.match(/^\/v1\/apps\/([^/]+)\/(launches|launches\/tree|network)$/);
  if (!m) return null;
  const app = decodeURIComponent(m[1]);
  const q = u.searchParams;
  const build = q.get('build') || '7.1';
  const kind = q.get('kind') || '';
  if (kind && !['cold', 'warm', 'hot'].includes(kind)) return { status: 400, body: { error: "'kind' must be one of cold, warm, hot" } };
  if (m[2] === 'launches') return { status: 200, body: { app, build, launches: launches(build, now).filter((k) => !kind || k.kind === kind) } };
  if (m[2] === 'launches/tree') return { status: 200, body: { app, build, kind: kind || 'cold', truncated: false, roots: launchTree(build, kind || 'cold') } };
  const sort = q.get('sort') || 'count';
  if (!SORTS[sort]) return { status: 400, body: { error: "'sort' must be one of count, p50, p90, p99, errors, bytes" } };
  const key = typeof SORTS[sort] === 'function' ? SORTS[sort] : (r) => r[SORTS[sort]];
  const rows = requests(build).filter((r) => (!q.get('host') || r.host === q.get('host')) && (!q.get('method') || r.http_method === q.get('method')))
    .sort((a, b) => key(b) - key(a) || b.count - a.count);
  return { status: 200, body: { app, build, sort, requests: rows.slice(0, Number(q.get('limit') || 50)) } };
}
