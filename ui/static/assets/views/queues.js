// Queues: every queue with its labels, partitions, message counts, lag, dead letters and rates,
// filterable by name, namespace and task.
import { api, enc, q } from '../api.js';
import { add, fmt, h, link, table } from '../dom.js';
import { queueStats, statColumns } from '../queuestats.js';

export async function render(root, _params, query) {
  const ns = query.get('namespace') || '';
  const task = query.get('task') || '';
  const name = query.get('name') || '';
  const res = await api('/api/v1/resources/queues' + q({ namespace: ns, task }));
  const rows = (res.queues || []).filter((r) => !name || r.name.includes(name));
  const stats = await queueStats(rows.map((r) => r.name));
  const form = h('form', { class: 'filters', onsubmit: (ev) => {
    ev.preventDefault();
    const f = new FormData(ev.target);
    location.hash = '#/queues' + q({ name: f.get('name'), namespace: f.get('namespace'), task: f.get('task') });
  } },
  h('label', {}, 'Name contains', h('input', { name: 'name', value: name })),
  h('label', {}, 'Namespace', h('input', { name: 'namespace', value: ns })),
  h('label', {}, 'Task', h('input', { name: 'task', value: task })),
  h('button', { type: 'submit' }, 'Filter'));
  add(root, 
    h('h1', {}, 'Queues'),
    form,
    table('queues', [
      { label: 'Queue', value: (r) => link('#/queues/' + enc(r.name), r.name) },
      { label: 'Namespace', value: (r) => r.namespace || '–' },
      { label: 'Task', value: (r) => r.task || '–' },
      { label: 'Created', value: (r) => fmt.time(r.createdAt) },
      { label: 'Partitions', num: true, value: (r) => fmt.int(r.partitions) },
      { label: 'Messages', num: true, value: (r) => fmt.int(r.messages?.total) },
      { label: 'Pending', num: true, value: (r) => fmt.int(r.messages?.pending) },
      { label: 'Processing', num: true, value: (r) => fmt.int(r.messages?.processing) },
      ...statColumns(stats),
    ], rows, 'No queue matches.', (r) => r.name),
  );
}
