package cursor

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/combmq/comb/lease"
)

type seqFile struct {
	name   string
	seq    uint64 // format 3: the snapshot's replayFrom; formats 1 and 2: a checkpoint sequence number
	format int
}

type dirFiles struct {
	snapshots []seqFile // format 3, by replayFrom, ascending
	// Formats 1 and 2 (upgrade.go), by sequence number, ascending.
	v2journals, v2snapshots []seqFile
	v1journals, v1snapshots []seqFile
	tmps                    []string // snapshots that never got renamed
}

// hasLegacy reports whether the directory holds files of format 1 or 2.
func (d dirFiles) hasLegacy() bool {
	return len(d.v1journals)+len(d.v1snapshots)+len(d.v2journals)+len(d.v2snapshots) > 0
}

func (e *Engine) listFiles() (dirFiles, error) {
	names, err := e.fs.List(e.dir)
	if err != nil {
		return dirFiles{}, fmt.Errorf("cursor dir %s: %w", e.dir, err)
	}
	var out dirFiles
	for _, name := range names {
		var seq uint64
		switch {
		case strings.HasSuffix(name, ".tmp"):
			out.tmps = append(out.tmps, name)
		case scanName(name, "snapshot-%016x.v3.snap", &seq):
			out.snapshots = append(out.snapshots, seqFile{name, seq, 3})
		case scanName(name, "journal-%016x.v2.log", &seq):
			out.v2journals = append(out.v2journals, seqFile{name, seq, 2})
		case scanName(name, "snapshot-%016x.v2.snap", &seq):
			out.v2snapshots = append(out.v2snapshots, seqFile{name, seq, 2})
		case scanName(name, "journal-%016x.log", &seq):
			out.v1journals = append(out.v1journals, seqFile{name, seq, 1})
		case scanName(name, "snapshot-%016x.snap", &seq):
			out.v1snapshots = append(out.v1snapshots, seqFile{name, seq, 1})
		}
	}
	for _, l := range [][]seqFile{out.snapshots, out.v2journals, out.v2snapshots, out.v1journals, out.v1snapshots} {
		slices.SortFunc(l, func(a, b seqFile) int {
			switch {
			case a.seq < b.seq:
				return -1
			case a.seq > b.seq:
				return 1
			}
			return 0
		})
	}
	return out, nil
}

func scanName(name, format string, seq *uint64) bool {
	n, err := fmt.Sscanf(name, format, seq)
	return err == nil && n == 1 && name == fmt.Sprintf(format, *seq)
}

// snapshotName is the name of the format 3 snapshot whose replayFrom is lsn.
func snapshotName(lsn uint64) string { return fmt.Sprintf("snapshot-%016x.v3.snap", lsn) }

// replayer applies decoded entries to the engine's maps without marking
// them dirty: they are durable already (in a snapshot, or in a checkpoint of
// the commit log), so the next checkpoint need not carry them.
//
// shift (µs) is added to every lease expiry: a checkpoint of another node
// rebased on this node's clock (ApplyCommitted); 0 otherwise.
type replayer struct {
	e     *Engine
	shift int64
}

func (r replayer) state(k Key, s lease.State, deleted bool) {
	if s.Lease.ExpiresAtMicros != 0 && r.shift != 0 {
		s.Lease.ExpiresAtMicros += r.shift
	}
	sh := r.e.shardFor(k)
	sh.mu.Lock()
	if deleted {
		sh.removeLocked(k)
	} else {
		sh.putLocked(k, s)
	}
	sh.mu.Unlock()
}

func (r replayer) sub(k subKey, s Subscription, deleted bool) {
	r.e.subMu.Lock()
	if deleted {
		delete(r.e.subs, k)
	} else {
		r.e.subs[k] = s
	}
	r.e.subMu.Unlock()
}

// Format 3 bodies hold no records (decodeEntries refuses them); the upgrade
// reads them with legacyReader.
func (replayer) record(uint64, []byte) {}
func (replayer) dropRecord(uint64)     {}
func (replayer) dropAllRecords()       {}

// recover loads the newest snapshot (see the package comment), upgrading a
// directory of format 1 or 2 first. It runs before the writer starts, so the
// only other callers are readers.
func (e *Engine) recover() (*RecoveryReport, error) {
	rep := &RecoveryReport{ReplayFrom: 1}
	files, err := e.listFiles()
	if err != nil {
		return nil, err
	}
	for _, name := range files.tmps {
		// A snapshot that never got renamed: never part of the state.
		_ = e.fs.Remove(filepath.Join(e.dir, name))
	}
	if files.hasLegacy() {
		if err := e.upgrade(files, rep); err != nil {
			return nil, err
		}
		e.reset()
		if files, err = e.listFiles(); err != nil {
			return nil, err
		}
	}
	if n := len(files.snapshots); n > 0 {
		// Only the newest counts: a snapshot is installed only once it is
		// durable, and the commit log may have been truncated behind it, so
		// an older one would silently lose acknowledged changes.
		sf := files.snapshots[n-1]
		path := filepath.Join(e.dir, sf.name)
		b, err := e.fs.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("cursor snapshot: %w", err)
		}
		from, legacy, err := loadSnapshot(b, path, replayer{e: e})
		if err != nil {
			return nil, err
		}
		if from != sf.seq {
			return nil, &CorruptionError{File: path, EndByte: int64(len(b)), Reason: fmt.Sprintf("the snapshot says replay from %d, its name says %d", from, sf.seq)}
		}
		rep.ReplayFrom, rep.SnapshotLoaded = from, sf.name
		rep.LegacyRecords, e.legacy = legacy, legacy
	}
	return rep, nil
}

// ApplyCheckpoint applies one checkpoint body read back from the commit log
// during recovery, before Start: the broker replays every checkpoint with an
// LSN >= RecoveryReport.ReplayFrom, in LSN order. Each entry holds a key's
// full state, so the last writer wins and applying a body twice is harmless.
// The applied changes are not checkpointed again (they are in the log, and
// the next snapshot reads them from memory).
//
// The body is applied whole or not at all. Errors: ErrStarted after Start; a
// body that does not decode (a bug or a newer format: the log checksummed
// it) wraps ErrCorrupt and changes nothing.
func (e *Engine) ApplyCheckpoint(body []byte) error {
	e.mu.Lock()
	started, closed := e.started, e.closed
	e.mu.Unlock()
	switch {
	case closed:
		return ErrClosed
	case started:
		return ErrStarted
	}
	return e.applyCheckpointBody(body, false)
}

// ApplyCommitted applies one checkpoint body another node wrote, committed
// through a replicated commit log (issue 15), to a started engine: a
// follower keeps its cursors current this way while its own writer has
// nothing to write (the applied states are not marked changed, so they are
// never checkpointed again here; the next snapshot reads them from memory).
// Same rules as ApplyCheckpoint (whole or nothing, last writer wins, a body
// applied twice is harmless); concurrent readers see each key's state
// change atomically, not the body as a whole.
//
// Lease expiries of a version 4 body are rebased on this engine's clock
// (Options.Now; issue 22): each becomes now + (expiresAt - the body's clock),
// its remaining duration counted from this apply, which comes after the
// writer read it, so this node never ends a lease before the writer's clock
// would, whatever the two clocks read. A version 3 body's expiries are taken
// as written (the writer's clock).
//
// Errors: ErrClosed; a body that does not decode wraps ErrCorrupt and
// changes nothing.
func (e *Engine) ApplyCommitted(body []byte) error {
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return ErrClosed
	}
	return e.applyCheckpointBody(body, true)
}

// applyCheckpointBody checks the whole body first, so a bad one changes
// nothing, then applies it; rebase shifts a version 4 body's lease expiries
// from the writer's clock to this engine's (ApplyCommitted).
func (e *Engine) applyCheckpointBody(body []byte, rebase bool) error {
	entries, clock, hasClock, err := parseCheckpoint(body)
	if err == nil {
		err = decodeEntries(entries, formatVersion, nopVisitor{})
	}
	if err != nil {
		return fmt.Errorf("cursor checkpoint body of %d bytes: %v: %w", len(body), err, ErrCorrupt)
	}
	r := replayer{e: e}
	if rebase && hasClock {
		r.shift = e.nowMicros() - clock
	}
	return decodeEntries(entries, formatVersion, r)
}

// nowMicros is the engine's clock (Options.Now), µs since the Unix epoch.
func (e *Engine) nowMicros() int64 {
	if e.opts.Now != nil {
		return e.opts.Now().UnixMicro()
	}
	return time.Now().UnixMicro()
}
