package cursor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/record"
	"github.com/combmq/comb/vfs"
)

// rotate starts a new journal after the checkpoint just written and takes a
// snapshot of everything up to it in the background. Older files are deleted
// only once the snapshot is durable, so a crash at any point recovers.
//
// A rotation that fails (a full disk: the new file or its directory entry
// cannot be made) changes nothing: checkpoints go on into the current
// journal, and the rotation is tried again retryDelay later.
func (e *Engine) rotate() {
	j := e.j
	if time.Now().Before(j.rotateRetryAt) {
		return
	}
	j.snapMu.Lock()
	busy := j.snapBusy
	j.snapMu.Unlock()
	if busy {
		return
	}
	upTo := j.nextSeq - 1
	name := journalName(j.nextSeq)
	f, err := j.create(name)
	if err != nil {
		j.rotateRetryAt = time.Now().Add(retryDelay)
		return
	}
	old := j.f
	j.f, j.name, j.size, j.alloc, j.dirtyEnd = f, name, 0, 0, 0
	// Every checkpoint in the old file is synced; closing it changes nothing
	// on disk, whatever Close says.
	_ = old.Close()
	e.startSnapshot(upTo)
}

// retrySnapshot starts the snapshot of the last rotation again if it failed
// at least retryDelay ago.
func (e *Engine) retrySnapshot() {
	j := e.j
	j.snapMu.Lock()
	upTo := j.snapUpTo
	due := upTo != 0 && !j.snapBusy && !time.Now().Before(j.snapRetryAt)
	j.snapMu.Unlock()
	if due {
		e.startSnapshot(upTo)
	}
}

// startSnapshot writes the snapshot of rotation boundary upTo in the
// background, with the redo records as of the last written checkpoint
// (replaying the journal after upTo adds and drops the later ones again).
func (e *Engine) startSnapshot(upTo uint64) {
	j := e.j
	j.snapMu.Lock()
	if j.snapBusy {
		j.snapMu.Unlock()
		return
	}
	j.snapBusy, j.snapUpTo = true, upTo
	j.snapMu.Unlock()
	recs := maps.Clone(j.logRecs)
	j.snapWG.Add(1)
	go func() {
		defer j.snapWG.Done()
		err := e.writeSnapshot(upTo, recs, true)
		j.snapMu.Lock()
		j.snapBusy, j.snapErr = false, err
		switch {
		case err == nil && j.snapUpTo == upTo:
			j.snapUpTo = 0
		case err != nil:
			j.snapRetryAt = time.Now().Add(retryDelay)
		}
		j.snapMu.Unlock()
	}()
}

// writeSnapshot writes all state as of (at least) checkpoint upTo, with the
// redo records recs, to snapshot-<upTo>.v2.snap and then deletes the files it
// replaces.
//
// Durability: the frames go to a .tmp file, which is fsync'd, renamed into
// place, and the directory fsync'd; a crash at any point leaves either no
// snapshot (the journals it would replace are still there) or a complete one.
// States and subscriptions are read live, so the snapshot may hold changes
// made after upTo; such a key is also in a later checkpoint and replay is
// last-writer-wins. But a change read live may not be durable yet, and may
// even be undone (a claim whose checkpoint failed), so the snapshot is
// renamed into place only once a checkpoint holding every change made before
// it was read is durable (with live, it waits for that): from then on every
// key whose live state the snapshot holds and the journal does not is
// written again after upTo.
func (e *Engine) writeSnapshot(upTo uint64, recs map[uint64][]byte, live bool) error {
	final := filepath.Join(e.dir, snapshotName(upTo))
	tmp := final + ".tmp"
	f, err := e.fs.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return fmt.Errorf("cursor snapshot %s: %w", final, err)
	}
	target, err := e.encodeSnapshot(f, upTo, recs)
	if err == nil && !e.opts.NoSync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && live {
		err = e.waitCovered(target)
	}
	if err == nil {
		e.fileMu.Lock()
		err = e.fs.Rename(tmp, final)
		if err == nil && !e.opts.NoSync {
			err = e.fs.SyncDir(e.dir)
		}
		if err == nil {
			err = e.removeBefore(upTo)
		}
		e.fileMu.Unlock()
	}
	if err != nil {
		_ = e.fs.Remove(tmp)
		return fmt.Errorf("cursor snapshot %s: %w", final, err)
	}
	return nil
}

// waitCovered blocks until generation target is durable; a failed generation
// is not the end (its changes go into the next one). Errors: the sticky
// error, or ErrClosed once the writer is gone without it.
func (e *Engine) waitCovered(target uint64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for {
		switch {
		case e.durableGen >= target:
			return nil
		case e.err != nil:
			return e.err
		case e.finished:
			return ErrClosed
		}
		if target > e.wantGen {
			e.wantGen = target
			select {
			case e.kick <- struct{}{}:
			default:
			}
		}
		e.cond.Wait()
	}
}

// encodeSnapshot writes the snapshot frames to f: a header, the states and
// subscriptions in pieces of about snapshotPieceBytes (each shard encoded
// under its lock, written after), the records, a trailer with the counts.
// It returns the generation whose durability covers everything it read.
func (e *Engine) encodeSnapshot(f vfs.File, upTo uint64, recs map[uint64][]byte) (uint64, error) {
	enc := newEncoder(snapshotFormat)
	var frames, entries uint64
	// flush writes every finished frame in the buffer and keeps the open one.
	flush := func() error {
		if enc.start == 0 {
			return nil
		}
		if _, err := f.Write(enc.buf[:enc.start]); err != nil {
			return err
		}
		enc.buf = enc.buf[:copy(enc.buf, enc.buf[enc.start:])]
		enc.start = 0
		return nil
	}
	closeEntries := func(reopen bool) error {
		if enc.entries == 0 {
			enc.buf = enc.buf[:enc.start]
		} else {
			frames++
			entries += uint64(enc.entries)
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
	enc.begin()
	enc.buf = append(enc.buf, snapHeader)
	enc.buf = binary.LittleEndian.AppendUint64(enc.buf, upTo)
	if err := enc.finish(); err != nil {
		return 0, err
	}
	enc.begin()
	enc.buf = append(enc.buf, snapEntries)
	full := func() error { return closeEntries(true) }
	for i := range e.shards {
		if err := encodeShard(&e.shards[i], enc, full); err != nil {
			return 0, err
		}
		if err := flush(); err != nil {
			return 0, err
		}
	}
	e.subMu.Lock()
	for k, s := range e.subs {
		enc.sub(k, s, false)
	}
	e.subMu.Unlock()
	// Everything live has been read: the generation that collects the changes
	// made so far covers it.
	e.mu.Lock()
	target := e.targetLocked()
	e.mu.Unlock()
	for _, id := range slices.Sorted(maps.Keys(recs)) {
		enc.record(id, recs[id])
		if enc.bodyLen() >= snapshotPieceBytes {
			if err := closeEntries(true); err != nil {
				return 0, err
			}
			if err := flush(); err != nil {
				return 0, err
			}
		}
	}
	if err := closeEntries(false); err != nil {
		return 0, err
	}
	enc.begin()
	enc.buf = append(enc.buf, snapTrailer)
	enc.buf = binary.LittleEndian.AppendUint64(enc.buf, frames)
	enc.buf = binary.LittleEndian.AppendUint64(enc.buf, entries)
	if err := enc.finish(); err != nil {
		return 0, err
	}
	enc.start = len(enc.buf)
	return target, flush()
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

// loadSnapshot checks a snapshot file's bytes and applies its entries to v; it
// returns the checkpoint the snapshot covers. The file must be exactly a
// header, entry frames and a trailer whose counts match: it was synced before
// its rename, so anything else is damage (a *CorruptionError).
func loadSnapshot(data []byte, path string, v visitor) (uint64, error) {
	var upTo, frames, entries uint64
	var header, trailer bool
	cv := &countingVisitor{visitor: v}
	scan, err := snapshotFormat.Scan(data, func(pos int64, body []byte) error {
		switch {
		case trailer:
			return errors.New("a frame after the trailer")
		case body[0] == snapHeader && !header && pos == 0 && len(body) == 1+8:
			upTo, header = binary.LittleEndian.Uint64(body[1:]), true
		case body[0] == snapEntries && header:
			frames++
			return decodeEntries(body[1:], formatVersion, cv)
		case body[0] == snapTrailer && header && len(body) == 1+16:
			wantFrames, wantEntries := binary.LittleEndian.Uint64(body[1:]), binary.LittleEndian.Uint64(body[9:])
			entries = cv.n
			if wantFrames != frames || wantEntries != entries {
				return fmt.Errorf("trailer counts %d frames, %d entries; the file holds %d, %d", wantFrames, wantEntries, frames, entries)
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
		return 0, &CorruptionError{File: path, StartByte: scan.End, EndByte: int64(len(data)), Reason: err.Error()}
	}
	return upTo, nil
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

// removeBefore deletes the journals whose checkpoints are all <= upTo (those
// that start at or before it: the journal after a rotation starts at upTo+1)
// and the snapshots older than upTo, once snapshot-<upTo> is durable.
func (e *Engine) removeBefore(upTo uint64) error {
	files, err := e.listFiles()
	if err != nil {
		return err
	}
	for _, jf := range files.journals {
		if jf.seq <= upTo {
			if err := e.fs.Remove(filepath.Join(e.dir, jf.name)); err != nil {
				return fmt.Errorf("cursor journal compaction: %w", err)
			}
		}
	}
	for _, sf := range files.snapshots {
		if sf.seq < upTo {
			if err := e.fs.Remove(filepath.Join(e.dir, sf.name)); err != nil {
				return fmt.Errorf("cursor snapshot compaction: %w", err)
			}
		}
	}
	return nil
}
