package fsck

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/combmq/comb/cursor"
	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/lsn"
	"github.com/combmq/comb/vfs"
)

// checkpointSource passes the commit log's cursor checkpoints with an LSN >=
// from to fn, in LSN order (checker.checkpoints; nil = none).
type checkpointSource func(from uint64, fn func(lsn uint64, body []byte) error) error

// readCursors recovers the cursor state without touching dir: the files are
// copied into an in-memory file system (vfs.Mem) and recovered there by
// cursor.Open itself, then the commit log's checkpoints from the snapshot's
// replayFrom on are applied (cursor.Engine.ApplyCheckpoint), so fsck judges
// them with exactly the server's recovery code (a format 1 or 2 directory is
// upgraded in the copy, as the next server start would do on disk).
func readCursors(dir string, checkpoints checkpointSource) (*cursorView, error) {
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
	eng, rep, err := cursor.Open(memDir, cursor.Options{FS: mem, NoSync: true})
	if err != nil {
		var ce *cursor.CorruptionError
		if errors.As(err, &ce) {
			v.Corrupt = &damage{File: filepath.Base(ce.File), StartByte: ce.StartByte, EndByte: ce.EndByte, Reason: ce.Reason}
			return v, nil
		}
		return nil, err
	}
	v.ReplayFrom = rep.ReplayFrom
	if checkpoints != nil {
		err := checkpoints(rep.ReplayFrom, func(lsn uint64, body []byte) error {
			if err := eng.ApplyCheckpoint(body); err != nil {
				return fmt.Errorf("checkpoint LSN %d: %w", lsn, err)
			}
			v.Replayed++
			return nil
		})
		if errors.Is(err, cursor.ErrCorrupt) {
			v.CheckpointErr = err
		} else if err != nil {
			_ = eng.Close()
			return nil, err
		}
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

func (l *snapshotOnlyLog) AppendCheckpoint([]byte) (lsn.Ticket, error) {
	return lsn.Durable(lsn.LSN(l.lsn)), nil
}

func (*snapshotOnlyLog) Retryable(error) bool { return false }

// reopenCursors runs the cursor engine's own recovery on dir (which upgrades
// a format 1 or 2 directory), applies the commit log's checkpoints from its
// replayFrom on (as the server would), applies clamps, and writes them
// durably as a new snapshot whose replayFrom is past the commit log's last
// entry (nextLSN): the snapshot holds every checkpoint the log does, so the
// server does not replay them over the clamps. nextLSN 0 keeps the old
// replayFrom.
func reopenCursors(dir string, checkpoints checkpointSource, nextLSN uint64, clamps []cursorEntry) error {
	log := &snapshotOnlyLog{}
	eng, rep, err := cursor.Open(dir, cursor.Options{Log: log})
	if err != nil {
		return err
	}
	log.lsn = max(rep.ReplayFrom, nextLSN)
	if checkpoints != nil {
		if err := checkpoints(rep.ReplayFrom, func(lsn uint64, body []byte) error { return eng.ApplyCheckpoint(body) }); err != nil {
			_ = eng.Close()
			return fmt.Errorf("cursor checkpoints of the commit log: %w", err)
		}
	}
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
