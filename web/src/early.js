// The early script: about 1 KB that index.html runs first (a classic
// script before the stylesheet: nothing waits before it, and it runs
// before the app's bundle can). When the page opens on the flame graph it asks for the call
// tree at once, so the server works on the longest answer while the bundle
// is still loading and compiling; the app takes the response (main.jsx
// useApi, window.__beatlineEarly) instead of asking again. Nothing else.
import { apiFetch, apiUrl, session } from './api.js';
import { flameQuery, parseHash } from './route.js';

const { page, params } = parseHash();
if (page === 'flame' && session.key && session.app) {
  const url = apiUrl('/call-tree', flameQuery(params));
  const res = apiFetch(url, session.key);
  res.catch(() => {}); // its error goes to the app, which awaits it
  window.__beatlineEarly = { url, res };
  performance.mark('early fetch');
  // never taken (the app did not load, or went elsewhere): dropped
  setTimeout(() => { if (window.__beatlineEarly && window.__beatlineEarly.res === res) delete window.__beatlineEarly; }, 60000);
}
