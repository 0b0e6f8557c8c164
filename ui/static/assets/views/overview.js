// Overview: the system's headline numbers (resources overview), throughput and lag over the
// chosen range (/api/v1/status; fitted to the data by default), and the busiest queues with
// their lag, dead letters and rates.
import { api, enc, optional, q } from '../api.js';
import { add, card, cards, fmt, h, link, section, table, unavailable } from '../dom.js';
import { lineChart } from '../chart.js';
import { picker, range } from '../range.js';
import { queueStats, statColumns } from '../queuestats.js';

export async function render(root, _params, query) {
  const r = range(query);
  const [ov, qs, status, dlq] = await Promise.all([
    api('/api/v1/resources/overview'),
    api('/api/v1/resources/queues'),
    optional('/api/v1/status' + (r.fit ? '' : q({ from: r.from, to: r.to }))),
    api('/api/v1/dlq' + q({ limit: 1 })), // its total leaves out entries deleted or requeued here
  ]);
  const top = topQueues(qs.queues || []);
  const stats = await queueStats(top.map((x) => x.name));
  const m = ov.messages || {};
  const lag = (ov.lag && ov.lag.time) || {};
  const tp = ov.throughput || {};
  add(root, 
    h('h1', {}, 'Overview'),
    cards(
      card('Queues', fmt.int(ov.queues), 'queues'),
      card('Partitions', fmt.int(ov.partitions), 'partitions'),
      card('Messages', fmt.int(m.total), 'messages-total'),
      card('Pending', fmt.int(m.pending), 'messages-pending'),
      card('Processing', fmt.int(m.processing), 'messages-processing'),
      card('Completed', fmt.int(m.completed), 'messages-completed'),
      card('Dead letters', link('#/dlq', fmt.int(dlq.total)), 'messages-dead-letter'),
      card('Lag, average', fmt.secs(lag.avg), 'lag-avg'),
      card('Lag, max', fmt.secs(lag.max), 'lag'),
      card('Ingested', fmt.rate(tp.ingestedPerSecond) + ' /s', 'ingested-rate'),
      card('Processed', fmt.rate(tp.processedPerSecond) + ' /s', 'processed-rate'),
    ),
    h('div', { class: 'toolbar' }, picker(r)),
    charts(status, r),
    section('Queues',
      table('overview-queues', [
        { label: 'Queue', value: (r) => link('#/queues/' + enc(r.name), r.name) },
        { label: 'Namespace', value: (r) => r.namespace || '–' },
        { label: 'Task', value: (r) => r.task || '–' },
        { label: 'Partitions', num: true, value: (r) => fmt.int(r.partitions) },
        { label: 'Messages', num: true, value: (r) => fmt.int(r.messages?.total) },
        { label: 'Pending', num: true, value: (r) => fmt.int(r.messages?.pending) },
        { label: 'Processing', num: true, value: (r) => fmt.int(r.messages?.processing) },
        ...statColumns(stats),
      ], top, 'No queues yet: a push or a configure creates one.', (r) => r.name)),
  );
}

// topQueues puts the queues with the most pending work first, 20 at most.
function topQueues(list) {
  return [...list].sort((a, b) => (b.messages?.pending ?? 0) - (a.messages?.pending ?? 0)).slice(0, 20);
}

function charts(status, r) {
  if (!status) return section('Throughput and lag', unavailable('/api/v1/status', 'The throughput series'));
  const points = (status.throughput || []).map((p) => ({ ...p, t: p.timestamp }));
  const per = status.bucketMinutes ? ', per ' + status.bucketMinutes + ' min bucket' : '';
  return h('div', { class: 'grid2' },
    section('Throughput, messages per second (' + r.label + per + ')',
      lineChart('throughput', [
        { key: 'ingestedPerSecond', label: 'ingested' },
        { key: 'processedPerSecond', label: 'processed' },
        { key: 'popPerSecond', label: 'popped' },
      ], points, { yLabel: 'msg/s', fit: r.fit })),
    section('Lag at pop (' + r.label + per + ')',
      lineChart('lag', [
        { key: 'avgLagMs', label: 'average' },
        { key: 'maxLagMs', label: 'max' },
      ], points, { format: fmt.ms, fit: r.fit })));
}
