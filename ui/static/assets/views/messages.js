// Messages: the list of spec 8.5 with its filters (queue, partition, namespace, task, status, time
// window), newest first, paged; a row opens the message.
import { api, enc, optional, q } from '../api.js';
import { add, badge, fmt, h, link, table, unavailable } from '../dom.js';

const STATUSES = ['', 'pending', 'processing', 'completed', 'dead_letter'];
const FIELDS = ['queue', 'partition', 'ns', 'task', 'status', 'from', 'to', 'limit', 'offset'];

export async function render(root, _params, query) {
  const f = Object.fromEntries(FIELDS.map((k) => [k, query.get(k) || '']));
  const limit = Number(f.limit) || 100;
  const offset = Number(f.offset) || 0;
  const [queues, res] = await Promise.all([
    api('/api/v1/resources/queues'),
    optional('/api/v1/messages' + q({ ...f, from: iso(f.from), to: iso(f.to), limit, offset })),
  ]);
  add(root, h('h1', {}, 'Messages'), filters(f, queues.queues || []));
  if (!res) {
    add(root, unavailable('/api/v1/messages', 'The message list'));
    return;
  }
  const mode = res.mode || {};
  const rows = res.messages || [];
  add(root, 
    h('p', { class: 'muted' }, 'Status relative to ', mode.type === 'bus' ? 'the named consumer groups' : 'queue mode',
      ' (mode ', mode.type || '–', ', ', fmt.int(mode.busGroupsCount), ' named groups). Window: ',
      f.from ? f.from : 'the last hour', f.to ? ' to ' + f.to : '', '.'),
    table('messages', [
      { label: 'Created', value: (m) => fmt.time(m.createdAt) },
      { label: 'Queue / partition', value: (m) => m.queuePath || m.queue + '/' + m.partition },
      { label: 'Transaction', value: (m) => link('#/messages/' + enc(m.partitionId) + '/' + enc(m.transactionId), m.transactionId) },
      { label: 'Status', value: (m) => badge(m.status) },
      { label: 'Groups done', num: true, value: (m) => (m.busStatus ? fmt.int(m.busStatus.consumedBy) + ' / ' + fmt.int(m.busStatus.totalGroups) : '–') },
      { label: 'Lease until', value: (m) => fmt.time(m.leaseExpiresAt) },
      { label: 'Trace', value: (m) => m.traceId || '–' },
    ], rows, 'No message in this window matches.'),
    pager(f, limit, offset, rows.length),
  );
}

function filters(f, queues) {
  const names = queues.map((x) => x.name).sort();
  return h('form', { class: 'filters', onsubmit: (ev) => {
    ev.preventDefault();
    const d = new FormData(ev.target);
    const next = {};
    for (const k of FIELDS) if (k !== 'offset') next[k] = d.get(k) || '';
    location.hash = '#/messages' + q(next);
  } },
  h('label', {}, 'Queue', h('select', { name: 'queue' }, h('option', { value: '' }, 'any'),
    names.map((n) => h('option', { value: n, selected: n === f.queue }, n)))),
  h('label', {}, 'Partition', h('input', { name: 'partition', value: f.partition })),
  h('label', {}, 'Namespace', h('input', { name: 'ns', value: f.ns })),
  h('label', {}, 'Task', h('input', { name: 'task', value: f.task })),
  h('label', {}, 'Status', h('select', { name: 'status' },
    STATUSES.map((s) => h('option', { value: s, selected: s === f.status }, s || 'any')))),
  h('label', {}, 'From', h('input', { name: 'from', type: 'datetime-local', step: '1', value: f.from })),
  h('label', {}, 'To', h('input', { name: 'to', type: 'datetime-local', step: '1', value: f.to })),
  h('label', {}, 'Limit', h('input', { name: 'limit', type: 'number', min: '1', max: '1000', value: f.limit || '100' })),
  h('button', { type: 'submit' }, 'Filter'));
}

function pager(f, limit, offset, n) {
  const at = (o) => '#/messages' + q({ ...f, limit, offset: o || '' });
  return h('p', { class: 'pager' },
    offset > 0 ? h('a', { href: at(Math.max(0, offset - limit)) }, '← newer') : null,
    ' rows ', fmt.int(n ? offset + 1 : 0), '–', fmt.int(offset + n), ' ',
    n === limit ? h('a', { href: at(offset + limit) }, 'older →') : null);
}

// iso turns a datetime-local value (the browser's zone) into an ISO-8601 UTC timestamp.
function iso(local) {
  if (!local) return '';
  const d = new Date(local);
  return Number.isNaN(d.getTime()) ? local : d.toISOString();
}
