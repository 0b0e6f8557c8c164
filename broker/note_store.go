package broker

import (
	"fmt"
	"path/filepath"

	"github.com/combmq/comb/notes"
)

// notesDir is the notes store's directory under the data directory: deletion
// tombstones and trace events (package notes).
const notesDir = "notes"

// msgNotes is what the broker keeps about messages after their push:
// tombstones and trace events (package notes), and the per-queue map from
// dead-letterings back to messages (report_msgdlq.go).
type msgNotes struct {
	store *notes.Store
	dlq   dlqIndexes
}

// openNotes opens <data>/notes. A torn or damaged tail (an append a crash
// cut short, never acknowledged, or damage to the last record) is copied to
// <data>/quarantine/notes, cut and logged; damage before verified records
// makes Open fail (notes.ErrCorrupt).
func (b *Broker) openNotes() error {
	s, rep, err := notes.Open(b.fs, filepath.Join(b.dir, notesDir),
		notes.Options{QuarantineDir: filepath.Join(b.dir, "quarantine", notesDir), NoSync: b.noSync()})
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	if rep.CutBytes > 0 {
		b.log.Warn().Str("tail", rep.Tail).Int64("bytes", rep.CutBytes).Int("records", rep.Records).Str("keptAt", rep.KeptAt).
			Msg("notes: cut what followed the last whole record (a torn write: never acknowledged; or damage to the last tombstone or trace event)")
	}
	b.msgNotes.store = s
	b.pruneNotes()
	return nil
}

func (b *Broker) closeNotes() error {
	if b.msgNotes.store == nil {
		return nil
	}
	return b.msgNotes.store.Close()
}

// pruneNotes drops the notes of messages retention removed and of deleted
// partitions (the maintenance task and the trace listings call it).
func (b *Broker) pruneNotes() {
	if b.msgNotes.store == nil {
		return
	}
	if err := b.msgNotes.store.Prune(b.noteKeep); err != nil {
		b.log.Warn().Err(err).Msg("notes: rewrite failed; the old file stays in use")
	}
	b.msgNotes.dlq.prune(b.liveQueueIDs)
}

// noteKeep: a live partition keeps the notes of its retained offsets.
func (b *Broker) noteKeep(id [16]byte) (uint64, bool) {
	p := b.lookupPartitionByID(id)
	if p == nil || p.q.deleted.Load() {
		return 0, false
	}
	return p.log.FirstOffset(), true
}
