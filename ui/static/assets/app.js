// The shell: hash routes to views, the navigation, the token form and the refresh timer.
// Each view module exports render(root, params, query), which fills root and returns when its
// data is on the page; the shell marks <body data-view data-state data-shown> (the view's name,
// loading / ready / error / auth, and the hash it rendered) so that a test can tell them apart.
import { onUnauthorized, setToken, token } from './api.js';
import { clearNotice } from './actions.js';
import { h } from './dom.js';
import * as overview from './views/overview.js';
import * as queues from './views/queues.js';
import * as queue from './views/queue.js';
import * as groups from './views/groups.js';
import * as group from './views/group.js';
import * as messages from './views/messages.js';
import * as message from './views/message.js';
import * as traces from './views/traces.js';
import * as dlq from './views/dlq.js';
import * as system from './views/system.js';

// routes: pattern segments, ':x' captures (percent-decoded); first match wins.
const routes = [
  { path: [], name: 'overview', nav: 'overview', view: overview },
  { path: ['queues'], name: 'queues', nav: 'queues', view: queues },
  { path: ['queues', ':queue'], name: 'queue', nav: 'queues', view: queue },
  { path: ['groups'], name: 'groups', nav: 'groups', view: groups },
  { path: ['groups', ':group'], name: 'group', nav: 'groups', view: group },
  { path: ['messages'], name: 'messages', nav: 'messages', view: messages },
  { path: ['messages', ':partitionId', ':transactionId'], name: 'message', nav: 'messages', view: message },
  { path: ['traces'], name: 'traces', nav: 'traces', view: traces },
  { path: ['traces', ':name'], name: 'traces', nav: 'traces', view: traces },
  { path: ['dlq'], name: 'dlq', nav: 'dlq', view: dlq },
  { path: ['system'], name: 'system', nav: 'system', view: system },
];

const REFRESH_MS = 10000;
const main = document.getElementById('main');
const notice = document.getElementById('notice');
let seq = 0;
let lastHash = null; // the hash last rendered: a notice outlives a redraw, not a navigation

function parseHash() {
  const raw = location.hash.replace(/^#\/?/, '');
  const qi = raw.indexOf('?');
  const pathPart = qi < 0 ? raw : raw.slice(0, qi);
  const query = new URLSearchParams(qi < 0 ? '' : raw.slice(qi + 1));
  const segs = pathPart.split('/').filter((s) => s !== '');
  for (const r of routes) {
    if (r.path.length !== segs.length) continue;
    const params = {};
    let ok = true;
    r.path.forEach((p, i) => {
      if (p.startsWith(':')) {
        try { params[p.slice(1)] = decodeURIComponent(segs[i]); } catch { ok = false; }
      } else if (p !== segs[i]) ok = false;
    });
    if (ok) return { route: r, params, query };
  }
  return { route: null, params: {}, query };
}

// show renders the current route into a detached element and swaps it in when done, so a
// refresh does not flicker and a slow answer for a view the user already left is dropped.
async function show({ quiet = false } = {}) {
  const my = ++seq;
  const hash = location.hash;
  if (hash !== lastHash) clearNotice();
  lastHash = hash;
  const { route, params, query } = parseHash();
  document.body.dataset.view = route ? route.name : 'not-found';
  for (const a of document.querySelectorAll('[data-nav]')) {
    a.classList.toggle('active', route !== null && a.dataset.nav === route.nav);
  }
  if (!quiet) document.body.dataset.state = 'loading';
  const root = h('div', { class: 'view' });
  let state = 'ready';
  if (!route) {
    root.append(h('h1', {}, 'Not found'), h('p', {}, 'No view at ' + location.hash + '.'));
    state = 'error';
  } else {
    try {
      await route.view.render(root, params, query);
    } catch (e) {
      if (my !== seq) return;
      root.replaceChildren(h('h1', {}, 'Could not load this view'),
        h('p', { class: 'error-text', dataset: { error: String(e.status ?? '') } }, e.message || String(e)));
      state = e.status === 401 ? 'auth' : 'error';
    }
  }
  if (my !== seq) return;
  if (quiet && main.contains(document.activeElement) && document.activeElement.matches('input, select, textarea')) {
    return; // the user is typing in a form: keep it
  }
  for (const c of main.querySelectorAll('[data-chart]')) c.dispose?.();
  main.replaceChildren(notice, root);
  document.body.dataset.state = state;
  document.body.dataset.shown = hash; // which route the page shows, for tests: hashchange is async
  window.dispatchEvent(new Event('comb:rendered')); // actions.js waits for it after a change
}

// The token form: shown on a 401 and from the navigation.
const dialog = document.getElementById('token-dialog');
const input = document.getElementById('token-input');
const reason = document.getElementById('token-reason');

function askToken(why) {
  reason.textContent = why ? 'The server said: ' + why : '';
  input.value = token();
  if (!dialog.open) dialog.showModal();
}

onUnauthorized(askToken);
document.getElementById('token-button').addEventListener('click', () => askToken(''));
document.getElementById('token-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  setToken(input.value.trim());
  dialog.close();
  show();
});
document.getElementById('token-clear').addEventListener('click', () => {
  setToken('');
  input.value = '';
});
document.getElementById('token-cancel').addEventListener('click', () => dialog.close());

const auto = document.getElementById('auto-refresh');
setInterval(() => {
  if (auto.checked && !document.hidden && !dialog.open && !document.getElementById('confirm-dialog').open &&
      document.body.dataset.state !== 'loading') {
    show({ quiet: true });
  }
}, REFRESH_MS);

window.addEventListener('hashchange', () => show());
show();
