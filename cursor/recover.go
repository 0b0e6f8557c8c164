package cursor

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/record"
	"github.com/combmq/comb/vfs"
)

// quarantineDir is the subdirectory that keeps a copy of the bytes recovery
// zeroes after the last checkpoint.
const quarantineDir = "quarantine"

type seqFile struct {
	name string
	seq  uint64
}

type dirFiles struct {
	journals  []seqFile // format 2, by first checkpoint, ascending
	snapshots []seqFile // format 2, by covered checkpoint, ascending
	// Format 1 (upgrade.go).
	v1journals  []seqFile
	v1snapshots []seqFile
	tmps        []string // snapshots that never got renamed
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
		case scanName(name, "journal-%016x.v2.log", &seq):
			out.journals = append(out.journals, seqFile{name, seq})
		case scanName(name, "snapshot-%016x.v2.snap", &seq):
			out.snapshots = append(out.snapshots, seqFile{name, seq})
		case scanName(name, "journal-%016x.log", &seq):
			out.v1journals = append(out.v1journals, seqFile{name, seq})
		case scanName(name, "snapshot-%016x.snap", &seq):
			out.v1snapshots = append(out.v1snapshots, seqFile{name, seq})
		}
	}
	for _, l := range [][]seqFile{out.journals, out.snapshots, out.v1journals, out.v1snapshots} {
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

// record keeps a copy of rec; id 0 (format 1, which has no ids) takes the
// next unused id.
func (r replayer) record(id uint64, rec []byte) {
	if id == 0 {
		id = r.e.nextRec
	}
	r.e.recs[id] = bytes.Clone(rec)
	r.e.nextRec = max(r.e.nextRec, id+1)
}

func (r replayer) dropRecord(id uint64) {
	delete(r.e.recs, id)
	r.e.nextRec = max(r.e.nextRec, id+1)
}

func (r replayer) dropAllRecords() { clear(r.e.recs) }

// scanned is one journal file as recovery read it.
type scanned struct {
	seqFile
	path string
	data []byte
	scan record.Scan
}

// recover loads the newest snapshot and replays later checkpoints (see the
// package comment), upgrading a format 1 directory first, then opens the
// journal the next checkpoint goes to. It runs before the writer starts, so
// it needs no locks.
func (e *Engine) recover() (*RecoveryReport, error) {
	rep := &RecoveryReport{}
	files, err := e.listFiles()
	if err != nil {
		return nil, err
	}
	for _, name := range files.tmps {
		// A snapshot that never got renamed: never part of the state.
		_ = e.fs.Remove(filepath.Join(e.dir, name))
	}
	if len(files.v1journals)+len(files.v1snapshots) > 0 {
		if err := e.upgrade(files, rep); err != nil {
			return nil, err
		}
		e.reset()
		if files, err = e.listFiles(); err != nil {
			return nil, err
		}
	}
	rv := replayer{e}
	var snapUpTo uint64
	haveSnap := false
	if n := len(files.snapshots); n > 0 {
		sf := files.snapshots[n-1]
		path := filepath.Join(e.dir, sf.name)
		b, err := e.fs.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("cursor snapshot: %w", err)
		}
		upTo, err := loadSnapshot(b, path, rv)
		if err != nil {
			return nil, err
		}
		if upTo != sf.seq {
			return nil, &CorruptionError{File: path, EndByte: int64(len(b)), Reason: fmt.Sprintf("the snapshot covers checkpoint %d, its name says %d", upTo, sf.seq)}
		}
		snapUpTo, haveSnap = upTo, true
		rep.SnapshotLoaded = sf.name
	}
	last := snapUpTo // last checkpoint applied (or covered by the snapshot)
	js := make([]scanned, 0, len(files.journals))
	for _, jf := range files.journals {
		s, err := e.replayJournal(jf, rv, haveSnap, snapUpTo, &last, rep)
		if err != nil {
			return nil, err
		}
		js = append(js, s)
	}
	rep.LastSeq = last
	// Recovery applied entries through setLocked, which marks keys dirty; they
	// are already on disk.
	for i := range e.shards {
		e.shards[i].dirty = make(map[Key]struct{})
	}
	return rep, e.openTail(js, last, rep)
}

// replayJournal applies the checkpoints of one journal after the snapshot and
// checks their sequence: the first is the one the file is named for, each
// later one follows the one before. A checksum-valid body that does not decode
// is damage (or a bug), never a torn write: a *CorruptionError.
func (e *Engine) replayJournal(jf seqFile, rv replayer, haveSnap bool, snapUpTo uint64, last *uint64, rep *RecoveryReport) (scanned, error) {
	path := filepath.Join(e.dir, jf.name)
	data, err := e.fs.ReadFile(path)
	if err != nil {
		return scanned{}, fmt.Errorf("cursor journal: %w", err)
	}
	first := true
	scan, err := checkpointFormat.Scan(data, func(_ int64, body []byte) error {
		seq, entries, err := checkpointBody(body)
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
		if (haveSnap || rep.Checkpoints > 0) && seq != *last+1 {
			return fmt.Errorf("checkpoint %d follows %d", seq, *last)
		}
		if err := decodeEntries(entries, formatVersion, rv); err != nil {
			return err
		}
		*last = seq
		rep.Checkpoints++
		return nil
	})
	if err != nil {
		return scanned{}, &CorruptionError{File: path, StartByte: scan.End, EndByte: scan.DataEnd, AfterSeq: *last, Reason: err.Error()}
	}
	if scan.Tail == record.TailCorrupt {
		return scanned{}, &CorruptionError{File: path, StartByte: scan.End, EndByte: scan.Resync, AfterSeq: *last,
			Reason: "damaged bytes with a valid checkpoint after them"}
	}
	return scanned{seqFile: jf, path: path, data: data, scan: scan}, nil
}

// openTail decides where the next checkpoint goes and opens that journal:
//
//   - The journal to continue is the newest one holding anything but zeros;
//     an empty journal after it is a rotation that got no checkpoint before a
//     crash: the newest such one is continued if it starts right after the
//     last checkpoint, the others are removed.
//   - Only the journal continued may end in a torn or damaged checkpoint
//     (never acknowledged: Wait returns after the sync). Its bytes are copied
//     to quarantine/ (best effort) and zeroed, so only zeros follow the last
//     checkpoint again. Anything but zeros after the end of any other journal
//     is a *CorruptionError: nothing is written to a journal after rotation.
func (e *Engine) openTail(js []scanned, last uint64, rep *RecoveryReport) error {
	cont := -1
	for i := range js {
		if js[i].scan.Frames > 0 || js[i].scan.DataEnd > 0 {
			cont = i
		}
	}
	if n := len(js) - 1; n > cont && js[n].seq == last+1 {
		cont = n
	}
	for i := range js {
		s := &js[i]
		switch {
		case i == cont:
		case s.scan.Frames == 0 && s.scan.DataEnd == 0:
			if err := e.fs.Remove(s.path); err != nil {
				return fmt.Errorf("cursor journal: remove unused %s: %w", s.name, err)
			}
		case s.scan.Tail != record.TailClean && s.scan.Tail != record.TailZeros:
			return &CorruptionError{File: s.path, StartByte: s.scan.End, EndByte: s.scan.DataEnd, AfterSeq: last,
				Reason: "non-zero bytes after the end of a journal that is not the newest"}
		}
	}
	j := &journal{fs: e.fs, dir: e.dir, noSync: e.opts.NoSync, prealloc: e.opts.PreallocBytes,
		enc: newEncoder(checkpointFormat), nextSeq: last + 1, logRecs: maps.Clone(e.recs)}
	e.j = j
	if cont < 0 {
		f, err := j.create(journalName(last + 1))
		if err != nil {
			return err
		}
		if err := j.use(f, journalName(last+1), 0); err != nil {
			return err
		}
	} else {
		s := &js[cont]
		f, err := e.fs.OpenFile(s.path, os.O_RDWR)
		if err != nil {
			return fmt.Errorf("cursor journal: %w", err)
		}
		if err := j.use(f, s.name, s.scan.End); err != nil {
			_ = f.Close()
			return err
		}
		if s.scan.Lost() {
			e.dropTornTail(s, rep)
		}
	}
	// Preallocate before the first checkpoint: space taken now is space a
	// full disk cannot refuse consumption later. A disk already full is not
	// an error here (see extendAhead).
	if err := j.extendAhead(); err != nil {
		_ = j.f.Close()
		return err
	}
	return nil
}

// dropTornTail deals with the non-zero bytes after the last checkpoint of the
// journal being continued: a checkpoint whose write or sync failed or was cut
// by a crash. They are reported, copied to quarantine/<journal>.<byte> when
// the disk lets us (a damaged acknowledged checkpoint would be the one thing
// worth a person's look), and zeroed with a sync. A failure to zero leaves
// them for the next checkpoint to zero (journal.dirtyEnd): a full disk must
// not keep the broker from starting.
func (e *Engine) dropTornTail(s *scanned, rep *RecoveryReport) {
	j := e.j
	start, end := s.scan.End, s.scan.DataEnd
	rep.TornBytes, rep.TornFile = end-start, s.name
	rep.Quarantined, rep.QuarantineErr = e.quarantine(s.name, start, s.data[start:end])
	j.dirtyEnd = end
	err := j.writeZeros(start, end)
	if err == nil && !j.noSync {
		err = j.f.Sync()
	}
	if err == nil {
		j.dirtyEnd = 0
	}
}

// quarantine keeps a durable copy of b, cut from journal name at byte start.
func (e *Engine) quarantine(name string, start int64, b []byte) (string, error) {
	dir := filepath.Join(e.dir, quarantineDir)
	path := filepath.Join(dir, fmt.Sprintf("%s.%d", name, start))
	err := e.fs.MkdirAll(dir)
	if err == nil && !e.opts.NoSync {
		err = e.fs.SyncDir(e.dir)
	}
	if err == nil {
		err = vfs.WriteFileAtomic(e.fs, path, b, e.opts.NoSync)
	}
	if err != nil {
		return "", fmt.Errorf("cursor journal %s: keep a copy of the torn bytes %d..%d: %w", name, start, start+int64(len(b)), err)
	}
	return path, nil
}
