// One queue: its totals, configuration, operations over the chosen range, partitions and the
// consumer groups reading it.
import { api, enc, optional, q } from '../api.js';
import { add, badge, card, cards, fmt, groupName, h, kv, link, section, table, unavailable } from '../dom.js';
import { lineChart } from '../chart.js';
import { picker, range } from '../range.js';

// The partitions one view lists; the route's partitionCount says how many there are.
const PARTITION_PAGE = 1000;

export async function render(root, { queue }, query) {
  const r = range(query);
  const [d, st, ops, groups, dlq] = await Promise.all([
    api('/api/v1/resources/queues/' + enc(queue) + '?limit=' + PARTITION_PAGE),
    optional('/api/v1/status/queues/' + enc(queue) + '?limit=1'), // its configuration only
    optional('/api/v1/analytics/queue-ops' + q({ queue, ...(r.fit ? {} : { from: r.from, to: r.to }) })),
    api('/api/v1/consumer-groups'),
    api('/api/v1/dlq' + q({ queue, limit: 1 })), // its total leaves out entries deleted or requeued
  ]);
  const t = d.totals || {};
  const mine = (groups || []).filter((g) => g.queueName === queue);
  add(root, 
    h('h1', {}, 'Queue ', h('span', { class: 'mono' }, d.name)),
    h('p', { class: 'muted' },
      'namespace ', d.namespace || '–', ' · task ', d.task || '–', ' · created ', fmt.time(d.createdAt), ' · ',
      link('#/messages' + q({ queue }), 'messages'), ' · ', link('#/dlq' + q({ queue }), 'dead letters')),
    cards(
      card('Partitions', fmt.int(d.partitionCount ?? (d.partitions || []).length), 'queue-partitions'),
      card('Messages', fmt.int(t.total), 'queue-total'),
      card('Pending', fmt.int(t.pending), 'queue-pending'),
      card('Processing', fmt.int(t.processing), 'queue-processing'),
      card('Completed', fmt.int(t.completed), 'queue-completed'),
      card('Dead letters', fmt.int(dlq.total), 'queue-dead-letter'),
    ),
    h('div', { class: 'grid2' },
      section('Configuration', config(st)),
      section('Operations per second, ' + r.label, picker(r), opsChart(ops, queue, r))),
    section(partitionsTitle(d), table('partitions', [
      { label: 'Partition', value: (p) => link('#/messages' + q({ queue, partition: p.name }), p.name) },
      { label: 'Messages', num: true, value: (p) => fmt.int(p.stats?.total) },
      { label: 'Pending', num: true, value: (p) => fmt.int(p.stats?.pending) },
      { label: 'Processing', num: true, value: (p) => fmt.int(p.stats?.processing) },
      { label: 'Completed', num: true, value: (p) => fmt.int(p.stats?.completed) },
      { label: 'Failed', num: true, value: (p) => fmt.int(p.stats?.failed) },
      { label: 'Dead letters', num: true, value: (p) => fmt.int(p.stats?.deadLetter) },
      { label: 'Oldest', value: (p) => fmt.time(p.oldestMessage) },
      { label: 'Newest', value: (p) => fmt.time(p.newestMessage) },
    ], d.partitions, 'No partitions yet.')),
    section('Consumer groups', table('queue-groups', [
      { label: 'Group', value: (g) => link('#/groups/' + enc(g.name), groupName(g.name)) },
      { label: 'State', value: (g) => badge(g.state) },
      { label: 'Partitions', num: true, value: (g) => fmt.int(g.members) },
      { label: 'With lag', num: true, value: (g) => fmt.int(g.partitionsWithLag) },
      { label: 'Behind', num: true, value: (g) => fmt.int(g.totalLag) },
      { label: 'Max time lag', num: true, value: (g) => fmt.secs(g.maxTimeLag) },
      { label: 'Subscription', value: (g) => g.subscriptionMode || '–' },
    ], mine, 'No group has read this queue yet.', (g) => g.name)),
  );
}

function config(st) {
  if (!st) return unavailable('/api/v1/status/queues/:queue', "The queue's configuration");
  const c = (st.queue && st.queue.config) || {};
  return kv([
    ['Lease time', fmt.secs(c.leaseTime)],
    ['Retry limit', fmt.int(c.retryLimit)],
    ['Retry delay', c.retryDelay === undefined ? '–' : fmt.int(c.retryDelay) + ' ms'],
    ['TTL', c.ttl ? fmt.secs(c.ttl) : 'none'],
    ['Max queue size', c.maxQueueSize ? fmt.int(c.maxQueueSize) : 'unbounded'],
    ['Dead-letter queue', c.deadLetterQueue === undefined ? '–' : String(c.deadLetterQueue)],
    ['Priority', fmt.int(st.queue?.priority)],
  ]);
}

function opsChart(ops, queue, r) {
  if (!ops) return unavailable('/api/v1/analytics/queue-ops', 'The operations series');
  const points = (ops.series || []).filter((p) => !p.queueName || p.queueName === queue).map((p) => ({ ...p, t: p.bucket }));
  return lineChart('queue-ops', [
    { key: 'pushPerSecond', label: 'push' },
    { key: 'popPerSecond', label: 'pop' },
    { key: 'ackPerSecond', label: 'ack' },
  ], points, { yLabel: 'msg/s', fit: r.fit });
}

// partitionsTitle says when the table shows the first page only.
function partitionsTitle(d) {
  const shown = (d.partitions || []).length;
  if (d.partitionCount > shown) return 'Partitions (the oldest ' + fmt.int(shown) + ' of ' + fmt.int(d.partitionCount) + ')';
  return 'Partitions';
}
