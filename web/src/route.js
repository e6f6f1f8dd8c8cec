// The view in the URL's fragment (#/page?build=…&…) and the requests a
// view starts with: shared by the app (main.jsx) and the early script
// (early.js), which asks for the flame graph's tree before the app loads.
export function parseHash() {
  const h = location.hash.replace(/^#\/?/, '');
  const [page, qs] = h.split('?');
  return { page: page || 'overview', params: Object.fromEntries(new URLSearchParams(qs || '')) };
}

// the flame graph page's call-tree request (GET call-tree, docs/api.md):
// the binary columns, read straight into typed arrays (columns.js)
export const flameQuery = (params) => ({ build: params.build, thread: params.thread || 'all', limit: 100000, max_depth: 4096, format: 'columns-binary' });
