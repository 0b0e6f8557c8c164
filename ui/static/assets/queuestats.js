// Per-queue figures for the queue tables: lag (the most behind consumer group: its oldest
// unconsumed message's age and its messages behind, from GET /api/v1/consumer-groups), dead
// letters (the total of GET /api/v1/dlq?queue=, which leaves out the entries deleted or
// requeued from the dashboard) and message rates over the last 15 minutes (GET
// /api/v1/analytics/queue-ops).
import { api, optional, q } from './api.js';
import { fmt, link } from './dom.js';

const RATE_WINDOW_MIN = 15;
// MAX_DLQ_ASKS bounds the DLQ totals asked for in one render; queues past it show "–".
const MAX_DLQ_ASKS = 200;

// queueStats returns Map(name → {lagSeconds, behind, dlq, inPerMin, outPerMin}) for names.
export async function queueStats(names) {
  const to = new Date();
  const from = new Date(to.getTime() - RATE_WINDOW_MIN * 60000);
  const [groups, ops, dlqs] = await Promise.all([
    api('/api/v1/consumer-groups'),
    optional('/api/v1/analytics/queue-ops' + q({ from: from.toISOString(), to: to.toISOString() })),
    Promise.all(names.slice(0, MAX_DLQ_ASKS).map((n) => api('/api/v1/dlq' + q({ queue: n, limit: 1 })).then((r) => r.total))),
  ]);
  const out = new Map(names.map((n, i) => [n, {
    lagSeconds: null, behind: null, dlq: i < dlqs.length ? dlqs[i] : null,
    inPerMin: ops ? 0 : null, outPerMin: ops ? 0 : null,
  }]));
  for (const g of groups || []) {
    const s = out.get(g.queueName);
    if (!s) continue;
    s.lagSeconds = Math.max(s.lagSeconds ?? 0, g.maxTimeLag ?? 0);
    s.behind = Math.max(s.behind ?? 0, g.totalLag ?? 0);
  }
  for (const p of (ops && ops.series) || []) {
    const s = out.get(p.queueName);
    if (!s) continue;
    s.inPerMin += (p.pushMessages || 0) / RATE_WINDOW_MIN;
    s.outPerMin += ((p.ackSuccess || 0) + (p.ackFailed || 0)) / RATE_WINDOW_MIN;
  }
  return out;
}

export const RATE_LABEL = '/min, ' + RATE_WINDOW_MIN + ' min';

// statColumns are the table columns of those figures, for rows with a name (data-col lag,
// behind, dlq, in, out).
export function statColumns(stats) {
  const of = (r) => stats.get(r.name) || {};
  return [
    { label: 'Lag', key: 'lag', num: true, title: 'Age of the oldest message the most behind consumer group has not consumed',
      value: (r) => (of(r).lagSeconds === null || of(r).lagSeconds === undefined ? '–' : fmt.secs(of(r).lagSeconds)) },
    { label: 'Behind', key: 'behind', num: true, title: 'Messages that group has not consumed', value: (r) => fmt.int(of(r).behind) },
    { label: 'DLQ', key: 'dlq', num: true, title: 'Dead-letter entries', value: (r) => (of(r).dlq ? link('#/dlq' + q({ queue: r.name }), fmt.int(of(r).dlq)) : fmt.int(of(r).dlq)) },
    { label: 'In ' + RATE_LABEL, key: 'in', num: true, title: 'Messages pushed per minute over the last ' + RATE_WINDOW_MIN + ' minutes', value: (r) => fmt.rate(of(r).inPerMin) },
    { label: 'Acked ' + RATE_LABEL, key: 'out', num: true, title: 'Messages acknowledged per minute over the last ' + RATE_WINDOW_MIN + ' minutes', value: (r) => fmt.rate(of(r).outPerMin) },
  ];
}
