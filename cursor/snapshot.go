package cursor

import (
	"fmt"
	"os"
	"path/filepath"
)

// writeSnapshot writes all state as of (at least) checkpoint upTo, with the
// redo records as of upTo, to snapshot-<upTo>.snap.
//
// Durability: the frame goes to a .tmp file, which is fsync'd, renamed into
// place, and the directory fsync'd; a crash at any point leaves either no
// snapshot (the journals it would replace are still there) or a complete one.
// State changed after upTo may be included too: those keys are also in a later
// checkpoint, and replay is last-writer-wins. Once the snapshot is durable the
// journals and snapshots it replaces are deleted.
func (e *Engine) writeSnapshot(upTo uint64, recs [][]byte) error {
	enc := newEncoder()
	enc.begin(kindSnapshot, upTo)
	for i := range e.shards {
		sh := &e.shards[i]
		sh.mu.Lock()
		for k, c := range sh.cold {
			enc.state(k, stateOf(c), false)
		}
		for k, s := range sh.hot {
			enc.state(k, s, false)
		}
		sh.mu.Unlock()
	}
	e.subMu.Lock()
	for k, s := range e.subs {
		enc.sub(k, s, false)
	}
	e.subMu.Unlock()
	for _, r := range recs {
		enc.record(r)
	}
	frame := enc.finish()

	final := filepath.Join(e.dir, snapshotName(upTo))
	tmp := final + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("cursor snapshot: %w", err)
	}
	_, err = f.Write(frame)
	if err == nil && !e.opts.NoSync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	e.fileMu.Lock()
	defer e.fileMu.Unlock()
	if err == nil {
		err = os.Rename(tmp, final)
	}
	if err == nil && !e.opts.NoSync {
		err = syncDir(e.dir)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("cursor snapshot %s: %w", final, err)
	}
	return removeBefore(e.dir, upTo)
}

// removeBefore deletes the journals whose checkpoints are all <= upTo and the
// snapshots older than upTo, once snapshot-<upTo> is durable.
func removeBefore(dir string, upTo uint64) error {
	files, err := listFiles(dir)
	if err != nil {
		return err
	}
	for _, jf := range files.journals {
		if jf.seq <= upTo {
			if err := os.Remove(filepath.Join(dir, jf.name)); err != nil {
				return fmt.Errorf("cursor journal compaction: %w", err)
			}
		}
	}
	for _, sf := range files.snapshots {
		if sf.seq < upTo {
			if err := os.Remove(filepath.Join(dir, sf.name)); err != nil {
				return fmt.Errorf("cursor snapshot compaction: %w", err)
			}
		}
	}
	return nil
}
