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

// readCursors recovers the cursor journal and snapshots without touching dir: the
// journal and snapshot files are copied into an in-memory file system (vfs.Mem) and
// recovered there by cursor.Open itself, so fsck judges them with exactly the
// server's recovery code (a format 1 directory is upgraded in the copy, as the next
// server start would do on disk).
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
	eng, rep, err := cursor.Open(memDir, cursor.Options{FS: mem, NoSync: true})
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
	if rep != nil {
		v.TornBytes, v.TornFile = rep.TornBytes, rep.TornFile
	}
	return v, nil
}

// reopenCursors runs the cursor engine's own recovery on dir (which zeroes a torn
// final checkpoint, keeping a copy in dir/quarantine/, and upgrades a format 1
// directory), applies clamps, and closes it; Close writes and syncs a final
// checkpoint holding the clamps.
func reopenCursors(dir string, clamps []cursorEntry) error {
	eng, _, err := cursor.Open(dir, cursor.Options{})
	if err != nil {
		return err
	}
	for _, c := range clamps {
		eng.Set(cursor.Key{Partition: c.Partition, Group: c.Group}, c.State)
	}
	if err := eng.Wait(); err != nil {
		_ = eng.Close()
		return fmt.Errorf("cursor journal: %w", err)
	}
	return eng.Close()
}
