package broker

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/combmq/comb/layout"
	"github.com/combmq/comb/notes"
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
// partitions (the maintenance task and the trace listings call it).
func (b *Broker) pruneNotes() {
	if b.msgNotes.store == nil {
		return
	}
	if err := b.msgNotes.store.Prune(b.noteKeep); err != nil {
		b.log.Warn().Err(err).Msg("notes: rewrite failed; the old file stays in use")
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
