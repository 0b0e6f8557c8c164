package datadir

import (
	"path/filepath"

	"github.com/combmq/comb/layout"
	"github.com/combmq/comb/meta"
	"github.com/combmq/comb/record"
)

// PartInfo names a partition (or, with Name "(dlq)", a queue's dead-letter log) for reports.
type PartInfo struct {
	ID, QueueID [16]byte
	Queue, Name string
}

// Meta is the metadata journal (package meta) as read: the registry it names
// and, for a check, what follows its valid records and what a rebuild keeps.
type Meta struct {
	Present    bool // meta/journal exists
	Queues     map[[16]byte]string
	Partitions map[[16]byte]PartInfo
	File       string // relative to the data directory
	Bytes      int64
	ValidBytes int64       // length of the valid records; Tail says what follows
	Tail       record.Tail // TailCorrupt: damage before valid records (Err says where)
	Err        error
	Legacy     bool              // a version 1 journal (the server upgrades it on start)
	Records    []meta.Record     // the valid records, what a rebuild keeps
	Salvaged   []meta.Record     // records after damage that still verify (TailCorrupt)
	Deleted    map[[16]byte]bool // ids of deleted queues and their partitions
	// Covers is the commit-log LSN the journal (a snapshot) covers; the
	// commit log's metadata entries after it are part of the registry
	// (ApplyCommitLog), FromCommitLog of them.
	Covers        uint64
	FromCommitLog int
	// State is the registry Queues and Partitions are taken from (nil when
	// nothing was read): each queue's configuration.
	State *meta.State
}

// ReadMeta reads the metadata journal (<data>/meta/journal) read-only with
// meta.Read: queue and partition names, what follows the valid records, and
// what a rebuild can keep. A missing journal is an empty registry; the error
// is what meta.Read refuses.
func ReadMeta(dataDir string) (*Meta, error) {
	v := &Meta{Queues: map[[16]byte]string{}, Partitions: map[[16]byte]PartInfo{}}
	m, err := meta.Read(nil, dataDir)
	if meta.IsMissing(err) {
		return v, nil
	}
	if err != nil {
		return nil, err
	}
	v.Present, v.File = true, filepath.Join(layout.Meta, meta.JournalFile)
	v.Bytes, v.ValidBytes, v.Tail, v.Err, v.Legacy = m.Bytes, m.ValidBytes, m.Tail, m.Err, m.Legacy
	v.Records, v.Salvaged = m.Records, m.Salvaged
	v.setState(m.State)
	return v, nil
}

// setState makes st the registry v names.
func (v *Meta) setState(st *meta.State) {
	v.State, v.Covers, v.Deleted = st, st.Covers, st.Deleted
	v.Queues, v.Partitions = map[[16]byte]string{}, map[[16]byte]PartInfo{}
	for _, q := range st.Queues {
		v.Queues[q.ID] = q.Name
	}
	for _, p := range st.Partitions {
		v.Partitions[p.ID] = PartInfo{ID: p.ID, QueueID: p.QueueID, Queue: st.QueueByID[p.QueueID].Name, Name: p.Name}
	}
}

// ApplyCommitLog adds the metadata entries the commit log holds after the
// snapshot's covers LSN (WAL.Meta), as the server's start-up does
// (broker/open.go, scanCommitLog): queues and partitions made, changed or
// deleted since the last flush pass are then named.
func (v *Meta) ApplyCommitLog(recs []meta.Record) {
	if len(recs) == 0 {
		return
	}
	st := v.State
	if st == nil {
		st = meta.Apply(nil)
	}
	v.FromCommitLog = len(recs)
	v.setState(meta.Apply(append(st.Records(), recs...)))
}
