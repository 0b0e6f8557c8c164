package cursor

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/combmq/comb/lease"
)

type seqFile struct {
	name string
	seq  uint64
}

type dirFiles struct {
	journals  []seqFile // by first checkpoint, ascending
	snapshots []seqFile // by covered checkpoint, ascending
}

func listFiles(dir string) (dirFiles, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return dirFiles{}, fmt.Errorf("cursor dir %s: %w", dir, err)
	}
	var out dirFiles
	for _, ent := range ents {
		name := ent.Name()
		var seq uint64
		switch {
		case strings.HasSuffix(name, ".tmp"):
			// A snapshot that never got renamed: never part of the state.
			_ = os.Remove(filepath.Join(dir, name))
		case scanName(name, "journal-%016x.log", &seq):
			out.journals = append(out.journals, seqFile{name, seq})
		case scanName(name, "snapshot-%016x.snap", &seq):
			out.snapshots = append(out.snapshots, seqFile{name, seq})
		}
	}
	byseq := func(a, b seqFile) int {
		switch {
		case a.seq < b.seq:
			return -1
		case a.seq > b.seq:
			return 1
		}
		return 0
	}
	slices.SortFunc(out.journals, byseq)
	slices.SortFunc(out.snapshots, byseq)
	return out, nil
}

func scanName(name, format string, seq *uint64) bool {
	n, err := fmt.Sscanf(name, format, seq)
	return err == nil && n == 1 && name == fmt.Sprintf(format, *seq)
}

// replayer applies decoded entries to the Engine's maps during Open.
type replayer struct{ e *Engine }

func (r replayer) state(k Key, s lease.State, deleted bool) {
	sh := r.e.shardFor(k)
	if deleted {
		sh.deleteLocked(k)
	} else {
		sh.setLocked(k, s)
	}
}

func (r replayer) sub(k subKey, s Subscription, deleted bool) {
	if deleted {
		delete(r.e.subs, k)
	} else {
		r.e.subs[k] = s
	}
}

func (r replayer) record(rec []byte) { r.e.recs = append(r.e.recs, bytes.Clone(rec)) }
func (r replayer) dropRecords()      { r.e.recs = nil }

// recover loads the newest snapshot and replays later checkpoints (see the
// package comment), then opens the last journal for appending. It runs before
// the writer starts, so it needs no locks.
func (e *Engine) recover() (*RecoveryReport, error) {
	rep := &RecoveryReport{}
	files, err := listFiles(e.dir)
	if err != nil {
		return nil, err
	}
	rv := replayer{e}
	var end int64   // logical end of the last journal scanned
	var last uint64 // last checkpoint applied (or covered by the snapshot)
	haveBase := false
	if n := len(files.snapshots); n > 0 {
		sf := files.snapshots[n-1]
		path := filepath.Join(e.dir, sf.name)
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("cursor snapshot: %w", err)
		}
		if err := loadSnapshot(b, path, rv); err != nil {
			return nil, err
		}
		last, haveBase = sf.seq, true
		rep.SnapshotLoaded = sf.name
	}
	for i, jf := range files.journals {
		if i+1 < len(files.journals) && files.journals[i+1].seq <= last+1 && haveBase {
			continue // every checkpoint of this journal is covered by the snapshot
		}
		isLast := i == len(files.journals)-1
		path := filepath.Join(e.dir, jf.name)
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("cursor journal: %w", err)
		}
		pos := 0
		for pos < len(b) {
			if zeroHeader(b[pos:]) {
				// No checkpoint header is all zeros (it starts with the magic),
				// so this is the end of the journal: preallocated space, or a
				// checkpoint whose first bytes never reached the disk.
				tail := nonZeroLen(b[pos:])
				if tail == 0 {
					break
				}
				if !isLast || validFrameAfter(b[pos:]) {
					return nil, &CorruptionError{File: path, StartByte: int64(pos), EndByte: int64(pos + tail), AfterSeq: last, Reason: "non-zero bytes after the end of the journal"}
				}
				if err := truncateTorn(path, pos, len(b), rep, jf.name); err != nil {
					return nil, err
				}
				break
			}
			h, body, n, ferr := decodeFrame(b[pos:], kindCheckpoint)
			if ferr == nil && haveBase && h.seq > last && h.seq != last+1 {
				ferr = fmt.Errorf("checkpoint %d follows %d", h.seq, last)
			}
			if ferr == nil && (h.seq > last || !haveBase) {
				// The checksum matched, so a malformed body is not a torn write:
				// it is damage (or a bug) that must not be silently dropped.
				if berr := decodeBody(body, rv); berr != nil {
					return nil, &CorruptionError{File: path, StartByte: int64(pos), EndByte: int64(pos + n), AfterSeq: last, Reason: berr.Error()}
				}
			}
			if ferr != nil {
				if !isLast || validFrameAfter(b[pos+1:]) {
					return nil, &CorruptionError{File: path, StartByte: int64(pos), EndByte: int64(len(b)), AfterSeq: last, Reason: ferr.Error()}
				}
				// A torn or corrupt final checkpoint: never acknowledged (Wait
				// returns only after the sync), so it is dropped.
				if err := truncateTorn(path, pos, len(b), rep, jf.name); err != nil {
					return nil, err
				}
				break
			}
			if h.seq > last || !haveBase {
				last, haveBase = h.seq, true
				rep.Checkpoints++
			}
			pos += n
		}
		end = int64(pos)
	}
	rep.LastSeq = last
	// Recovery applied entries through setLocked, which marks keys dirty; they
	// are already on disk.
	for i := range e.shards {
		e.shards[i].dirty = make(map[Key]struct{})
	}
	j := &journal{dir: e.dir, noSync: e.opts.NoSync, prealloc: e.opts.PreallocBytes, enc: newEncoder(), nextSeq: last + 1, logRecs: slices.Clone(e.recs)}
	if n := len(files.journals); n > 0 && files.journals[n-1].seq <= last+1 {
		err = j.openFile(files.journals[n-1].name, false, end)
	} else {
		err = j.openFile(journalName(last+1), true, 0)
	}
	if err != nil {
		return nil, err
	}
	e.j = j
	return rep, nil
}

// loadSnapshot checks and applies one snapshot file's bytes.
func loadSnapshot(b []byte, path string, v visitor) error {
	_, body, n, err := decodeFrame(b, kindSnapshot)
	if err == nil && n != len(b) {
		err = fmt.Errorf("%d bytes after the frame", len(b)-n)
	}
	if err == nil {
		err = decodeBody(body, v)
	}
	if err != nil {
		if errors.Is(err, errShort) {
			err = fmt.Errorf("snapshot ends early: %w", err)
		}
		return &CorruptionError{File: path, StartByte: 0, EndByte: int64(len(b)), Reason: err.Error()}
	}
	return nil
}

// truncateTorn cuts the last journal (size bytes) at pos, dropping a torn or
// corrupt final checkpoint and the preallocated zeros around it (the writer
// preallocates again); TornBytes counts every byte dropped. The truncation is not synced on its own: the next
// extension's fdatasync commits the new size, and a crash before that finds
// the same torn bytes again.
func truncateTorn(path string, pos, size int, rep *RecoveryReport, name string) error {
	if err := os.Truncate(path, int64(pos)); err != nil {
		return fmt.Errorf("cursor journal %s: truncate torn tail: %w", path, err)
	}
	rep.TornBytes, rep.TornFile = int64(size-pos), name
	return nil
}

// zeroHeader reports whether the next frame header (or what is left of the
// file, if shorter) is all zero bytes: the end of the journal.
func zeroHeader(b []byte) bool {
	return nonZeroLen(b[:min(len(b), frameHeaderLen)]) == 0
}

// nonZeroLen is the length of b up to and including its last non-zero byte
// (0 when b is all zeros).
func nonZeroLen(b []byte) int {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b[len(b)-8:]) != 0 {
			break
		}
		b = b[:len(b)-8]
	}
	for len(b) > 0 && b[len(b)-1] == 0 {
		b = b[:len(b)-1]
	}
	return len(b)
}

// validFrameAfter reports whether a valid checkpoint frame starts anywhere in
// b: damage followed by good data is not a torn tail.
func validFrameAfter(b []byte) bool {
	magic := []byte(magicCheckpoint)
	for {
		i := bytes.Index(b, magic)
		if i < 0 {
			return false
		}
		if _, _, _, err := decodeFrame(b[i:], kindCheckpoint); err == nil {
			return true
		}
		b = b[i+1:]
	}
}
