// The charts' time range: "fitted" (the default: the last hour, cut to where data starts, so a
// new server does not show 55 minutes of flat zero) or a fixed window the user picks. It lives
// in the view's hash (?range=6h), so a reload or a shared link keeps it.
import { h } from './dom.js';

export const RANGES = [
  { key: 'fit', label: 'fitted to the data', secs: 3600, fit: true },
  { key: '15m', label: 'last 15 minutes', secs: 900 },
  { key: '1h', label: 'last hour', secs: 3600 },
  { key: '6h', label: 'last 6 hours', secs: 6 * 3600 },
  { key: '24h', label: 'last 24 hours', secs: 86400 },
  { key: '7d', label: 'last 7 days', secs: 7 * 86400 },
];

// range returns the chosen range of a view's query: {key, label, from, to (ISO), fit}.
export function range(query) {
  const r = RANGES.find((x) => x.key === query.get('range')) || RANGES[0];
  const to = new Date();
  const from = new Date(to.getTime() - r.secs * 1000);
  return { ...r, from: from.toISOString(), to: to.toISOString() };
}

// picker is the select that changes ?range= of the current hash, keeping its other parameters.
export function picker(current) {
  return h('label', { class: 'range' }, 'Charts: ',
    h('select', { dataset: { range: current.key }, onchange: (ev) => {
      const raw = location.hash.replace(/^#/, '');
      const qi = raw.indexOf('?');
      const path = qi < 0 ? raw : raw.slice(0, qi);
      const params = new URLSearchParams(qi < 0 ? '' : raw.slice(qi + 1));
      if (ev.target.value === 'fit') params.delete('range'); else params.set('range', ev.target.value);
      const s = params.toString();
      location.hash = '#' + (path || '/') + (s ? '?' + s : '');
    } }, RANGES.map((x) => h('option', { value: x.key, selected: x.key === current.key }, x.label))));
}
