// Dead letters: GET /api/v1/dlq with its filters, newest failure first, each entry's payload
// folded under its row; the entries ticked can be requeued or deleted (actions.js asks first).
//
// Both actions go through the API's own routes, as Queen's dashboard does, and need a
// read-write token when JWT auth is on:
// * delete is DELETE /api/v1/messages/:partitionId/:transactionId (spec 8.5): the message and
//   every dead-letter entry of it leave the partition for every group;
// * requeue is POST /api/v1/push of the entry's payload to its queue and partition, as a new
//   message, then that delete. The copy's transactionId is "<original>#requeued-<message id>",
//   so a second try after a half-done requeue (or two groups' entries of one message) reports
//   "duplicate" instead of pushing twice. Every group reading the partition receives the copy.
import { api, enc, q } from '../api.js';
import { add, card, cards, fmt, groupName, h, link, plural, pre } from '../dom.js';
import { act } from '../actions.js';

const FIELDS = ['queue', 'consumerGroup', 'partition', 'limit', 'offset'];

export async function render(root, _params, query) {
  const f = Object.fromEntries(FIELDS.map((k) => [k, query.get(k) || '']));
  const limit = Number(f.limit) || 100;
  const offset = Number(f.offset) || 0;
  const res = await api('/api/v1/dlq' + q({ ...f, limit, offset }));
  const rows = res.messages || [];
  const boxes = rows.map((m, i) => h('input', { type: 'checkbox', dataset: { select: String(i) }, 'aria-label': 'select ' + m.transactionId, onchange: sync }));
  const all = h('input', { type: 'checkbox', dataset: { selectAll: '' }, 'aria-label': 'select all', onchange: () => { boxes.forEach((b) => { b.checked = all.checked; }); sync(); } });
  const picked = () => rows.filter((_, i) => boxes[i].checked);
  const requeueBtn = h('button', { type: 'button', dataset: { action: 'requeue' }, disabled: true, onclick: () => requeue(picked()) }, 'Requeue selected');
  const deleteBtn = h('button', { type: 'button', class: 'danger', dataset: { action: 'delete' }, disabled: true, onclick: () => remove(picked()) }, 'Delete selected');
  function sync() {
    const n = picked().length;
    requeueBtn.disabled = deleteBtn.disabled = n === 0;
    requeueBtn.textContent = 'Requeue selected' + (n ? ' (' + n + ')' : '');
    deleteBtn.textContent = 'Delete selected' + (n ? ' (' + n + ')' : '');
  }
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
      : [h('div', { class: 'toolbar' }, requeueBtn, deleteBtn),
        h('div', { class: 'table-wrap' }, h('table', { dataset: { table: 'dlq', rows: String(rows.length) } },
          h('thead', {}, h('tr', {}, h('th', {}, all), ['Failed', 'Queue / partition', 'Group', 'Transaction', 'Retries', 'Error', 'Payload'].map((c) => h('th', {}, c)))),
          h('tbody', {}, rows.map((m, i) => h('tr', { dataset: { row: m.transactionId } },
            h('td', {}, boxes[i]),
            h('td', {}, fmt.time(m.failedAt)),
            h('td', {}, link('#/queues/' + enc(m.queue), m.queue), '/' + m.partition),
            h('td', { dataset: { col: 'group' } }, groupName(m.consumerGroup)),
            h('td', {}, link('#/messages/' + enc(m.partitionId) + '/' + enc(m.transactionId), m.transactionId)),
            h('td', { class: 'num' }, fmt.int(m.retryCount)),
            h('td', { class: 'error-text' }, m.errorMessage || '–'),
            h('td', {}, h('details', {}, h('summary', {}, 'show'), pre(m.data))))))))],
    h('p', { class: 'pager' },
      offset > 0 ? h('a', { href: '#/dlq' + q({ ...f, offset: Math.max(0, offset - limit) || '' }) }, '← newer') : null, ' ',
      offset + rows.length < res.total ? h('a', { href: '#/dlq' + q({ ...f, offset: offset + limit }) }, 'older →') : null),
  );
}


// requeueID is the copy's transactionId: the original's (without an earlier requeue suffix)
// and the message id, cut to the 255 characters a transactionId may have (spec 1.2).
function requeueID(m) {
  const base = m.transactionId.replace(/#requeued-[0-9a-f-]{36}$/, '');
  const id = base + '#requeued-' + m.id;
  return id.length <= 255 ? id : 'requeued-' + m.id;
}

function requeue(entries) {
  const plain = entries.filter((m) => !m.decryptionError);
  const skipped = entries.length - plain.length;
  return act({
    title: 'Requeue ' + plural(entries.length, 'dead letter', 'dead letters') + '?',
    text: 'Each payload is pushed again to its queue and partition as a new message (every consumer group reading the partition receives it), then the original message and its dead-letter entries are deleted.' +
      (skipped ? ' ' + plural(skipped, 'entry', 'entries') + ' whose payload could not be decrypted will be left alone.' : ''),
    confirm: 'Requeue',
  }, 'read-write', async () => {
    let done = 0;
    for (const m of plain) {
      const res = await api('/api/v1/push', { method: 'POST', body: { items: [{ queue: m.queue, partition: m.partition, payload: m.data, transactionId: requeueID(m) }] } });
      const r = (res || [])[0] || {};
      if (r.status !== 'queued' && r.status !== 'duplicate') {
        throw new Error('Requeued ' + done + ' of ' + entries.length + '; the push of ' + m.transactionId + ' answered ' + (r.status || 'nothing') + (r.error ? ': ' + r.error : ''));
      }
      await api('/api/v1/messages/' + enc(m.partitionId) + '/' + enc(m.transactionId), { method: 'DELETE' });
      done++;
    }
    return 'Requeued ' + plural(done, 'dead letter', 'dead letters') + (skipped ? '; left ' + skipped + ' that could not be decrypted' : '') + '.';
  });
}

function remove(entries) {
  return act({
    title: 'Delete ' + plural(entries.length, 'dead letter', 'dead letters') + '?',
    text: 'The messages are deleted (DELETE /api/v1/messages): no consumer group receives them again, and their dead-letter entries go with them. This cannot be undone.',
    confirm: 'Delete', danger: true,
  }, 'read-write', async () => {
    let done = 0;
    for (const m of entries) {
      await api('/api/v1/messages/' + enc(m.partitionId) + '/' + enc(m.transactionId), { method: 'DELETE' });
      done++;
    }
    return 'Deleted ' + plural(done, 'dead letter', 'dead letters') + '.';
  });
}
