package broker

import (
	"time"

	"github.com/rs/zerolog"

	"github.com/combmq/comb/analytics"
	"github.com/combmq/comb/cursor"
	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/notes"
	"github.com/combmq/comb/segment"
)

// View is the read-only face of a Broker that the read-side reports (package
// report: the admin routes of spec 7.6, 8.2-8.7 and /metrics) are computed
// from. Every method takes the locks it needs itself and hands back data, or a
// handle (QueueView, PartitionView, DLQLog) whose methods do the same: the
// lock order of doc.go never leaves the engine, and nothing a View gives out
// changes broker state. A View is a value; copies share the Broker.
//
// A report brackets its reads with Enter and Leave, as every request does, so
// that Close waits for it; the few reads that are safe after Close (Counters,
// the histograms, FlushStatus) do not need to.
type View struct{ b *Broker }

// View returns the broker's read-only view.
func (b *Broker) View() View { return View{b} }

// Enter marks a read in flight (Close waits for it): ErrClosed once the
// broker is closing. A nil error must be paired with Leave.
func (v View) Enter() error { return v.b.enter() }

// Leave ends a read started by a successful Enter.
func (v View) Leave() { v.b.leave() }

// Closed reports whether Close has begun.
func (v View) Closed() bool { return v.b.closed.Load() }

// Now is the broker's clock (Config.Now): lease liveness and lags are
// measured against it.
func (v View) Now() time.Time { return v.b.now() }

// Logger is the broker's logger, for a report's warnings.
func (v View) Logger() *zerolog.Logger { return &v.b.log }

// Dir is the data directory (Config.DataDir).
func (v View) Dir() string { return v.b.dir }

// Queues returns the live queues sorted by name.
func (v View) Queues() []QueueView {
	qs := v.b.sortedQueues()
	out := make([]QueueView, len(qs))
	for i, q := range qs {
		out[i] = QueueView{q: q, b: v.b}
	}
	return out
}

// Queue returns the live queue named name; false when there is none.
func (v View) Queue(name string) (QueueView, bool) {
	q := v.b.lookupQueue(name)
	if q == nil {
		return QueueView{}, false
	}
	return QueueView{q: q, b: v.b}, true
}

// Partition returns the partition with id; false when there is none.
func (v View) Partition(id [16]byte) (PartitionView, bool) {
	p := v.b.lookupPartitionByID(id)
	if p == nil {
		return PartitionView{}, false
	}
	return PartitionView{p}, true
}

// QueueOf is the queue partition p belongs to.
func (v View) QueueOf(p PartitionView) QueueView { return QueueView{q: p.p.q, b: v.b} }

// RangeCursors calls fn with every (partition, group) cursor and its state
// until fn returns false (cursor.Engine.Range: fn must not call back into the
// broker's write paths).
func (v View) RangeCursors(fn func(k cursor.Key, st lease.State) bool) { v.b.cur.Range(fn) }

// Cursor returns group's state on partition id; false when the group has no
// cursor there.
func (v View) Cursor(id [16]byte, group string) (lease.State, bool) {
	return v.b.cur.Get(cursor.Key{Partition: id, Group: group})
}

// RangeSubscriptions calls fn with every (queue, group) subscription record
// until fn returns false.
func (v View) RangeSubscriptions(fn func(queue, group string, s cursor.Subscription) bool) {
	v.b.cur.RangeSubscriptions(fn)
}

// Deleted reports whether DELETE /api/v1/messages removed the message (a
// tombstone in the notes store).
func (v View) Deleted(ref notes.MessageRef) bool { return v.b.msgNotes.store.Deleted(ref) }

// FindMessage finds the visible, retained, undeleted message txid of
// partition partitionID (a UUID string) through the partition's dedup index:
// one hash lookup and one record read. The message's strings and slices are
// its own; its payload is as stored (QueueView.OpenPayload reads it).
// Unknown → NotFound("Message not found"); a damaged partition → its error.
func (v View) FindMessage(partitionID, txid string) (PartitionView, segment.Message, error) {
	fm, err := v.b.findMessage(partitionID, txid)
	if err != nil {
		return PartitionView{}, segment.Message{}, err
	}
	return PartitionView{fm.p}, fm.msg, nil
}

// Series is the per-minute series store (maint_series.go); nil with
// Config.NoAnalytics, which analytics.Store's read methods accept.
func (v View) Series() *analytics.Store { return v.b.series }

// CommitLogBytes is what the commit log holds since its last truncation (the
// replay a restart would do). Call it between Enter and Leave.
func (v View) CommitLogBytes() int64 { return v.b.wal.RetainedBytes() }

// SyncLatency is the cumulative histogram of the commit log's group-commit
// syncs since Open (write_synchist.go).
func (v View) SyncLatency() LatencyHistogram { return v.b.syncHist.snapshot() }

// CheckpointLatency is the cumulative histogram of cursor checkpoints, from
// their commit-log append to durable (write_wal.go cursorLog).
func (v View) CheckpointLatency() LatencyHistogram { return v.b.ckptHist.snapshot() }

// FlushStatus is what the background flush pass (flush.go) has done since
// Open.
type FlushStatus struct {
	// Passes counts the passes run (successful or not); LastEndMicros is when
	// the last one ended, LastDurationMicros how long it took, LastErr its
	// error ("" for a success). All zero before the first.
	Passes                            uint64
	LastEndMicros, LastDurationMicros int64
	LastErr                           string
}

// FlushStatus returns the flush pass's figures.
func (v View) FlushStatus() FlushStatus {
	f := &v.b.flush
	f.stateMu.Lock()
	defer f.stateMu.Unlock()
	s := FlushStatus{Passes: f.passes}
	if f.passes > 0 {
		s.LastEndMicros, s.LastDurationMicros = f.lastEnd, f.lastDur
		if f.err != nil {
			s.LastErr = f.err.Error()
		}
	}
	return s
}
