package cursor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/combmq/comb/record"
)

// Format version 2, read only: a directory written before format 3 is read
// with this decoder once, at Open, and upgraded (upgrade.go).
//
//	<dir>/journal-<seq>.v2.log    checkpoints in order, preallocated (zeros after the last one)
//	<dir>/snapshot-<seq>.v2.snap  all state as of checkpoint <seq>
//
// Every checkpoint and every piece of a snapshot is a frame of package
// record:
//
//	checkpoint: magic "CCP2", body = seq u64 LE | entries
//	snapshot:   magic "CSN2", body = kind byte | ...
//	              1 header:  upTo u64 LE                 (the first frame)
//	              2 entries: entries
//	              3 trailer: entry frames u64, entries u64 (the last frame)
//
// The entries are format 3's plus the redo records: tag 3 is a record (id
// uvarint > 0, length, bytes), tag 4 forgets the record of an id.
var (
	v2CheckpointFormat = record.NewFormat("CCP2", maxFrameBody)
	v2SnapshotFormat   = record.NewFormat("CSN2", maxFrameBody)
)

// v2SeqLen is the checkpoint sequence number at the start of a v2 checkpoint body.
const v2SeqLen = 8

// v2CheckpointBody splits a verified v2 checkpoint frame body into its
// sequence number and entries.
func v2CheckpointBody(body []byte) (seq uint64, entries []byte, err error) {
	if len(body) < v2SeqLen {
		return 0, nil, fmt.Errorf("checkpoint body of %d bytes has no sequence number", len(body))
	}
	return binary.LittleEndian.Uint64(body), body[v2SeqLen:], nil
}

// loadV2Snapshot checks a v2 snapshot file's bytes and applies its entries
// to v; it returns the checkpoint the snapshot covers. The file must be
// exactly a header, entry frames and a trailer whose counts match (it was
// synced before its rename): anything else is a *CorruptionError.
func loadV2Snapshot(data []byte, path string, v visitor) (uint64, error) {
	var upTo, frames uint64
	var header, trailer bool
	cv := &countingVisitor{visitor: v}
	scan, err := v2SnapshotFormat.Scan(data, func(pos int64, body []byte) error {
		switch {
		case trailer:
			return errors.New("a frame after the trailer")
		case body[0] == snapHeader && !header && pos == 0 && len(body) == 1+8:
			upTo, header = binary.LittleEndian.Uint64(body[1:]), true
		case body[0] == snapEntries && header:
			frames++
			return decodeEntries(body[1:], 2, cv)
		case body[0] == snapTrailer && header && len(body) == 1+16:
			wantFrames, wantEntries := binary.LittleEndian.Uint64(body[1:]), binary.LittleEndian.Uint64(body[9:])
			if wantFrames != frames || wantEntries != cv.n {
				return fmt.Errorf("trailer counts %d frames, %d entries; the file holds %d, %d", wantFrames, wantEntries, frames, cv.n)
			}
			trailer = true
		default:
			return fmt.Errorf("unexpected snapshot frame (kind %d, %d bytes)", body[0], len(body))
		}
		return nil
	})
	if err == nil && (scan.Tail != record.TailClean || !trailer) {
		err = fmt.Errorf("snapshot ends early (%s after %d frames)", scan.Tail, scan.Frames)
	}
	if err != nil {
		return 0, &CorruptionError{File: path, StartByte: scan.End, EndByte: int64(len(data)), Reason: "format 2 snapshot: " + err.Error()}
	}
	return upTo, nil
}

// readV2 loads a format 2 directory into the engine's maps and rv's records,
// read only, with the recovery rules of format 2: the newest snapshot, then
// every later checkpoint, whose sequence numbers must follow one another.
// The newest journal holding anything may end in a torn or damaged
// checkpoint with nothing verified after it: never acknowledged, it is
// skipped. Damage with a verified frame after it, anything but zeros after
// the end of an older journal, a sequence gap or a body that does not decode
// is a *CorruptionError. It returns the last checkpoint's sequence number.
func (e *Engine) readV2(files dirFiles, rv *legacyReader) (uint64, error) {
	var last, snapUpTo uint64
	haveBase, haveSnap := false, false
	if n := len(files.v2snapshots); n > 0 {
		sf := files.v2snapshots[n-1]
		path := filepath.Join(e.dir, sf.name)
		b, err := e.fs.ReadFile(path)
		if err != nil {
			return 0, fmt.Errorf("cursor snapshot: %w", err)
		}
		upTo, err := loadV2Snapshot(b, path, rv)
		if err != nil {
			return 0, err
		}
		if upTo != sf.seq {
			return 0, &CorruptionError{File: path, EndByte: int64(len(b)), Reason: fmt.Sprintf("the format 2 snapshot covers checkpoint %d, its name says %d", upTo, sf.seq)}
		}
		last, snapUpTo, haveBase, haveSnap = upTo, upTo, true, true
	}
	type scanned struct {
		path string
		scan record.Scan
	}
	var js []scanned
	newest := -1 // the newest journal holding anything: the one the format 2 writer continued
	for _, jf := range files.v2journals {
		path := filepath.Join(e.dir, jf.name)
		data, err := e.fs.ReadFile(path)
		if err != nil {
			return 0, fmt.Errorf("cursor format 2 checkpoints: %w", err)
		}
		first := true
		scan, err := v2CheckpointFormat.Scan(data, func(_ int64, body []byte) error {
			seq, entries, err := v2CheckpointBody(body)
			if err != nil {
				return err
			}
			if first && seq != jf.seq {
				return fmt.Errorf("first checkpoint %d in a journal named for %d", seq, jf.seq)
			}
			first = false
			if haveSnap && seq <= snapUpTo {
				return nil // in the snapshot
			}
			if haveBase && seq != last+1 {
				return fmt.Errorf("checkpoint %d follows %d", seq, last)
			}
			if err := decodeEntries(entries, 2, rv); err != nil {
				return err
			}
			last, haveBase = seq, true
			return nil
		})
		if err != nil {
			return 0, &CorruptionError{File: path, StartByte: scan.End, EndByte: scan.DataEnd, AfterSeq: last, Reason: "format 2 journal: " + err.Error()}
		}
		if scan.Tail == record.TailCorrupt {
			return 0, &CorruptionError{File: path, StartByte: scan.End, EndByte: scan.Resync, AfterSeq: last,
				Reason: "format 2 journal: damaged bytes with a valid checkpoint after them"}
		}
		if scan.Frames > 0 || scan.DataEnd > 0 {
			newest = len(js)
		}
		js = append(js, scanned{path, scan})
	}
	for i, s := range js {
		if i != newest && s.scan.Tail != record.TailClean && s.scan.Tail != record.TailZeros {
			return 0, &CorruptionError{File: s.path, StartByte: s.scan.End, EndByte: s.scan.DataEnd, AfterSeq: last,
				Reason: "format 2 journal: non-zero bytes after the end of a journal that is not the newest"}
		}
	}
	return last, nil
}
