package broker

import (
	"github.com/combmq/comb/segment"
)

// QueueView is a read-only handle on one queue (View.Queues, View.Queue). It
// stays usable after the queue is deleted: it then reads what the queue held.
type QueueView struct {
	q *queue
	b *Broker
}

// QueueConf is a queue's configuration at one moment (one atomic load).
type QueueConf struct {
	Namespace, Task string // "" = none
	Options         QueueOptions
}

// ID is the queue's id (a UUIDv7); IDString its text form.
func (v QueueView) ID() [16]byte { return v.q.id }

// IDString is the queue's id as a UUID string.
func (v QueueView) IDString() string { return v.q.idStr }

// Name is the queue's name.
func (v QueueView) Name() string { return v.q.name }

// CreatedAtMicros is when the queue was created (µs since the epoch).
func (v QueueView) CreatedAtMicros() int64 { return v.q.createdAt }

// Conf returns the queue's namespace, task and options.
func (v QueueView) Conf() QueueConf {
	c := v.q.conf.Load()
	return QueueConf{Namespace: c.namespace, Task: c.task, Options: c.opts}
}

// Groups returns the consumer groups with a cursor on some partition of the
// queue: a copy-on-write snapshot the caller must not modify.
func (v QueueView) Groups() map[string]struct{} { return v.q.groupList() }

// Partitions returns the queue's partitions at this moment, in creation
// order as the registry lists them.
func (v QueueView) Partitions() []PartitionView {
	v.q.mu.RLock()
	defer v.q.mu.RUnlock()
	out := make([]PartitionView, len(v.q.list))
	for i, p := range v.q.list {
		out[i] = PartitionView{p}
	}
	return out
}

// Partition returns the queue's partition named name; false when there is
// none.
func (v QueueView) Partition(name string) (PartitionView, bool) {
	p := v.q.partition(name)
	if p == nil {
		return PartitionView{}, false
	}
	return PartitionView{p}, true
}

// OpenPayload returns what a reader of the queue's message id may see of a
// stored payload (spec 9.2): the payload when it is not sealed, its plaintext
// when a configured key opens it, else nil and the reason (for
// PayloadError). The result may alias stored.
func (v QueueView) OpenPayload(id [16]byte, stored []byte) ([]byte, string) {
	return v.b.readPayload(v.q, id, stored)
}

// WithDLQ calls fn with the queue's DLQ log, opened if it exists on disk, and
// holds it still (no append nor retention) until fn returns; fn is not
// called when the queue never dead-lettered. The error is the log's opening
// failure.
func (v QueueView) WithDLQ(fn func(l DLQLog)) error {
	v.q.dlqMu.Lock()
	defer v.q.dlqMu.Unlock()
	l, err := v.b.dlqLogLocked(v.q, false)
	if err != nil || l == nil {
		return err
	}
	fn(DLQLog{l})
	return nil
}

// DLQBytes is the segment bytes of the queue's DLQ log if it is open
// (segment.Log.Bytes: listed false while its files are not listed yet); open
// false when it is not, and then nothing is read from disk.
func (v QueueView) DLQBytes() (bytes int64, listed, open bool) {
	v.q.dlqMu.Lock()
	defer v.q.dlqMu.Unlock()
	if v.q.dlq == nil {
		return 0, false, false
	}
	bytes, listed = v.q.dlq.Bytes()
	return bytes, listed, true
}

// DLQLog reads a queue's DLQ log inside QueueView.WithDLQ; each record's
// Extra is its walentry.DLQMeta. It must not be kept past fn.
type DLQLog struct{ l *segment.Log }

// FirstOffset is the first retained entry's offset.
func (d DLQLog) FirstOffset() uint64 { return d.l.FirstOffset() }

// NextOffset is the offset the next entry will take.
func (d DLQLog) NextOffset() uint64 { return d.l.NextOffset() }

// Read reads up to max entries from offset from, at most maxBytes of payload
// (0 = no cap), into buf (segment.Log.Read).
func (d DLQLog) Read(from uint64, max, maxBytes int, buf *segment.ReadBuffer) ([]segment.Message, error) {
	return d.l.Read(from, max, maxBytes, buf)
}

// PartitionView is a read-only handle on one partition (one pointer: a
// report over many partitions holds a slice of them); View.QueueOf gives its
// queue.
type PartitionView struct{ p *partition }

// ID is the partition's id (a UUIDv7).
func (v PartitionView) ID() [16]byte { return v.p.id }

// IDString is the partition's id as a UUID string.
func (v PartitionView) IDString() string { return v.p.idStr }

// Name is the partition's name.
func (v PartitionView) Name() string { return v.p.name }

// CreatedAtMicros is when the partition was created (µs since the epoch).
func (v PartitionView) CreatedAtMicros() int64 { return v.p.createdAt }

// Visible is the offset after the last message a pop may see (offsets start
// at 1): appended, durable and published.
func (v PartitionView) Visible() uint64 { return v.p.visible.Load() }

// LiveFrom is the first offset a reader may still see, past both whole-file
// retention and read-time expiry (read_expire.go).
func (v PartitionView) LiveFrom() uint64 { return v.p.liveFrom() }

// Damaged reports whether the partition is out of service for on-disk damage
// (damage.go); its log must then not be read.
func (v PartitionView) Damaged() bool { return v.p.isDamaged() }

// Read reads up to max messages from offset from, at most maxBytes of
// payload (0 = no cap), into buf (segment.Log.Read). It may return messages
// at or past Visible: the caller stops there.
func (v PartitionView) Read(from uint64, max, maxBytes int, buf *segment.ReadBuffer) ([]segment.Message, error) {
	return v.p.log.Read(from, max, maxBytes, buf)
}

// LastTimestamp is the segment timestamp (µs) of the newest message.
func (v PartitionView) LastTimestamp() int64 { return v.p.log.LastTimestamp() }

// OffsetAtOrAfterTime is the first offset whose segment is at or after
// tsMicros (the time index).
func (v PartitionView) OffsetAtOrAfterTime(tsMicros int64) uint64 {
	return v.p.log.OffsetAtOrAfterTime(tsMicros)
}

// LastOffsetAtOrBefore is the last offset whose segment is at or before
// tsMicros (the time index).
func (v PartitionView) LastOffsetAtOrBefore(tsMicros int64) uint64 {
	return v.p.log.LastOffsetAtOrBefore(tsMicros)
}

// Bytes is the partition's segment bytes (segment.Log.Bytes): listed false
// for a log opened from a summary whose files are not listed yet.
func (v PartitionView) Bytes() (bytes int64, listed bool) { return v.p.log.Bytes() }
