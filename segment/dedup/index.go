package dedup

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/combmq/comb/index"
	"github.com/combmq/comb/record"
	"github.com/combmq/comb/vfs"
)

// Index is a partition log's dedup index: transactionId hash → offsets, loaded on
// the first lookup (so opening a log stays cheap and idle partitions hold no
// memory for it). Offsets up to runsEnd are in sealed run files, of which
// memory keeps a filter and a page index each (run.go); the newest
// ids, after runsEnd, are in the active table and in dedup.idx, whose
// header names runsEnd as its base. Append keeps both current once loaded,
// appending new entries to dedup.idx in batches and sealing the table into a
// run when it holds Config.RunEntries ids. The files are caches and never
// synced: entries at or past the offset the log had at Open may describe
// records a crash took back, so they are dropped on load.
//
// The files decide exactly-once (an entry that is missing or wrong lets a
// retried push be stored twice), so they are trusted only as far as their
// checks verify (index.ScanDedup, index.ScanRun); whatever follows is
// re-indexed from the segments. The writer keeps dedup.idx a verified
// prefix: it never appends after bytes it could not cut back.
//
// The zero Index is unusable: Init gives it its Config before any other call.
type Index struct {
	cfg Config

	mu       sync.Mutex
	loaded   bool
	table    index.Table // the ids after runsEnd
	covered  uint64      // every offset ≤ covered is in the runs or the table (or has no transaction id)
	openNext uint64      // NextOffset at Open

	runs        []*dedupRun // sealed runs, oldest first, each starting at or before the offset after the one before
	runsEnd     uint64      // the last offset the runs cover (0: none yet)
	sealRetryAt int         // after a failed seal: the table length to try again at (0: none)
	trimmedAt   uint64      // FirstOffset when retention was last applied to the runs
	merging     bool        // the merge goroutine runs (merge.go)
	mergeWG     sync.WaitGroup
	mergeStop   atomic.Bool // Drop, Undo: finish the merge under way, start no other

	f vfs.File // dedup.idx, open for appending; nil when not loaded, given up on or deferred
	// deferred: a small log's load created no dedup.idx (Config.FileMinRecords);
	// pending holds every entry since, and flushLocked creates the file once
	// the log holds enough records.
	deferred bool
	size     int64  // bytes of f that are header and whole entries: where the next write lands
	chain    uint32 // check of the last entry encoded (written or pending)
	pending  []byte // encoded entries not yet written to f
	// parked: f was closed to give its handle back to the handle cache
	// (Park) with every entry written; size is still its end and
	// the next write reopens it (unparkLocked). The table and the runs stay.
	parked bool

	inMem atomic.Bool // loaded, for lock-free readers (InMemory)
	acct  int64       // bytes last told to Config.Memory (memory.go)
	loads int         // loadLocked calls (tests: a kept index is not reloaded)

	mergedEntries atomic.Uint64 // entries merges and rewrites wrote (Stats: write amplification)

	// The partition's filter over every run's ids (global.go).
	global         *index.KFilter
	globalCap      int      // ids it was sized for
	globalAdded    int      // ids added since it was built
	rebuilding     bool     // a job builds it again (merge.go)
	rebuildPending []uint64 // hashes sealed while it does, for the rebuilt one

	touching *dedupRun // the mapped run a lookup reads (a memory fault's run: runmap.go)
	finds    uint64    // lookups that asked the runs (reverifyEvery)
	best     []hit     // Find's scratch: what each id found
	probes   []probe   // Find's scratch: the runs each id is asked of
	ver      verifier  // verifyCandidates' state, and its read callback:
	verFn    func(offset uint64, txid string, id [16]byte)
}

// DefaultFileMinRecords is how many retained records a log holds before it
// gets a dedup.idx (made by the first flush of its entries that finds it
// there: an append's, a release's, Close's; or by a load). Below it each
// load indexes the segments (at most this many records, ~100 KiB) and the
// entries stay in memory: a partition that got one push never pays for the
// file's inode, ~0.3 ms of kernel CPU on the VM of issue 14, a quarter of
// what creating a partition cost. A file that exists is used and kept whatever the size.
const DefaultFileMinRecords uint64 = 256

// dedupFlushBytes batches dedup file writes: one write per ~3,000 entries.
const dedupFlushBytes = 64 << 10

// dedupMaxPending bounds the entries kept for a retry after a failed write
// (a full disk): beyond it the log stops writing the file until its next
// load, which re-indexes what the file lacks from the segments.
const dedupMaxPending = 1 << 20

// Init gives x its configuration; it must precede every other call and not
// race with one. Zero RunEntries takes DefaultRunEntries.
func (d *Index) Init(cfg Config) {
	if cfg.RunEntries <= 0 {
		cfg.RunEntries = DefaultRunEntries
	}
	if cfg.MergeFanout <= 0 {
		cfg.MergeFanout = DefaultMergeFanout
	}
	d.cfg = cfg
}

// SetOpenNext records the log's next offset at Open: entries of the files at
// or past it may describe records a crash took back, and are dropped by the
// load. Called before the log is shared (Open, Create).
func (d *Index) SetOpenNext(next uint64) { d.openNext = next }

// loadLocked loads the runs, then fills the table from dedup.idx, as
// far as its checks verify, and from the segments after it, sealing runs as
// the table fills. A dedup file that cannot be opened, read or written costs
// nothing but speed: the table is built from the segments alone and kept in
// memory. Only a failed segment read or directory listing fails the load.
func (d *Index) loadLocked() error {
	d.table, d.covered, d.pending, d.sealRetryAt, d.deferred, d.parked = index.Table{}, 0, d.pending[:0], 0, false, false
	d.loads++
	first := d.cfg.Source.FirstOffset()
	d.trimmedAt = first
	rwhy, err := d.loadRunsLocked(first)
	if err != nil {
		d.runs, d.runsEnd = nil, 0
		d.dropGlobalLocked()
		return err
	}
	d.covered = d.runsEnd
	fwhy, err := d.loadFileLocked(first)
	if err != nil {
		fwhy = fmt.Sprintf("%s unusable (%v): the dedup index is kept in memory only", FileName, err)
	}
	why := strings.Join(slices.DeleteFunc([]string{rwhy, fwhy}, func(s string) bool { return s == "" }), "; ")
	// Index what the files do not cover. Append publishes a segment before
	// it takes d.mu, so everything it skipped while !loaded is seen here.
	for from := max(d.covered+1, first); ; {
		var last uint64
		n, err := d.cfg.Source.Read(from, 4096, 0, func(off uint64, txid string, _ [16]byte) {
			d.addLocked(txid, off)
			if d.table.Len() >= d.cfg.RunEntries && d.sealDue() {
				_ = d.sealLocked() // a failed seal keeps the table: complete, only larger
			}
			last = off
		})
		if err != nil {
			d.closeFileLocked()
			d.closeRunsLocked(d.runs...)
			d.table, d.pending, d.runs = index.Table{}, d.pending[:0], nil
			d.dropGlobalLocked()
			return err
		}
		if n == 0 {
			break
		}
		from = last + 1
	}
	d.loaded = true
	d.inMem.Store(true)
	d.startMergeLocked() // a run half expired since it was written, or merges a failure left
	if why != "" {
		d.rebuilt(why)
	}
	// A failed write keeps the entries pending for the next flush.
	_ = d.flushLocked()
	d.accountLocked()
	return nil
}

// sealDue reports whether a seal may be tried now (not right after one failed).
func (d *Index) sealDue() bool { return d.sealRetryAt == 0 || d.table.Len() >= d.sealRetryAt }

// loadFileLocked opens dedup.idx (creating it), inserts its verified entries
// after runsEnd, below openNext and at or above first, cuts the file after
// them and leaves it open for appending. A file whose base is past runsEnd
// (it follows a run that was lost) is not used. why says what was rebuilt
// and why ("" when the file was whole, new, or only lost entries a crash
// took back). On error the file is closed and the table holds whatever was
// inserted (still correct: every inserted entry verified).
func (d *Index) loadFileLocked(first uint64) (why string, err error) {
	path := d.path(FileName)
	create := d.cfg.Source.NextOffset()-first >= d.cfg.FileMinRecords
	f, err := openAppend(d.cfg.FS, path, create)
	if !create && errors.Is(err, fs.ErrNotExist) {
		// A small log: no file yet. The entries chain from the header the
		// file will start with, and stay pending until flushLocked finds
		// the log at the threshold and creates it (createDeferredLocked).
		_, d.chain = d.header()
		d.deferred = true
		return "", nil
	}
	if err != nil {
		return "", err
	}
	b, err := vfs.ReadAll(f)
	if err != nil {
		_ = f.Close()
		return "", err
	}
	kept := 0
	var lastHash, lastOff uint64 // the last kept entry at or above first
	var scan index.DedupScan
	var herr error
	if _, err := index.CheckDedupHeader(b); err == nil && dedupBase(b) > d.runsEnd {
		herr = fmt.Errorf("its entries follow offset %d but the dedup runs end at %d (a run was lost)", dedupBase(b), d.runsEnd)
	} else {
		scan, herr = index.ScanDedup(b, func(i int, h, off uint64) {
			if off >= d.openNext {
				return // a crash may have taken the record back; its offset will be reused
			}
			if off > d.runsEnd && off >= first {
				d.table.Insert(h, off)
				lastHash, lastOff = h, off
			}
			d.covered, kept = max(d.covered, off), i+1
		})
	}
	keep := int64(index.DedupHeaderSize + kept*index.DedupEntrySize)
	if herr == nil && lastOff != 0 {
		// Verified entries can still describe another log (a file copied or
		// restored from elsewhere): they would claim offsets as covered whose
		// ids they lack. The last one must name the record at its offset.
		match, err := d.entryMatches(lastHash, lastOff)
		if err != nil {
			_ = f.Close()
			d.table, d.covered = index.Table{}, d.runsEnd
			return "", err
		}
		if !match {
			d.table, d.covered, keep = index.Table{}, d.runsEnd, 0
			why = fmt.Sprintf("%s rebuilt from the segments: its entry for offset %d names another transaction id than the record there, so the file does not describe this log", FileName, lastOff)
		}
	}
	switch {
	case why != "":
	case herr != nil:
		keep = 0
		if len(b) > 0 {
			why = fmt.Sprintf("%s rebuilt from the segments: %v", FileName, herr)
		}
	case scan.Tail == record.TailCorrupt:
		why = fmt.Sprintf("%s damaged: the entry at byte %d fails its check (%s) and verified entries follow it at byte %d, so this is damage to the file (media or a stray write), not a torn append; the entries from byte %d on were rebuilt from the segments",
			FileName, scan.End, scan.Reason, scan.Resync, scan.End)
	case scan.Tail == record.TailDamaged:
		why = fmt.Sprintf("%s: the last entries from byte %d fail their checks (%s): a torn write or damage; they were rebuilt from the segments",
			FileName, scan.End, scan.Reason)
	}
	if keep < int64(len(b)) || keep == 0 {
		if err := f.Truncate(keep); err != nil {
			_ = f.Close()
			return why, err
		}
	}
	if keep == 0 {
		hdr, chain := d.header()
		d.chain = chain
		if _, err := f.Write(hdr[:]); err != nil {
			_ = f.Truncate(0) // a torn header is rebuilt by the next load anyway
			_ = f.Close()
			return why, err
		}
		keep = index.DedupHeaderSize
	} else {
		d.chain = index.DedupChainAt(b, keep)
	}
	d.f, d.size = f, keep
	d.handles(1)
	return why, nil
}

// header returns dedup.idx's header for base d.runsEnd and the check its
// first entry chains from.
func (d *Index) header() (hdr [index.DedupHeaderSize]byte, chain uint32) {
	chain = index.PutDedupHeader(hdr[:], d.runsEnd)
	return hdr, chain
}

// dedupBase is the base in a checked dedup.idx header (bytes 8..15).
func dedupBase(b []byte) uint64 { return binary.LittleEndian.Uint64(b[8:]) }

// restartFileLocked empties dedup.idx after a seal: a header whose base is
// the new runsEnd, the entries before it being in the run. If that fails
// the file is given up until the next load, which skips the entries the
// runs cover.
func (d *Index) restartFileLocked() {
	d.pending = d.pending[:0]
	hdr, chain := d.header()
	if d.deferred {
		d.chain = chain // the file, once made, starts after the run
		return
	}
	if d.f == nil && (!d.parked || !d.unparkLocked()) {
		return
	}
	if err := d.f.Truncate(0); err != nil {
		d.closeFileLocked()
		return
	}
	if _, err := d.f.Write(hdr[:]); err != nil {
		_ = d.f.Truncate(0)
		d.closeFileLocked()
		return
	}
	d.chain, d.size = chain, index.DedupHeaderSize
}

// entryMatches reports whether the record at off carries a transaction
// id whose hash is h.
func (d *Index) entryMatches(h, off uint64) (bool, error) {
	match := false
	_, err := d.cfg.Source.Read(off, 1, 0, func(o uint64, txid string, _ [16]byte) {
		match = o == off && txid != "" && index.HashTxn(txid) == h
	})
	if err != nil {
		return false, err
	}
	return match, nil
}

func (d *Index) addLocked(txid string, off uint64) {
	if off <= d.covered {
		return
	}
	d.covered = off
	if txid == "" {
		return
	}
	d.addHashLocked(index.HashTxn(txid), off)
}

// addHashLocked indexes a record whose (non-empty) transaction id hashes to h.
func (d *Index) addHashLocked(h, off uint64) {
	d.table.Insert(h, off)
	d.pending = index.AppendDedupEntry(d.pending, &d.chain, h, off)
}

// flushLocked writes the pending entries with one append. A failed write is
// cut back to the file's previous end and its entries stay pending for the
// next flush (a full disk is an error, not a state); if the cut fails too,
// the file may end in a partial entry and is not written again until the
// next load (which cuts it at the first entry whose check fails).
func (d *Index) flushLocked() error {
	if d.deferred {
		if d.cfg.Source.NextOffset()-d.cfg.Source.FirstOffset() < d.cfg.FileMinRecords {
			return nil // every entry since the load stays pending
		}
		return d.createDeferredLocked()
	}
	if d.f == nil && d.parked && len(d.pending) > 0 && !d.unparkLocked() {
		return fmt.Errorf("%s: reopen: given up until the next load", FileName)
	}
	if len(d.pending) == 0 || d.f == nil {
		d.pending = d.pending[:0]
		return nil
	}
	_, err := d.f.Write(d.pending)
	if err == nil {
		d.size += int64(len(d.pending))
		d.pending = d.pending[:0]
		return nil
	}
	err = fmt.Errorf("%s: append %d bytes at %d: %w", FileName, len(d.pending), d.size, err)
	if terr := d.f.Truncate(d.size); terr != nil {
		d.closeFileLocked()
		return errors.Join(err, fmt.Errorf("%s: cut back to %d: %w (not written again until reloaded)", FileName, d.size, terr))
	}
	if len(d.pending) > dedupMaxPending {
		d.closeFileLocked()
	}
	return err
}

// createDeferredLocked creates the dedup.idx a small log's load left
// uncreated: its header and every entry pending since that load, in one
// write. On failure the file is given up until the next load (as
// closeFileLocked), which indexes the segments again.
func (d *Index) createDeferredLocked() error {
	d.deferred = false
	hdr, _ := d.header()
	f, err := openAppend(d.cfg.FS, d.path(FileName), true)
	if err == nil {
		if _, err = f.Write(append(hdr[:], d.pending...)); err != nil {
			_ = f.Truncate(0) // a torn file is rebuilt by the next load anyway
			_ = f.Close()
		}
	}
	if err != nil {
		d.pending = d.pending[:0]
		return fmt.Errorf("%s: create: %w", FileName, err)
	}
	d.f, d.size = f, int64(len(hdr)+len(d.pending))
	d.pending = d.pending[:0]
	d.handles(1)
	return nil
}

// closeFileLocked stops writing the dedup file (pending entries are dropped:
// the next load re-indexes them from the segments).
func (d *Index) closeFileLocked() {
	d.parked = false
	if d.f == nil {
		return
	}
	_ = d.f.Close()
	d.f = nil
	d.pending = d.pending[:0]
	d.handles(-1)
}

// Append records the transaction ids of a just-published segment whose
// first record has offset base and which holds n records: hashOf(i) is
// index.HashTxn of record i's transaction id, 0 for a record without one.
// It does nothing until the index is loaded (the load reads published
// segments, so it sees this one).
func (d *Index) Append(base uint64, n int, hashOf func(i int) uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.loaded {
		return
	}
	d.touch()
	defer d.accountLocked()
	if first := d.cfg.Source.FirstOffset(); first != d.trimmedAt {
		d.trimLocked(first)
	}
	if t := d.table.Len(); t > 0 && t+n > d.cfg.RunEntries && d.sealDue() {
		// Sealed before the table would grow past its slots. A failed seal
		// keeps the table (complete, only larger) and is retried later.
		_ = d.sealLocked()
	}
	// Grow once, then touch every home slot before inserting, so the cache
	// misses of a whole segment's inserts overlap (see index.Table.Prefetch).
	var hashBuf [128]uint64
	hashes := hashBuf[:0]
	for i := range n {
		hashes = append(hashes, hashOf(i))
	}
	d.table.Reserve(n)
	d.table.Prefetch(hashes)
	for i := range n {
		off := base + uint64(i)
		if off <= d.covered {
			continue
		}
		d.covered = off
		if hashes[i] != 0 {
			d.addHashLocked(hashes[i], off)
		}
	}
	if len(d.pending) >= dedupFlushBytes {
		// A failed write keeps the entries pending (or gives the file up
		// until the next load); the table in memory stays complete.
		_ = d.flushLocked()
	}
}

// Drop writes pending entries, closes the files and drops the table and
// the runs' filters (the log's Close and Release: not the handle cache's
// eviction, which parks the files and keeps the rest, Park). It waits for
// the merge under way first.
func (d *Index) Drop() error {
	// A merge swaps under d.mu: wait for it first. No new one starts: they
	// start from Append and lookups, which do not run with Close or Release.
	d.mergeStop.Store(true)
	d.WaitMerges()
	d.mergeStop.Store(false)
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.loaded {
		// Never loaded: openNext must stay the offset at Open, below which
		// the file's entries describe records no crash took back.
		return nil
	}
	return d.dropLocked()
}

// Loaded reports, under the index's lock, whether the dedup table is in
// memory (Append keeps it current only then).
func (d *Index) Loaded() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.loaded
}

// dropLocked writes the pending entries (through a handle opened for that
// write alone when the file is parked), closes the files and drops the table
// and the runs' filters. No merge may run (Drop waits for it,
// TryEvict gives up).
func (d *Index) dropLocked() error {
	var err error
	if d.f == nil && d.parked {
		err = d.writeParkedLocked()
	} else {
		err = d.flushLocked()
	}
	if d.f != nil {
		if cerr := d.f.Close(); err == nil {
			err = cerr
		}
		d.f = nil
		d.handles(-1)
	}
	d.loaded, d.parked = false, false
	d.inMem.Store(false)
	d.table = index.Table{}
	d.closeRunsLocked(d.runs...)
	d.runs, d.runsEnd = nil, 0
	d.dropGlobalLocked()
	d.pending = d.pending[:0]
	// Everything in the file describes published records of this process:
	// a reload after Release keeps it all and rescans only past it.
	d.covered, d.openNext = 0, d.cfg.Source.NextOffset()
	d.accountLocked()
	return err
}

// writeParkedLocked appends the pending entries to a parked dedup.idx
// through a handle of its own, not counted in the HandleCache (the caller
// may be making room in another Log's name). A failed write is cut back; if
// that fails too the next load cuts the file at its first bad entry.
func (d *Index) writeParkedLocked() error {
	if len(d.pending) == 0 {
		return nil
	}
	f, err := openAppend(d.cfg.FS, d.path(FileName), false)
	if err != nil {
		return fmt.Errorf("%s: reopen to write %d bytes: %w", FileName, len(d.pending), err)
	}
	if _, err = f.Write(d.pending); err != nil {
		err = fmt.Errorf("%s: append %d bytes at %d: %w", FileName, len(d.pending), d.size, err)
		_ = f.Truncate(d.size)
	} else {
		d.size += int64(len(d.pending))
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("%s: close: %w", FileName, cerr)
	}
	return err
}

// Park gives the dedup files' handles back for a release by the
// handle cache (segment's tryRelease) and keeps the table, the runs' filters and page
// indexes in memory, so that the Log's next lookup needs no run file read
// (issue 23: "nothing a cache evicts costs a rebuild of what is already on
// disk"). dedup.idx gets its pending entries first and is parked
// (unparkLocked reopens it on the next write); run files reopen on the next
// page read. It never blocks: false when the dedup lock is held (the caller
// then keeps the Log loaded).
func (d *Index) Park() bool {
	if !d.mu.TryLock() {
		return false
	}
	defer d.mu.Unlock()
	if !d.loaded {
		return true
	}
	if d.f != nil {
		// A failed write keeps the entries pending, or gives the file up
		// (closeFileLocked): either way the table in memory stays complete.
		if err := d.flushLocked(); err == nil && d.f != nil && len(d.pending) == 0 {
			_ = d.f.Close()
			d.f, d.parked = nil, true
			d.handles(-1)
		} else if d.f != nil {
			d.closeFileLocked() // entries it could not write: the next load re-indexes them
		}
	}
	d.closeRunHandlesLocked(d.runs...) // mapped runs stay mapped: a mapping holds no handle
	return true
}

// unparkLocked reopens a parked dedup.idx for appending (a counted handle:
// the Log is pinned). If it cannot be opened the file is given up until the
// next load, which re-indexes what it lacks from the segments.
func (d *Index) unparkLocked() bool {
	f, err := openAppend(d.cfg.FS, d.path(FileName), false)
	d.parked = false
	if err != nil {
		d.pending = d.pending[:0]
		return false
	}
	d.f = f
	d.handles(1)
	return true
}

// DropParked drops the dedup index a handle cache release kept (Park), for
// the log's Release (the broker's idle eviction) when its handles are closed
// already. The caller keeps every lookup and append out meanwhile (segment's
// loadMu), so no merge can start; one under way makes it give up (false).
func (d *Index) DropParked() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.loaded || d.merging {
		return false
	}
	_ = d.dropLocked()
	return true
}

// InMemory reports, without the lock, whether the index is in memory: it
// stays there when the handle cache closes the log's handles, until Drop,
// DropParked, Undo or TryEvict drops it.
func (d *Index) InMemory() bool { return d.inMem.Load() }

// Undo drops the index after the log took back the records from first on
// (segment's Unappend): the table (and dedup.idx, if a flush wrote them)
// may name them. The next lookup loads it again, dropping every dedup.idx
// entry at or past first (openNext) and re-indexing the segments after what
// the file and runs cover. Runs hold only offsets sealed before the undone
// append (a seal runs before an append's ids are inserted), so they stay
// valid. It waits for the merge under way first.
func (d *Index) Undo(first uint64) {
	d.mergeStop.Store(true)
	d.WaitMerges()
	d.mergeStop.Store(false)
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.loaded {
		// Append indexed nothing; entries of the file at or past openNext
		// (≤ first) are dropped by the load anyway.
		d.openNext = min(d.openNext, first)
		return
	}
	if d.f != nil {
		_ = d.f.Close()
		d.f = nil
		d.handles(-1)
	}
	d.loaded, d.parked = false, false // a parked file is closed already
	d.inMem.Store(false)
	d.table = index.Table{}
	d.closeRunsLocked(d.runs...)
	d.runs, d.runsEnd = nil, 0
	d.dropGlobalLocked()
	d.pending = d.pending[:0]
	d.covered, d.openNext = 0, first
	d.accountLocked()
}

// Flush writes the pending entries to dedup.idx now (they are otherwise
// written in 64 KiB batches, by Park and by Drop). Nothing is synced.
func (d *Index) Flush() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.flushLocked()
}
