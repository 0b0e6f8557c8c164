package fsck

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/combmq/comb/cursor"
	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/vfs"
)

// readCursors recovers the cursor state without touching dir: the files are
// copied into an in-memory file system (vfs.Mem) and recovered there by
// cursor.Open itself, so fsck judges them with exactly the server's recovery
// code (a format 1 or 2 directory is upgraded in the copy, as the next server
// start would do on disk).
//
// Snapshot only: the checkpoints the commit log holds after the snapshot's
// replayFrom are not read yet, so the cursors are as of the last snapshot.
func readCursors(dir string) (*cursorView, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return &cursorView{}, nil
	}
	if err != nil {
		return nil, err
	}
	const memDir = "/cursor"
	mem := vfs.NewMem()
	if err := mem.MkdirAll(memDir); err != nil {
		return nil, err
	}
	for _, e := range ents {
		name := e.Name()
		if !e.Type().IsRegular() || strings.HasSuffix(name, ".tmp") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		mem.SetBytes(filepath.Join(memDir, name), b)
	}
	v := &cursorView{Present: true}
	eng, _, err := cursor.Open(memDir, cursor.Options{FS: mem, NoSync: true})
	if err != nil {
		var ce *cursor.CorruptionError
		if errors.As(err, &ce) {
			v.Corrupt = &damage{File: filepath.Base(ce.File), StartByte: ce.StartByte, EndByte: ce.EndByte, Reason: ce.Reason}
			return v, nil
		}
		return nil, err
	}
	eng.Range(func(k cursor.Key, s lease.State) bool {
		v.Entries = append(v.Entries, cursorEntry{Partition: k.Partition, Group: k.Group, State: s})
		return true
	})
	if err := eng.Close(); err != nil {
		return nil, err
	}
	return v, nil
}

// snapshotOnlyLog stands in for the commit log while fsck rewrites the
// cursor snapshot: it keeps no checkpoint (the snapshot holds the whole
// state) and numbers each with the replayFrom of the snapshot it replaces
// (lsn, set once Open reported it), so the new snapshot asks recovery to
// replay exactly what the old one did.
type snapshotOnlyLog struct{ lsn uint64 }

func (l *snapshotOnlyLog) AppendCheckpoint([]byte) (uint64, func() error, error) {
	return l.lsn, func() error { return nil }, nil
}

func (*snapshotOnlyLog) Retryable(error) bool { return false }

// reopenCursors runs the cursor engine's own recovery on dir (which upgrades
// a format 1 or 2 directory), applies clamps, and writes them durably as a
// new snapshot with the old one's replayFrom. A checkpoint in the commit log
// after it may still move a clamped cursor past the high-water mark again;
// the server's recovery clamps those.
func reopenCursors(dir string, clamps []cursorEntry) error {
	log := &snapshotOnlyLog{}
	eng, rep, err := cursor.Open(dir, cursor.Options{Log: log})
	if err != nil {
		return err
	}
	log.lsn = rep.ReplayFrom
	eng.Start()
	for _, c := range clamps {
		eng.Set(cursor.Key{Partition: c.Partition, Group: c.Group}, c.State)
	}
	if _, err := eng.Snapshot(); err != nil {
		_ = eng.Close()
		return fmt.Errorf("cursor snapshot: %w", err)
	}
	return eng.Close()
}
