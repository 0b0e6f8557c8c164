package cursor

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/record"
	"github.com/combmq/comb/vfs"
)

// snapshotTmp is where a snapshot is written before its name (its
// replayFrom) is known; Open removes it when a crash left it behind.
const snapshotTmp = "snapshot-next.v3.snap.tmp"

// Snapshot writes a snapshot of all state durably and returns the LSN from
// which a recovery must replay checkpoints: every checkpoint with a lower LSN
// is covered by it, so the broker may truncate its log up to there (and
// replaying a covered one anyway is harmless: last writer wins). Safe
// concurrently with everything; one at a time (a second call waits).
//
// How replayFrom is found: the snapshot reads live state, shard by shard,
// while the writer goes on collecting checkpoints. A checkpoint whose
// collection ended before the read began holds nothing newer than what the
// read finds; one that ended after may (it can collect a shard after the
// read passed it). So replayFrom is the LSN of the first checkpoint whose
// collection ended after the read began. Live state may also hold changes
// no checkpoint holds yet, and even changes a caller will undo (a claim whose
// checkpoint failed), so the snapshot is installed only once a checkpoint
// holding every change made before the read ended is durable. When no
// checkpoint was collected since the read began, the writer appends one,
// empty if nothing changed: an idle engine's replayFrom still advances past
// everything the log holds, so it never pins the log.
//
// Durability: the frames go to a temporary file, which is fsync'd, renamed
// to snapshot-<replayFrom>.v3.snap, and the directory fsync'd; a crash at
// any point leaves the previous snapshot or this one. Older snapshots are
// then removed (best effort: a leftover is removed by the next Snapshot).
// The legacy records of an upgrade are carried until ForgetLegacyRecords.
//
// Errors: the failed checkpoint's *CheckpointError (nothing is installed:
// retry later), file system errors wrapped with the file, ErrNotStarted,
// ErrClosed.
func (e *Engine) Snapshot() (replayFrom uint64, err error) {
	e.snapMu.Lock()
	defer e.snapMu.Unlock()
	e.mu.Lock()
	switch {
	case e.closed:
		e.mu.Unlock()
		return 0, ErrClosed
	case !e.started:
		e.mu.Unlock()
		return 0, ErrNotStarted
	}
	// From here every checkpoint collected is a candidate for replayFrom.
	e.snapActive, e.snapFrom = true, 0
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.snapActive = false
		e.mu.Unlock()
	}()
	e.legacyMu.Lock()
	legacy := e.legacy
	e.legacyMu.Unlock()
	return e.writeSnapshot(legacy, e.snapshotCovered)
}

// SnapshotAt writes a snapshot as Snapshot does, with the replayFrom the
// caller gives instead of one found by appending a checkpoint: for an engine
// whose every change comes from checkpoints another node wrote (a follower
// of a replicated log, ApplyCommitted), which can append none. The caller
// has applied every checkpoint below replayFrom before calling.
//
// Errors: as Snapshot, without the checkpoint's.
func (e *Engine) SnapshotAt(replayFrom uint64) error {
	e.snapMu.Lock()
	defer e.snapMu.Unlock()
	e.mu.Lock()
	closed, started := e.closed, e.started
	e.mu.Unlock()
	switch {
	case closed:
		return ErrClosed
	case !started:
		return ErrNotStarted
	}
	e.legacyMu.Lock()
	legacy := e.legacy
	e.legacyMu.Unlock()
	_, err := e.writeSnapshot(legacy, func() (uint64, error) { return replayFrom, nil })
	return err
}

// snapshotCovered waits, after the snapshot read all state, until a
// checkpoint holding every change made so far is durable and returns the
// snapshot's replayFrom (see Snapshot). Errors: the failed generation's
// *CheckpointError, the sticky error, ErrClosed.
func (e *Engine) snapshotCovered() (uint64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	target := e.targetLocked()
	if e.snapFrom == 0 {
		// No checkpoint collected since the read began: ask for one, which
		// the writer appends even if it is empty.
		target = max(target, e.nextGen)
	}
	if err := e.waitLocked(target); err != nil {
		return 0, err
	}
	if e.snapFrom == 0 {
		// waitLocked returned for a generation collected after the read,
		// and every such generation is appended while snapFrom is 0.
		return 0, errors.New("cursor snapshot: no checkpoint LSN after the read (a bug)")
	}
	return e.snapFrom, nil
}

// writeSnapshot writes all state and the legacy records to a temporary
// file, asks covered for the replayFrom (after reading the state), writes
// the trailer, syncs the file, renames it to its name and syncs the
// directory, then removes the other snapshots. See Snapshot for durability.
func (e *Engine) writeSnapshot(legacy [][]byte, covered func() (uint64, error)) (uint64, error) {
	tmp := filepath.Join(e.dir, snapshotTmp)
	f, err := e.fs.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return 0, fmt.Errorf("cursor snapshot %s: %w", tmp, err)
	}
	w := &snapshotWriter{f: f, enc: newEncoder(&snapshotFormat), hook: e.snapshotReadHook}
	var from uint64
	err = w.state(e, legacy)
	if err == nil {
		from, err = covered()
	}
	if err == nil {
		err = w.trailer(from)
	}
	if err == nil && !e.opts.NoSync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	name := snapshotName(from)
	if err == nil {
		err = e.fs.Rename(tmp, filepath.Join(e.dir, name))
	}
	if err == nil && !e.opts.NoSync {
		err = e.fs.SyncDir(e.dir)
	}
	if err != nil {
		_ = e.fs.Remove(tmp)
		return 0, fmt.Errorf("cursor snapshot %s: %w", tmp, err)
	}
	e.removeSnapshotsBut(name)
	return from, nil
}

// removeSnapshotsBut removes every snapshot but keep, once keep is durable.
// Best effort: a snapshot left behind is older than keep, never loaded, and
// removed by the next Snapshot.
func (e *Engine) removeSnapshotsBut(keep string) {
	files, err := e.listFiles()
	if err != nil {
		return
	}
	for _, sf := range files.snapshots {
		if sf.name != keep {
			_ = e.fs.Remove(filepath.Join(e.dir, sf.name))
		}
	}
}

// snapshotWriter writes the frames of one snapshot file: a header, the
// states and subscriptions in pieces of about snapshotPieceBytes, one frame
// per legacy record, a trailer with the counts and replayFrom.
type snapshotWriter struct {
	f                       vfs.File
	enc                     *encoder
	frames, entries, legacy uint64
	hook                    func(shard int)
}

// flush writes every finished frame in the buffer and keeps the open one.
func (w *snapshotWriter) flush() error {
	enc := w.enc
	if enc.start == 0 {
		return nil
	}
	if _, err := w.f.Write(enc.buf[:enc.start]); err != nil {
		return err
	}
	enc.buf = enc.buf[:copy(enc.buf, enc.buf[enc.start:])]
	enc.start = 0
	return nil
}

// closeEntries finishes the open entries frame (drops it when empty) and,
// with reopen, opens the next one.
func (w *snapshotWriter) closeEntries(reopen bool) error {
	enc := w.enc
	if enc.entries == 0 {
		enc.buf = enc.buf[:enc.start]
	} else {
		w.frames++
		w.entries += uint64(enc.entries)
		if err := enc.finish(); err != nil {
			return err
		}
	}
	if reopen {
		enc.begin()
		enc.buf = append(enc.buf, snapEntries)
	}
	return nil
}

// state writes the header, every state (each shard encoded under its lock,
// written after), the subscriptions and the legacy records.
func (w *snapshotWriter) state(e *Engine, legacy [][]byte) error {
	enc := w.enc
	enc.begin()
	enc.buf = append(enc.buf, snapHeader)
	if err := enc.finish(); err != nil {
		return err
	}
	enc.begin()
	enc.buf = append(enc.buf, snapEntries)
	full := func() error { return w.closeEntries(true) }
	for i := range e.shards {
		if err := encodeShard(&e.shards[i], enc, full); err != nil {
			return err
		}
		if err := w.flush(); err != nil {
			return err
		}
		if w.hook != nil {
			w.hook(i)
		}
	}
	e.subMu.Lock()
	for k, s := range e.subs {
		enc.sub(k, s, false)
	}
	e.subMu.Unlock()
	if err := w.closeEntries(false); err != nil {
		return err
	}
	for _, rec := range legacy {
		enc.begin()
		enc.buf = append(enc.buf, snapLegacy)
		enc.buf = append(enc.buf, rec...)
		if err := enc.finish(); err != nil {
			return err
		}
		w.legacy++
		enc.start = len(enc.buf)
		if err := w.flush(); err != nil {
			return err
		}
	}
	enc.start = len(enc.buf)
	return w.flush()
}

// trailer writes the last frame: the counts and replayFrom.
func (w *snapshotWriter) trailer(replayFrom uint64) error {
	enc := w.enc
	enc.begin()
	enc.buf = append(enc.buf, snapTrailer)
	enc.buf = binary.LittleEndian.AppendUint64(enc.buf, w.frames)
	enc.buf = binary.LittleEndian.AppendUint64(enc.buf, w.entries)
	enc.buf = binary.LittleEndian.AppendUint64(enc.buf, w.legacy)
	enc.buf = binary.LittleEndian.AppendUint64(enc.buf, replayFrom)
	if err := enc.finish(); err != nil {
		return err
	}
	enc.start = len(enc.buf)
	return w.flush()
}

// encodeShard encodes every state of sh under its lock, calling full whenever
// the open frame passes snapshotPieceBytes.
func encodeShard(sh *shard, enc *encoder, full func() error) error {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for k, c := range sh.cold {
		enc.state(k, stateOf(c), false)
		if enc.bodyLen() >= snapshotPieceBytes {
			if err := full(); err != nil {
				return err
			}
		}
	}
	for k, s := range sh.hot {
		enc.state(k, s, false)
		if enc.bodyLen() >= snapshotPieceBytes {
			if err := full(); err != nil {
				return err
			}
		}
	}
	return nil
}

// loadSnapshot checks a format 3 snapshot file's bytes and applies its
// entries to v; it returns the snapshot's replayFrom and its legacy records
// (copies). The file must be exactly a header, entry and legacy frames and a
// trailer whose counts match: it was synced before its rename, so anything
// else is damage (a *CorruptionError).
func loadSnapshot(data []byte, path string, v visitor) (replayFrom uint64, legacy [][]byte, err error) {
	var frames uint64
	var header, trailer bool
	cv := &countingVisitor{visitor: v}
	scan, err := snapshotFormat.Scan(data, func(pos int64, body []byte) error {
		switch {
		case trailer:
			return errors.New("a frame after the trailer")
		case len(body) == 0:
			return errors.New("an empty frame")
		case body[0] == snapHeader && !header && pos == 0 && len(body) == 1:
			header = true
		case body[0] == snapEntries && header:
			frames++
			return decodeEntries(body[1:], formatVersion, cv)
		case body[0] == snapLegacy && header:
			legacy = append(legacy, bytes.Clone(body[1:]))
		case body[0] == snapTrailer && header && len(body) == trailerLen:
			wantFrames := binary.LittleEndian.Uint64(body[1:])
			wantEntries := binary.LittleEndian.Uint64(body[9:])
			wantLegacy := binary.LittleEndian.Uint64(body[17:])
			if wantFrames != frames || wantEntries != cv.n || wantLegacy != uint64(len(legacy)) {
				return fmt.Errorf("trailer counts %d frames, %d entries, %d legacy records; the file holds %d, %d, %d",
					wantFrames, wantEntries, wantLegacy, frames, cv.n, len(legacy))
			}
			replayFrom, trailer = binary.LittleEndian.Uint64(body[25:]), true
		default:
			return fmt.Errorf("unexpected snapshot frame (kind %d, %d bytes)", body[0], len(body))
		}
		return nil
	})
	if err == nil && (scan.Tail != record.TailClean || !trailer) {
		err = fmt.Errorf("snapshot ends early (%s after %d frames)", scan.Tail, scan.Frames)
	}
	if err != nil {
		return 0, nil, &CorruptionError{File: path, StartByte: scan.End, EndByte: int64(len(data)), Reason: err.Error()}
	}
	return replayFrom, legacy, nil
}

// countingVisitor counts the entries it passes on.
type countingVisitor struct {
	visitor
	n uint64
}

func (c *countingVisitor) state(k Key, s lease.State, deleted bool) {
	c.n++
	c.visitor.state(k, s, deleted)
}

func (c *countingVisitor) sub(k subKey, s Subscription, deleted bool) {
	c.n++
	c.visitor.sub(k, s, deleted)
}

func (c *countingVisitor) record(id uint64, r []byte) {
	c.n++
	c.visitor.record(id, r)
}

func (c *countingVisitor) dropRecord(id uint64) {
	c.n++
	c.visitor.dropRecord(id)
}
