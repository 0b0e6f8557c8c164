// One consumer group: per queue, each partition's position, lag and lease, and the group's
// actions (actions.js asks first), each through its own route of spec 7:
// * seek to the end or to a time: POST /api/v1/consumer-groups/:group/queues/:queue/seek
//   (read-write), on every partition where the group has a cursor;
// * one partition to its end: POST .../queues/:queue/partitions/:partition/seek (read-write);
// * delete on one queue or everywhere: DELETE /api/v1/consumer-groups/:group[/queues/:queue]
//   with deleteMetadata=true (admin): cursors, leases and subscription records go.
import { api, enc, q } from '../api.js';
import { add, badge, fmt, groupName, h, link, plural, section, table } from '../dom.js';
import { act } from '../actions.js';

export async function render(root, { group }) {
  const detail = await api('/api/v1/consumer-groups/' + enc(group));
  const queues = Object.keys(detail).sort();
  const base = '/api/v1/consumer-groups/' + enc(group);
  const shown = groupName(group);
  add(root, h('h1', {}, 'Consumer group ', h('span', { class: 'mono' }, shown)));
  if (queues.length === 0) {
    add(root, h('p', { class: 'muted', dataset: { table: 'group-partitions', rows: '0' } }, 'This group has no position on any queue.'));
    return;
  }
  add(root, h('div', { class: 'toolbar' },
    h('button', { type: 'button', class: 'danger', dataset: { action: 'delete-group' }, onclick: () => act({
      title: 'Delete consumer group ' + shown + ' everywhere?',
      text: 'Its cursors, leases and subscription records on all ' + plural(queues.length, 'queue', 'queues') +
        ' are deleted (DELETE ' + base + '?deleteMetadata=true): its next pop starts again as a new group would.',
      confirm: 'Delete the group', danger: true,
    }, 'admin', async () => {
      const r = await api(base + q({ deleteMetadata: true }), { method: 'DELETE' });
      return 'Deleted ' + shown + ': ' + plural(r.deletedPartitions, 'partition position', 'partition positions') + '.';
    }, '#/groups') }, 'Delete group everywhere')));
  for (const queue of queues) {
    const parts = detail[queue].partitions || [];
    const onQueue = base + '/queues/' + enc(queue);
    const when = h('input', { type: 'datetime-local', step: '1', dataset: { seekTime: queue }, 'aria-label': 'seek time' });
    const behind = parts.reduce((n, p) => n + (p.offsetLag || 0), 0);
    add(root, section('Queue ' + queue,
      h('p', {}, link('#/queues/' + enc(queue), 'queue'), ' · ', link('#/messages' + q({ queue }), 'messages'), ' · ',
        'behind ', h('span', { dataset: { metric: 'behind-' + queue } }, fmt.int(behind)), ' messages'),
      h('div', { class: 'toolbar' },
        h('button', { type: 'button', dataset: { action: 'seek-end', queue }, onclick: () => act({
          title: 'Skip ' + shown + ' to the end of ' + queue + '?',
          text: 'On every partition where the group has a cursor, the cursor moves to the newest message and its lease is released: the backlog of ' +
            plural(behind, 'message', 'messages') + ' is skipped, never delivered to this group.',
          confirm: 'Skip to the end', danger: true,
        }, 'read-write', async () => {
          const r = await api(onQueue + '/seek', { method: 'POST', body: { toEnd: true } });
          return 'Moved ' + plural(r.partitionsUpdated, 'partition', 'partitions') + ' of ' + queue + ' to the end.';
        }) }, 'Seek to end'),
        h('span', { class: 'seek-time' }, when,
          h('button', { type: 'button', dataset: { action: 'seek-time', queue }, onclick: () => {
            const t = when.value ? new Date(when.value) : null;
            if (!t || Number.isNaN(t.getTime())) { when.focus(); return undefined; }
            return act({
              title: 'Seek ' + shown + ' on ' + queue + ' to ' + fmt.time(t.toISOString()) + '?',
              text: 'On every partition where the group has a cursor, it next receives the messages created after that time (earlier ones count as consumed; later ones are delivered again if already consumed), and its lease is released.',
              confirm: 'Seek',
            }, 'read-write', async () => {
              const r = await api(onQueue + '/seek', { method: 'POST', body: { timestamp: t.toISOString() } });
              return 'Moved ' + plural(r.partitionsUpdated, 'partition', 'partitions') + ' of ' + queue + ' to ' + fmt.time(r.targetTimestamp) + '.';
            });
          } }, 'Seek to time')),
        h('button', { type: 'button', class: 'danger', dataset: { action: 'delete-queue', queue }, onclick: () => act({
          title: 'Delete ' + shown + ' on ' + queue + '?',
          text: 'Its cursors, leases and subscription record on ' + queue + ' are deleted (DELETE ' + onQueue + '?deleteMetadata=true); its other queues are untouched.',
          confirm: 'Delete on this queue', danger: true,
        }, 'admin', async () => {
          const r = await api(onQueue + q({ deleteMetadata: true }), { method: 'DELETE' });
          return 'Deleted ' + shown + ' on ' + queue + ': ' + plural(r.deletedPartitions, 'partition position', 'partition positions') + '.';
        }, queues.length === 1 ? '#/groups' : undefined) }, 'Delete on this queue')),
      table('group-partitions', [
        { label: 'Partition', value: (p) => p.partition },
        { label: 'Consumed', num: true, value: (p) => fmt.int(p.totalConsumed) },
        { label: 'Offset lag', key: 'lag', num: true, value: (p) => fmt.int(p.offsetLag) },
        { label: 'Time lag', num: true, value: (p) => fmt.secs(p.timeLagSeconds) },
        { label: 'Last consumed', value: (p) => fmt.time(p.lastConsumedAt) },
        { label: 'Lease', value: (p) => (p.leaseActive ? badge('leased', 'processing') : '–') },
        { label: 'Worker', value: (p) => p.workerId || '–' },
        { label: '', value: (p) => h('button', { type: 'button', class: 'link', dataset: { action: 'seek-partition', queue, partition: p.partition }, onclick: () => act({
          title: 'Skip ' + shown + ' to the end of ' + queue + '/' + p.partition + '?',
          text: 'The cursor of this one partition moves to its newest message and its lease is released: ' +
            plural(p.offsetLag || 0, 'message', 'messages') + ' skipped.',
          confirm: 'Skip to the end', danger: true,
        }, 'read-write', async () => {
          const r = await api(onQueue + '/partitions/' + enc(p.partition) + '/seek', { method: 'POST' });
          return r.updated ? 'Moved ' + queue + '/' + p.partition + ' to the end.' : 'Nothing to move on ' + queue + '/' + p.partition + '.';
        }) }, 'skip to end') },
      ], parts, 'No partitions.', (p) => queue + '/' + p.partition)));
  }
}

