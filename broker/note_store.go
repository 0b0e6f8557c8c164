package broker

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/combmq/comb/layout"
	"github.com/combmq/comb/notes"
	"github.com/combmq/comb/segment"
	"github.com/combmq/comb/walentry"
)

// walNote is the commit-log entry of a note (walentry.Note).
const walNote = walentry.Note

// notesDir is the notes store's directory under the data directory: deletion
// tombstones and trace events (package notes).
const notesDir = layout.Notes

// msgNotes is what the broker keeps about messages after their push:
// tombstones and trace events (package notes).
type msgNotes struct {
	store *notes.Store
}

// openNotes opens <data>/notes (before the commit log's replay, which
// applies the Note entries the notes file may lack). A torn or damaged tail
// is copied to <data>/quarantine/notes, cut and logged; damage before
// verified records makes Open fail (notes.ErrCorrupt).
func (b *Broker) openNotes() error {
	s, rep, err := notes.Open(b.fs, filepath.Join(b.dir, notesDir),
		notes.Options{QuarantineDir: filepath.Join(b.dir, layout.Quarantine, notesDir), NoSync: b.noSync()})
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	if rep.CutBytes > 0 {
		b.log.Warn().Str("tail", rep.Tail).Int64("bytes", rep.CutBytes).Int("records", rep.Records).Str("keptAt", rep.KeptAt).
			Msg("notes: cut what followed the last whole record (a torn write; its note is replayed from the commit log if it was acknowledged)")
	}
	b.msgNotes.store = s
	return nil
}

// logNote makes one note (a notes.Encode* body) durable through the commit
// log's group commit, then applies it to the notes store (its file is
// synced by the next flush pass, before the log drops the entry). The entry
// is registered in flight with its append, under the lock the flush pass
// reads the in-flight set with, so no pass truncates it before it is
// applied. applied is false for a note the store already holds.
func (b *Broker) logNote(body []byte) (applied bool, err error) {
	b.flush.stateMu.Lock()
	tk, err := b.wal.Append(walNote, body)
	if err == nil {
		if b.flush.inflight == nil {
			b.flush.inflight = map[uint64]int{}
		}
		b.flush.inflight[uint64(tk.LSN)]++
	}
	b.flush.stateMu.Unlock()
	if err != nil {
		return false, b.noSpace("the commit log", fmt.Errorf("commit log: %w", err))
	}
	defer b.txApplied(uint64(tk.LSN))
	if err := tk.Wait(); err != nil {
		return false, fmt.Errorf("commit log: %w", err)
	}
	// A write the notes file had no room for is cut back there (notes.Store
	// is not failed by it): the request answers ErrNoSpace and the same
	// note is applied once space is freed (issue 21).
	applied, err = b.msgNotes.store.Apply(body)
	if err != nil {
		return false, b.noSpace("the notes log", err)
	}
	b.wroteOK()
	return applied, nil
}

// replayNote applies a Note entry found by the start-up replay; a note the
// store holds already (its file was synced) changes nothing.
func (b *Broker) replayNote(lsn uint64, body []byte) error {
	_, err := b.msgNotes.store.Apply(body)
	if errors.Is(err, notes.ErrTooManyTraces) {
		return nil // as when it was first applied
	}
	if err != nil {
		return fmt.Errorf("commit log entry %d: %w", lsn, err)
	}
	return nil
}

// syncNotes makes every applied note durable in the notes file.
func (b *Broker) syncNotes() error {
	if b.msgNotes.store == nil {
		return nil
	}
	return b.msgNotes.store.Sync()
}

func (b *Broker) closeNotes() error {
	if b.msgNotes.store == nil {
		return nil
	}
	return b.msgNotes.store.Close()
}

// pruneNotes drops the notes of messages retention removed and of deleted
// partitions (the maintenance task and the trace listings call it), but the
// tombstones a retained dead letter still refers to (deadLetterHolds).
func (b *Broker) pruneNotes() {
	if b.msgNotes.store == nil {
		return
	}
	if err := b.msgNotes.store.Prune(b.noteKeep, b.deadLetterHolds()); err != nil {
		b.log.Warn().Err(err).Msg("notes: rewrite failed; the old file stays in use")
	}
}

// deadLetterHolds returns the Hold of the tombstones that retention would
// drop while their queue's DLQ log still holds a dead letter of the message:
// the DLQ listing and counts hide a deleted message's dead letter by its
// tombstone, and a DLQ file outlives its messages' files when they failed
// long after they were pushed (retainDLQs cuts it by the time of failure),
// so a dropped tombstone would bring the entry back. It reads the DLQ log
// of a queue only when one of its tombstones is to be dropped: nil, and
// nothing read, in the usual case of none.
func (b *Broker) deadLetterHolds() notes.Hold {
	below := b.msgNotes.store.TombstonesBelow(b.noteKeep)
	if len(below) == 0 {
		return nil
	}
	want := make(map[notes.MessageRef]bool, len(below))
	queues := map[*queue]bool{}
	for _, ref := range below {
		if p := b.lookupPartitionByID(ref.Partition); p != nil {
			want[ref] = true
			queues[p.q] = true
		}
	}
	held := map[notes.MessageRef]bool{}
	for q := range queues {
		b.eachDeadLetterRef(q, func(ref notes.MessageRef) {
			if want[ref] {
				held[ref] = true
			}
		})
	}
	return func(ref notes.MessageRef) bool { return held[ref] }
}

// eachDeadLetterRef calls fn with the source message of every retained
// entry of q's DLQ log whose metadata decodes. A read error ends it early
// and is logged: the tombstones it did not reach are dropped, as before
// dead letters held any.
func (b *Broker) eachDeadLetterRef(q *queue, fn func(notes.MessageRef)) {
	q.dlqMu.Lock()
	defer q.dlqMu.Unlock()
	l, err := b.dlqLogLocked(q, false)
	if err != nil || l == nil {
		if err != nil {
			b.log.Warn().Err(err).Str("queue", q.name).Msg("notes: opening the DLQ to keep its deleted messages' tombstones")
		}
		return
	}
	buf := new(segment.ReadBuffer)
	for from := l.FirstOffset(); from < l.NextOffset(); {
		msgs, err := l.Read(from, 1024, 8<<20, buf)
		if err != nil || len(msgs) == 0 {
			if err != nil {
				b.log.Warn().Err(err).Str("queue", q.name).Msg("notes: reading the DLQ to keep its deleted messages' tombstones")
			}
			return
		}
		for i := range msgs {
			if meta, err := walentry.DecodeDLQMeta(msgs[i].Extra); err == nil {
				fn(notes.MessageRef{Partition: meta.PartitionID, Offset: meta.Offset})
			}
		}
		from = msgs[len(msgs)-1].Offset + 1
		buf.Reset()
	}
}

// noteKeep: a live partition keeps the notes of its retained offsets.
func (b *Broker) noteKeep(id [16]byte) (uint64, bool) {
	p := b.lookupPartitionByID(id)
	if p == nil || p.q.deleted.Load() {
		return 0, false
	}
	return p.log.FirstOffset(), true
}
