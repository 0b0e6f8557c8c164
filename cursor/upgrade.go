package cursor

import (
	"bytes"
	"fmt"
	"maps"
	"path/filepath"
)

// upgrade brings a directory holding format 1 files to format 2, in place and
// crash-safely:
//
//  1. the format 1 snapshot and journals are read with the format 1 decoder
//     (read only: a torn last checkpoint is skipped, not cut);
//  2. all of it is written as the format 2 snapshot of the last checkpoint
//     (temporary file, fsync, rename, fsync of the directory);
//  3. only then are the format 1 files removed, and the directory synced.
//
// A crash before 2 ends leaves the format 1 files as they were (the next Open
// upgrades again); a crash after it leaves a format 2 snapshot beside format 1
// files, which the next Open removes as the leftovers of a finished upgrade.
// Damage in the format 1 files is a *CorruptionError, and nothing is changed.
func (e *Engine) upgrade(files dirFiles, rep *RecoveryReport) error {
	if len(files.snapshots) == 0 {
		if len(files.journals) > 0 {
			return &CorruptionError{File: e.dir, Reason: "format 1 files beside format 2 journals, but no format 2 snapshot: not a directory comb wrote"}
		}
		last, err := e.readV1(files)
		if err != nil {
			return err
		}
		if err := e.writeSnapshot(last, maps.Clone(e.recs), false); err != nil {
			return fmt.Errorf("cursor engine %s: upgrade to format %d: %w", e.dir, formatVersion, err)
		}
		rep.Upgraded = true
	}
	for _, l := range [][]seqFile{files.v1journals, files.v1snapshots} {
		for _, f := range l {
			if err := e.fs.Remove(filepath.Join(e.dir, f.name)); err != nil {
				return fmt.Errorf("cursor engine %s: remove format 1 file after the upgrade: %w", e.dir, err)
			}
		}
	}
	if !e.opts.NoSync {
		if err := e.fs.SyncDir(e.dir); err != nil {
			return fmt.Errorf("cursor engine %s: upgrade: %w", e.dir, err)
		}
	}
	return nil
}

// readV1 loads a format 1 directory into the engine's maps, with the rules of
// format 1: the newest snapshot, then every later checkpoint; the first
// all-zero header ends a journal; a torn or corrupt last checkpoint of the
// newest journal (no valid checkpoint after it) was never acknowledged and is
// skipped; any other damage is a *CorruptionError. It returns the last
// checkpoint's sequence number.
func (e *Engine) readV1(files dirFiles) (uint64, error) {
	rv := replayer{e}
	var last uint64
	haveBase := false
	if n := len(files.v1snapshots); n > 0 {
		sf := files.v1snapshots[n-1]
		path := filepath.Join(e.dir, sf.name)
		b, err := e.fs.ReadFile(path)
		if err != nil {
			return 0, fmt.Errorf("cursor snapshot: %w", err)
		}
		_, body, n, err := decodeV1Frame(b, v1KindSnapshot)
		if err == nil && n != len(b) {
			err = fmt.Errorf("%d bytes after the frame", len(b)-n)
		}
		if err == nil {
			err = decodeEntries(body, 1, rv)
		}
		if err != nil {
			return 0, &CorruptionError{File: path, EndByte: int64(len(b)), Reason: "format 1 snapshot: " + err.Error()}
		}
		last, haveBase = sf.seq, true
	}
	for i, jf := range files.v1journals {
		isLast := i == len(files.v1journals)-1
		path := filepath.Join(e.dir, jf.name)
		b, err := e.fs.ReadFile(path)
		if err != nil {
			return 0, fmt.Errorf("cursor journal: %w", err)
		}
		for pos := 0; pos < len(b); {
			if nonZeroLen(b[pos:min(len(b), pos+v1HeaderLen)]) == 0 {
				// The end of the journal: preallocated zeros, or a checkpoint
				// whose first bytes never reached the disk.
				if tail := nonZeroLen(b[pos:]); tail > 0 && (!isLast || validV1FrameAfter(b[pos:])) {
					return 0, &CorruptionError{File: path, StartByte: int64(pos), EndByte: int64(pos + tail), AfterSeq: last, Reason: "non-zero bytes after the end of the journal"}
				}
				break
			}
			seq, body, n, ferr := decodeV1Frame(b[pos:], v1KindCheckpoint)
			if ferr == nil && haveBase && seq > last && seq != last+1 {
				ferr = fmt.Errorf("checkpoint %d follows %d", seq, last)
			}
			if ferr == nil && (seq > last || !haveBase) {
				if berr := decodeEntries(body, 1, rv); berr != nil {
					return 0, &CorruptionError{File: path, StartByte: int64(pos), EndByte: int64(pos + n), AfterSeq: last, Reason: berr.Error()}
				}
				last, haveBase = seq, true
			}
			if ferr != nil {
				if !isLast || validV1FrameAfter(b[pos+1:]) {
					return 0, &CorruptionError{File: path, StartByte: int64(pos), EndByte: int64(len(b)), AfterSeq: last, Reason: ferr.Error()}
				}
				break // a torn or corrupt final checkpoint: never acknowledged
			}
			pos += n
		}
	}
	return last, nil
}

// nonZeroLen is the length of b up to and including its last non-zero byte
// (0 when b is all zeros).
func nonZeroLen(b []byte) int {
	for len(b) > 0 && b[len(b)-1] == 0 {
		b = b[:len(b)-1]
	}
	return len(b)
}

// validV1FrameAfter reports whether a valid format 1 checkpoint starts anywhere
// in b: damage followed by good data is not a torn tail.
func validV1FrameAfter(b []byte) bool {
	magic := []byte("CCKP")
	for {
		i := bytes.Index(b, magic)
		if i < 0 {
			return false
		}
		if _, _, _, err := decodeV1Frame(b[i:], v1KindCheckpoint); err == nil {
			return true
		}
		b = b[i+1:]
	}
}
