package dedup

import (
	"os"
	"path/filepath"

	"github.com/combmq/comb/vfs"
)

// FileName is the dedup file in a partition directory (docs/format.md 4.1).
const FileName = "dedup.idx"

// Source is the partition log an Index indexes and verifies against: the
// segments, which every dedup file is a cache of.
type Source interface {
	// FirstOffset is the first retained offset (retention moves it up).
	FirstOffset() uint64
	// NextOffset is the offset the next appended record gets.
	NextOffset() uint64
	// Read calls fn, in offset order, for each retained record from offset
	// from on: at most maxMsgs records and, past the first, about maxBytes
	// of them (0: no byte bound). txid is "" for a record without a
	// transaction id; txid and id are valid only during the call. n is how
	// many records fn saw: 0 when none is at or after from.
	Read(from uint64, maxMsgs, maxBytes int, fn func(offset uint64, txid string, id [16]byte)) (n int, err error)
}

// Config is what an Index is given by the log that owns it. Every hook may
// be nil. Hooks run under the index's lock: they must not call back into it.
type Config struct {
	FS     vfs.FS // the log's file system (vfs.OS, or a test twin)
	Dir    string // the partition directory holding the dedup files
	Source Source

	// RunEntries is how many ids the active table holds before they are
	// sealed into a run (0: DefaultRunEntries).
	RunEntries int
	// FileMinRecords is how many retained records the log holds before
	// the index creates dedup.idx (DefaultFileMinRecords in production).
	FileMinRecords uint64

	// Handles is told each dedup file handle opened (+1) or closed (-1),
	// for the log's handle budget.
	Handles func(delta int)
	// Memory is told the bytes the index holds in memory whenever that
	// changes (0 once dropped), for the dedup memory budget.
	Memory func(bytes int64)
	// Touch is called by every lookup and append (the budget's CLOCK bit).
	Touch func()
	// Rebuilt is told what a load or a lookup rebuilt from the segments,
	// and why (damage, a lost run, a file from another log).
	Rebuilt func(why string)
	// Closed reports the log closed: a lookup then returns its error.
	Closed func() error
}

func (d *Index) handles(delta int) {
	if d.cfg.Handles != nil && delta != 0 {
		d.cfg.Handles(delta)
	}
}

func (d *Index) touch() {
	if d.cfg.Touch != nil {
		d.cfg.Touch()
	}
}

func (d *Index) rebuilt(why string) {
	if d.cfg.Rebuilt != nil {
		d.cfg.Rebuilt(why)
	}
}

// path is the file name's path in the partition directory.
func (d *Index) path(name string) string { return filepath.Join(d.cfg.Dir, name) }

// openAppend opens a dedup file for reading and appending, creating it when
// create is set.
func openAppend(fsys vfs.FS, name string, create bool) (vfs.File, error) {
	flag := os.O_RDWR | os.O_APPEND
	if create {
		flag |= os.O_CREATE
	}
	return fsys.OpenFile(name, flag)
}
