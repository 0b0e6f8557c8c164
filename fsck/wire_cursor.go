package fsck

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/combmq/comb/cursor"
	"github.com/combmq/comb/lease"
)

// readCursors recovers the cursor journal and snapshots without touching dir: the
// journal and snapshot files are copied to a temporary directory and recovered there
// by cursor.Open itself, so fsck judges them with exactly the server's recovery code.
// (cursor has no read-only entry point; see the fsck requests in /work/contracts.md.)
func readCursors(dir string) (*cursorView, error) {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return &cursorView{}, nil
	}
	tmp, err := os.MkdirTemp("", "comb-fsck-cursor-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || strings.HasSuffix(name, ".tmp") {
			continue
		}
		if err := copyFile(filepath.Join(dir, name), filepath.Join(tmp, name)); err != nil {
			return nil, err
		}
	}
	v := &cursorView{Present: true}
	eng, rep, err := cursor.Open(tmp, cursor.Options{NoSync: true})
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

// reopenCursors runs the cursor engine's own recovery on dir (which truncates a torn
// final checkpoint), applies clamps, and closes it; Close writes and syncs a final
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

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
