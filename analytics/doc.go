// Package analytics keeps the per-minute series behind the dashboard routes
// (spec 8.7: /api/v1/status, /status/analytics, /analytics/*) and the
// per-minute Prometheus gauges (spec 8.3): for each queue, and for all queues
// together, how many messages were ingested (pushed), popped, processed
// (completed by an ack or autoAck), failed (errors), and the pop lag (the age
// of a message when popped, average and maximum, in ms).
//
// It must not know about the broker or HTTP: the broker counts into a
// queue's Counters on its push, pop and ack paths (atomic adds, no lock, no
// allocation) and calls Store.Tick from its maintenance task; readers ask
// Store.Query. Keys are queue ids; names ride along for display only.
//
// # Windows and memory
//
// At each minute boundary (Tick) the counters of the minute that ended are
// moved into three rings per series: minutes, hours and days (the rollups are
// added as the minutes close, so an hour point is the sum of its minutes and
// the maximum of their lag maxima). A queue's rings are allocated on its first
// active minute; an idle queue costs only its Counters (64 bytes). The
// bound, with a Point of 56 bytes:
//
//	series      minutes        hours          days       bytes
//	all queues  1440 (24 h)    336 (14 d)     90         ~102 KiB
//	one queue   120  (2 h)     48  (2 d)      31         ~10.9 KiB
//
// so 10,000 queues that all saw traffic hold ~106 MiB of rings, and 10,000
// idle ones ~0.6 MiB (plus each one's map entry and name).
//
// # File
//
// The rings are persisted in <data>/meta/analytics, one frame of package
// record's framing (magic "CANL"), replaced atomically (write temp, fsync,
// rename, fsync the directory) after every minute boundary and at Close, so
// a restart does not blank the charts; a crash loses at most the minute in
// progress. Body (varints as encoding/binary, str = uvarint length + bytes):
//
//	ver u8 (2; 1 is read too) | minute varint (the minute being counted) | nseries uvarint |
//	nseries × ( id [16] | name str | 3 × ring )
//	ring = last varint (newest unit index) | npoints uvarint |
//	       npoints × ( age uvarint (last - unit) | ingested | popped |
//	                   processed | errors | lagSumMs | lagMaxMs |
//	                   deadLettered (uvarints; absent in version 1) )
//
// Only non-zero points are written. The all-queues series has the zero id.
// A file that does not decode is ignored with a warning (the charts start
// blank; nothing acknowledged depends on it).
package analytics
