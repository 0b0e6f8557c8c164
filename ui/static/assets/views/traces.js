// Traces: the known trace names, and the events of one name with their messages (spec 9.3).
import { enc, optional, q } from '../api.js';
import { add, badge, fmt, groupName, h, link, pre, section, table, unavailable } from '../dom.js';

export async function render(root, { name }) {
  add(root, h('h1', {}, name ? ['Trace ', h('span', { class: 'mono' }, name)] : 'Traces'));
  if (name) {
    const res = await optional('/api/v1/traces/by-name/' + enc(name) + q({ limit: 200 }));
    if (!res) {
      add(root, unavailable('/api/v1/traces/by-name/:traceName', 'Tracing'));
      return;
    }
    add(root, 
      h('p', {}, link('#/traces', '← all trace names'), ' · ', fmt.int(res.total), ' events'),
      table('trace-events', [
        { label: 'When', value: (t) => fmt.time(t.created_at) },
        { label: 'Event', value: (t) => badge(t.event_type, 'info') },
        { label: 'Message', value: (t) => link('#/messages/' + enc(t.partition_id) + '/' + enc(t.transaction_id), t.transaction_id) },
        { label: 'Queue / partition', value: (t) => (t.queue_name || '–') + '/' + (t.partition_name || '–') },
        { label: 'Group', key: 'group', value: (t) => (t.consumer_group ? groupName(t.consumer_group) : '–') },
        { label: 'Data', value: (t) => pre(t.data) },
      ], res.traces || [], 'No events under this name.'));
    return;
  }
  const res = await optional('/api/v1/traces/names' + q({ limit: 200 }));
  if (!res) {
    add(root, unavailable('/api/v1/traces/names', 'Tracing'));
    return;
  }
  add(root, section('Trace names', table('trace-names', [
    { label: 'Name', value: (t) => link('#/traces/' + enc(t.trace_name), t.trace_name) },
    { label: 'Events', num: true, value: (t) => fmt.int(t.trace_count) },
    { label: 'Messages', num: true, value: (t) => fmt.int(t.message_count) },
    { label: 'Last seen', value: (t) => fmt.time(t.last_seen) },
  ], res.trace_names || [], 'No traces recorded yet: clients add them with msg.trace().')));
}
