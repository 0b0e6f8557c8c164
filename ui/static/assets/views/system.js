// System: health, process and storage figures (/health, /metrics, comb's own
// GET /api/v1/storage and Prometheus families) and the two maintenance switches (admin).
import { ApiError, api, optional, withStatus } from '../api.js';
import { add, badge, card, cards, fmt, h, kv, section, table, unavailable } from '../dom.js';
import { act } from '../actions.js';

export async function render(root) {
  const [health, metrics, prom, maint, storage] = await Promise.all([
    withStatus('/health', (s) => s === 200 || s === 503),
    api('/metrics'),
    api('/metrics/prometheus', { text: true }),
    maintenance(),
    optional('/api/v1/storage'),
  ]);
  const hb = health.body || {};
  const samples = parseProm(prom);
  const one = (name) => samples.find((s) => s.name === name && s.labels === '')?.value;
  add(root, 
    h('h1', {}, 'System'),
    cards(
      card('Health', badge(hb.status || 'unknown', hb.status === 'healthy' ? 'completed' : 'dead_letter'), 'health'),
      card('Version', hb.version || '–', 'version'),
      card('Uptime', fmt.secs(metrics.uptime), 'uptime'),
      card('Requests', fmt.int(metrics.requests?.total), 'requests', fmt.rate(metrics.requests?.rate) + ' /s since start'),
      card('Memory (RSS)', fmt.bytes(metrics.memory?.rss), 'rss', 'heap ' + fmt.bytes(metrics.memory?.heapUsed)),
      card('Open files', fmt.int(one('comb_open_files')) + ' / ' + fmt.int(one('comb_max_open_files')), 'open-files'),
    ),
    section('Storage', storageFigures(storage)),
    hb.reason ? h('p', { class: 'error-text' }, hb.reason) : null,
    (hb.damaged || []).length ? section('Damaged partitions', table('damaged', [
      { label: 'Queue', value: (d) => d.queue },
      { label: 'Partition', value: (d) => d.partition },
      { label: 'File', value: (d) => d.file },
      { label: 'Bytes', value: (d) => fmt.int(d.startByte) + '–' + fmt.int(d.endByte) },
      { label: 'Since', value: (d) => fmt.time(d.since) },
    ], hb.damaged)) : null,
    section('Maintenance', maint),
    section('Storage and server (comb_* of /metrics/prometheus)', table('storage', [
      { label: 'Metric', value: (s) => h('span', { class: 'mono' }, s.name) },
      { label: 'Labels', value: (s) => h('span', { class: 'mono muted' }, s.labels) },
      { label: 'Value', num: true, value: (s) => fmt.rate(s.value) },
    ], samples.filter((s) => s.name.startsWith('comb_') && !s.name.endsWith('_bucket')), 'No storage metrics.')),
  );
}

// maintenance shows both switches with a button each; they need an admin token, so a 403
// becomes a note instead of an error for the whole view.
async function maintenance() {
  let push, pop;
  try {
    [push, pop] = await Promise.all([api('/api/v1/system/maintenance'), api('/api/v1/system/maintenance/pop')]);
  } catch (e) {
    if (e instanceof ApiError && e.status === 403) return h('p', { class: 'muted' }, 'The maintenance switches need an admin token.');
    throw e;
  }
  const row = (label, on, path, key) => h('div', { class: 'switch' },
    h('span', {}, label, ': '), h('span', { dataset: { metric: key } }, on ? 'on' : 'off'), ' ',
    h('button', { type: 'button', dataset: { action: key }, onclick: () => act({
      title: (on ? 'Turn off ' : 'Turn on ') + label.replace(/ \(.*/, '').toLowerCase() + '?',
      text: label + '. It applies to the whole server at once (POST ' + path + ').',
      confirm: on ? 'Turn off' : 'Turn on',
    }, 'admin', async () => {
      await api(path, { method: 'POST', body: { enabled: !on } });
      return label.replace(/ \(.*/, '') + ' is ' + (on ? 'off' : 'on') + '.';
    }) }, on ? 'Turn off' : 'Turn on'));
  return h('div', {},
    row('Push maintenance (pushes are held, then delivered in order)', push.maintenanceMode, '/api/v1/system/maintenance', 'maintenance-push'),
    row('Pop maintenance (every pop answers 204)', pop.popMaintenanceMode, '/api/v1/system/maintenance/pop', 'maintenance-pop'),
    kv([['Held messages', fmt.int(push.bufferedMessages)]]));
}

// storageFigures are GET /api/v1/storage's numbers: what the data directory holds, what the
// disk has left, what a restart would replay (the commit log since the last flush pass, which
// truncates it) and how fast fdatasync is.
function storageFigures(st) {
  if (!st) return unavailable('/api/v1/storage', 'The storage figures');
  const f = st.flush || {};
  const s = st.fsync || {};
  const usedPct = st.diskTotalBytes ? Math.round(100 * (1 - st.diskFreeBytes / st.diskTotalBytes)) : null;
  return h('div', {},
    cards(
      card('Disk free', fmt.bytes(st.diskFreeBytes), 'disk-free', st.diskTotalBytes ? 'of ' + fmt.bytes(st.diskTotalBytes) + ', ' + usedPct + '% used' : null),
      card('Data size', fmt.bytes(st.dataBytes), 'data-size', fmt.int(st.dataFiles) + ' files'),
      card('Segments', fmt.bytes(st.segmentBytes), 'segment-size', st.segmentLogsUnlisted ? fmt.int(st.segmentLogsUnlisted) + ' logs not listed yet' : 'partitions and DLQs'),
      card('Commit log', fmt.bytes(st.commitLogBytes), 'commit-log-size', 'replayed by a restart'),
      card('Last flush pass', f.lastAt ? fmt.ago(f.lastAt) : 'none yet', 'last-flush', f.lastAt ? 'took ' + fmt.ms(f.lastDurationMs) + ', ' + fmt.int(f.passes) + ' passes' : null),
      card('Fsync latency', s.count ? fmt.ms(s.avgMs) : '–', 'fsync-latency',
        s.count ? 'average of ' + fmt.int(s.count) + '; p99 ' + (s.p99UpToMs === null ? 'over 1 s' : '≤ ' + fmt.ms(s.p99UpToMs)) : 'no sync yet'),
    ),
    kv([['Data directory', h('span', { class: 'mono' }, st.dataDir)]]),
    (st.errors || []).map((e) => h('p', { class: 'error-text', dataset: { storageError: '' } }, e)));
}

// parseProm reads the Prometheus text format's samples: [{name, labels: '{…}' or '', value}].
function parseProm(text) {
  const out = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (m) out.push({ name: m[1], labels: m[2] || '', value: Number(m[3]) });
  }
  return out;
}
