// One consumer group: per queue, each partition's position, lag and lease.
import { api, enc, q } from '../api.js';
import { add, badge, fmt, h, link, section, table } from '../dom.js';

export async function render(root, { group }) {
  const detail = await api('/api/v1/consumer-groups/' + enc(group));
  const queues = Object.keys(detail).sort();
  add(root, h('h1', {}, 'Consumer group ', h('span', { class: 'mono' }, group)));
  if (queues.length === 0) {
    add(root, h('p', { class: 'muted', dataset: { table: 'group-partitions', rows: '0' } }, 'This group has no position on any queue.'));
    return;
  }
  for (const queue of queues) {
    add(root, section('Queue ' + queue,
      h('p', {}, link('#/queues/' + enc(queue), 'queue'), ' · ', link('#/messages' + q({ queue }), 'messages')),
      table('group-partitions', [
        { label: 'Partition', value: (p) => p.partition },
        { label: 'Consumed', num: true, value: (p) => fmt.int(p.totalConsumed) },
        { label: 'Offset lag', num: true, value: (p) => fmt.int(p.offsetLag) },
        { label: 'Time lag', num: true, value: (p) => fmt.secs(p.timeLagSeconds) },
        { label: 'Last consumed', value: (p) => fmt.time(p.lastConsumedAt) },
        { label: 'Lease', value: (p) => (p.leaseActive ? badge('leased', 'processing') : '–') },
        { label: 'Worker', value: (p) => p.workerId || '–' },
      ], detail[queue].partitions || [])));
  }
}
