// Consumer groups: one row per (group, queue) with lag, and the partitions lagging the most.
import { api, enc, q } from '../api.js';
import { add, badge, card, cards, fmt, groupName, h, link, section, table } from '../dom.js';

const LAG_SECONDS = 60;

export async function render(root) {
  const [groups, lagging] = await Promise.all([
    api('/api/v1/consumer-groups'),
    api('/api/v1/consumer-groups/lagging' + q({ minLagSeconds: LAG_SECONDS })),
  ]);
  const names = new Set(groups.map((g) => g.name));
  add(root, 
    h('h1', {}, 'Consumer groups'),
    cards(
      card('Groups', fmt.int(names.size), 'groups'),
      card('Group × queue', fmt.int(groups.length), 'group-queues'),
      card('Lag, messages', fmt.int(groups.reduce((n, g) => n + (g.totalLag ?? 0), 0)), 'total-lag'),
      card('Partitions lagging > 1 min', fmt.int(lagging.length), 'lagging'),
    ),
    section('Groups', table('groups', [
      { label: 'Group', value: (g) => link('#/groups/' + enc(g.name), groupName(g.name)) },
      { label: 'Queue', value: (g) => link('#/queues/' + enc(g.queueName), g.queueName) },
      { label: 'State', value: (g) => badge(g.state) },
      { label: 'Partitions', num: true, value: (g) => fmt.int(g.members) },
      { label: 'With lag', num: true, value: (g) => fmt.int(g.partitionsWithLag) },
      { label: 'Lag (messages)', num: true, value: (g) => (g.totalLag === null ? '–' : fmt.int(g.totalLag)) },
      { label: 'Max time lag', num: true, value: (g) => fmt.secs(g.maxTimeLag) },
      { label: 'Subscription', value: (g) => (g.subscriptionMode || '–') + (g.subscriptionTimestamp ? ' from ' + fmt.time(g.subscriptionTimestamp) : '') },
    ], groups, 'No consumer group has popped yet.', (g) => g.name + '/' + g.queueName)),
    section('Lagging partitions (more than 1 min behind)', table('lagging', [
      { label: 'Group', value: (r) => link('#/groups/' + enc(r.consumer_group), groupName(r.consumer_group)) },
      { label: 'Queue', value: (r) => r.queue_name },
      { label: 'Partition', value: (r) => r.partition_name },
      { label: 'Offset lag', num: true, value: (r) => fmt.int(r.offset_lag) },
      { label: 'Time lag', num: true, value: (r) => fmt.secs(r.time_lag_seconds) },
      { label: 'Oldest unconsumed', value: (r) => fmt.time(r.oldest_unconsumed_at) },
      { label: 'Worker', value: (r) => r.worker_id || '–' },
    ], lagging, 'No partition is more than a minute behind.')),
  );
}
