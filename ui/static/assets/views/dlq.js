// Dead letters: GET /api/v1/dlq with its filters, newest failure first, each entry's payload
// folded under its row.
import { api, enc, q } from '../api.js';
import { add, card, cards, fmt, h, link, pre } from '../dom.js';

const FIELDS = ['queue', 'consumerGroup', 'partition', 'limit', 'offset'];

export async function render(root, _params, query) {
  const f = Object.fromEntries(FIELDS.map((k) => [k, query.get(k) || '']));
  const limit = Number(f.limit) || 100;
  const offset = Number(f.offset) || 0;
  const res = await api('/api/v1/dlq' + q({ ...f, limit, offset }));
  const rows = res.messages || [];
  add(root, 
    h('h1', {}, 'Dead letters'),
    h('form', { class: 'filters', onsubmit: (ev) => {
      ev.preventDefault();
      const d = new FormData(ev.target);
      location.hash = '#/dlq' + q({ queue: d.get('queue'), consumerGroup: d.get('consumerGroup'), partition: d.get('partition') });
    } },
    h('label', {}, 'Queue', h('input', { name: 'queue', value: f.queue })),
    h('label', {}, 'Consumer group', h('input', { name: 'consumerGroup', value: f.consumerGroup })),
    h('label', {}, 'Partition', h('input', { name: 'partition', value: f.partition })),
    h('button', { type: 'submit' }, 'Filter')),
    cards(card('Entries', fmt.int(res.total), 'dlq-total')),
    rows.length === 0
      ? h('p', { class: 'muted empty', dataset: { table: 'dlq', rows: '0' } }, 'No dead letters match.')
      : h('div', { class: 'table-wrap' }, h('table', { dataset: { table: 'dlq', rows: String(rows.length) } },
        h('thead', {}, h('tr', {}, ['Failed', 'Queue / partition', 'Group', 'Transaction', 'Retries', 'Error', 'Payload'].map((c) => h('th', {}, c)))),
        h('tbody', {}, rows.map((m) => h('tr', {},
          h('td', {}, fmt.time(m.failedAt)),
          h('td', {}, link('#/queues/' + enc(m.queue), m.queue), '/' + m.partition),
          h('td', {}, m.consumerGroup),
          h('td', {}, link('#/messages/' + enc(m.partitionId) + '/' + enc(m.transactionId), m.transactionId)),
          h('td', { class: 'num' }, fmt.int(m.retryCount)),
          h('td', { class: 'error-text' }, m.errorMessage || '–'),
          h('td', {}, h('details', {}, h('summary', {}, 'show'), pre(m.data)))))))),
    h('p', { class: 'pager' },
      offset > 0 ? h('a', { href: '#/dlq' + q({ ...f, offset: Math.max(0, offset - limit) || '' }) }, '← newer') : null, ' ',
      offset + rows.length < res.total ? h('a', { href: '#/dlq' + q({ ...f, offset: offset + limit }) }, 'older →') : null),
  );
}
