// Small DOM helpers. Everything from the server is put in the page as text (textContent), never
// as markup, so a payload or a queue name cannot inject script.

// h creates an element: h('a', {href: '#/', class: 'x', onclick: fn}, 'text', child, [more]).
export function h(tag, attrs = {}, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'value') el.value = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, kids);
  return el;
}

// add appends children to el as h does: strings as text, arrays flattened, and null, undefined
// and false left out (Element.append would print them as "null").
export function add(el, ...kids) {
  append(el, kids);
  return el;
}

function append(el, kids) {
  for (const k of kids) {
    if (k === undefined || k === null || k === false) continue;
    if (Array.isArray(k)) append(el, k);
    else if (k instanceof Node) el.appendChild(k);
    else el.appendChild(document.createTextNode(String(k)));
  }
}

const numberFormat = new Intl.NumberFormat('en-US');
const rateFormat = new Intl.NumberFormat('en-US', { maximumFractionDigits: 1 });

export const fmt = {
  int: (n) => (n === null || n === undefined || Number.isNaN(Number(n)) ? '–' : numberFormat.format(Math.round(Number(n)))),
  rate: (n) => (n === null || n === undefined ? '–' : rateFormat.format(Number(n))),
  // secs shows a duration given in seconds in two units at most: 42s, 2m 30s, 3h 10m, 2d 4h.
  secs(s) {
    if (s === null || s === undefined || Number.isNaN(Number(s))) return '–';
    s = Math.max(0, Math.round(Number(s)));
    const two = (a, ua, b, ub) => a + ua + (b ? ' ' + b + ub : '');
    if (s < 60) return s + 's';
    if (s < 3600) return two(Math.floor(s / 60), 'm', s % 60, 's');
    if (s < 86400) return two(Math.floor(s / 3600), 'h', Math.floor((s % 3600) / 60), 'm');
    return two(Math.floor(s / 86400), 'd', Math.floor((s % 86400) / 3600), 'h');
  },
  // ms shows a duration given in milliseconds: 0.25 ms, 1.5 ms, 12 ms, then as secs (150000 → 2m 30s).
  ms(ms) {
    if (ms === null || ms === undefined || Number.isNaN(Number(ms))) return '–';
    ms = Number(ms);
    if (ms < 1) return (Math.round(ms * 100) / 100) + ' ms';
    if (ms < 10) return (Math.round(ms * 10) / 10) + ' ms';
    if (ms < 1000) return Math.round(ms) + ' ms';
    if (ms < 60000) return (Math.round(ms / 100) / 10) + 's';
    return fmt.secs(ms / 1000);
  },
  bytes(n) {
    if (n === null || n === undefined) return '–';
    const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    n = Number(n);
    while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
    return (i === 0 ? n : n.toFixed(1)) + ' ' + u[i];
  },
  // time shows an ISO timestamp in the browser's time zone, to the second.
  time(iso) {
    if (!iso) return '–';
    const d = new Date(iso);
    if (Number.isNaN(d.getTime())) return String(iso);
    return d.toLocaleString('sv-SE', { hour12: false }); // 2026-12-01 06:12:44
  },
  ago(iso) {
    if (!iso) return '–';
    const s = (Date.now() - new Date(iso).getTime()) / 1000;
    return Number.isNaN(s) ? String(iso) : s < 0 ? 'in ' + fmt.secs(-s) : fmt.secs(s) + ' ago';
  },
  json(v) {
    try { return JSON.stringify(v, null, 2); } catch { return String(v); }
  },
};

// plural writes a count with its noun: "1 message", "2,000 messages".
export function plural(n, one, many) {
  return fmt.int(n) + ' ' + (Number(n) === 1 ? one : many);
}

// QUEUE_MODE is the consumer group of pops that name none (spec 3.7); people read it as
// "(queue mode)", while links and API calls keep the name.
export const QUEUE_MODE = '__QUEUE_MODE__';

export function groupName(g) {
  return g === QUEUE_MODE ? '(queue mode)' : g;
}

// card is one headline number; key names it for tests and styles (data-metric). A long value
// wraps in a smaller font instead of being cut off.
export function card(label, value, key, hint) {
  const long = typeof value === 'string' && value.length > 12;
  return h('div', { class: long ? 'card long' : 'card' },
    h('div', { class: 'card-label' }, label),
    h('div', { class: 'card-value', dataset: key ? { metric: key } : undefined }, value),
    hint ? h('div', { class: 'card-hint' }, hint) : null);
}

export function cards(...items) {
  return h('div', { class: 'cards' }, items);
}

export function section(title, ...content) {
  return h('section', { class: 'panel' }, h('h2', {}, title), content);
}

// table renders rows under columns [{label, value(row) → node|string, num?: true, key?}]; name
// marks it (data-table) for tests, rowKey(row) each row (data-row) and key each cell (data-col).
export function table(name, columns, rows, empty = 'Nothing here.', rowKey) {
  if (!rows || rows.length === 0) return h('p', { class: 'muted empty', dataset: { table: name, rows: '0' } }, empty);
  return h('div', { class: 'table-wrap' },
    h('table', { dataset: { table: name, rows: String(rows.length) } },
      h('thead', {}, h('tr', {}, columns.map((c) => h('th', { class: c.num ? 'num' : null, title: c.title }, c.label)))),
      h('tbody', {}, rows.map((r) => h('tr', { dataset: rowKey ? { row: rowKey(r) } : undefined },
        columns.map((c) => h('td', { class: c.num ? 'num' : null, dataset: c.key ? { col: c.key } : undefined }, c.value(r))))))));
}

// kv renders label/value pairs.
export function kv(pairs) {
  return h('dl', { class: 'kv' }, pairs.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

export function link(href, text) {
  return h('a', { href }, text);
}

// unavailable says a route answered 404 here (for instance a server without that route).
export function unavailable(path, what) {
  return h('p', { class: 'muted unavailable', dataset: { unavailable: path } },
    (what || 'This data') + ' is not served by this server (' + path + ').');
}

export function badge(text, kind) {
  return h('span', { class: 'badge ' + (kind || String(text).toLowerCase().replace(/[^a-z_]/g, '')) }, text);
}

export function pre(value) {
  return h('pre', { class: 'json' }, typeof value === 'string' ? value : fmt.json(value));
}
