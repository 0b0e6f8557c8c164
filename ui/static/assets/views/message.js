// One message: its fields, payload, consumer groups and traces (spec 8.5, 9.3), and delete.
import { api, enc, optional, q } from '../api.js';
import { add, badge, fmt, groupName, h, kv, link, pre, section, table, unavailable } from '../dom.js';

export async function render(root, { partitionId, transactionId }) {
  const path = enc(partitionId) + '/' + enc(transactionId);
  const [m, tr] = await Promise.all([
    api('/api/v1/messages/' + path),
    optional('/api/v1/traces/' + path),
  ]);
  const c = m.queueConfig || {};
  add(root, 
    h('h1', {}, 'Message ', h('span', { class: 'mono' }, m.transactionId)),
    h('p', {}, link('#/queues/' + enc(m.queue), 'queue ' + m.queue), ' · ',
      link('#/messages' + q({ queue: m.queue, partition: m.partition }), 'partition ' + m.partition)),
    h('div', { class: 'grid2' },
      section('Fields', kv([
        ['Status', badge(m.status)],
        ['Message id', h('span', { class: 'mono' }, m.id)],
        ['Partition id', h('span', { class: 'mono' }, m.partitionId)],
        ['Created', fmt.time(m.createdAt)],
        ['Retries', fmt.int(m.retryCount)],
        ['Error', m.errorMessage || '–'],
        ['Lease until', fmt.time(m.leaseExpiresAt)],
        ['Trace id', m.traceId || '–'],
        ['Producer', m.producerSub || '–'],
        ['Namespace / task', (m.namespace || '–') + ' / ' + (m.task || '–')],
        ['Encrypted at rest', m.isEncrypted ? 'yes' : 'no'],
        ['Queue', 'lease ' + fmt.secs(c.leaseTime) + ', retry limit ' + fmt.int(c.retryLimit) + ', priority ' + fmt.int(c.priority)],
      ])),
      section('Payload', pre(m.payload))),
    section('Consumer groups', table('message-groups', [
      { label: 'Group', value: (g) => link('#/groups/' + enc(g.name), groupName(g.name)) },
      { label: 'Consumed', value: (g) => (g.consumed ? badge('completed') : badge('pending')) },
      { label: 'Lease until', value: (g) => fmt.time(g.leaseExpiresAt) },
    ], m.consumerGroups || [], 'No consumer group has a position on this partition.')),
    section('Traces', traces(tr)),
    h('p', {}, h('button', { type: 'button', class: 'danger', onclick: () => remove(path, m) }, 'Delete this message')),
  );
}

function traces(tr) {
  if (!tr) return unavailable('/api/v1/traces/:partitionId/:transactionId', 'Tracing');
  return table('message-traces', [
    { label: 'When', value: (t) => fmt.time(t.created_at) },
    { label: 'Event', value: (t) => badge(t.event_type, 'info') },
    { label: 'Names', value: (t) => (t.trace_names || []).map((n) => link('#/traces/' + enc(n), n)).flatMap((a, i) => (i ? [', ', a] : [a])) },
    { label: 'Group', key: 'group', value: (t) => (t.consumer_group ? groupName(t.consumer_group) : '–') },
    { label: 'Worker', value: (t) => t.worker_id || '–' },
    { label: 'Data', value: (t) => pre(t.data) },
  ], tr.traces || [], 'No trace events for this message.');
}

async function remove(path, m) {
  if (!window.confirm('Delete message ' + m.transactionId + ' from ' + m.queue + '/' + m.partition + '?')) return;
  try {
    await api('/api/v1/messages/' + path, { method: 'DELETE' });
    location.hash = '#/messages' + q({ queue: m.queue });
  } catch (e) {
    window.alert('Not deleted: ' + e.message);
  }
}
