package fsck

import (
	"path/filepath"

	"github.com/combmq/comb/meta"
)

// readMeta reads the metadata journal (<data>/meta/journal) read-only with
// meta.Read: queue and partition names, what follows the valid records, and
// what a rebuild can keep. A variable so tests can name partitions without a
// journal.
var readMeta = readMetaJournal

// metaJournalFile is the journal's name inside dirMeta.
const metaJournalFile = meta.JournalFile

func readMetaJournal(dataDir string) (*metaView, error) {
	v := &metaView{Queues: map[[16]byte]string{}, Partitions: map[[16]byte]partInfo{}}
	m, err := meta.Read(nil, dataDir)
	if meta.IsMissing(err) {
		return v, nil
	}
	if err != nil {
		return nil, err
	}
	v.Present, v.File = true, filepath.Join(dirMeta, metaJournalFile)
	v.Bytes, v.ValidBytes, v.Tail, v.Err, v.Legacy = m.Bytes, m.ValidBytes, m.Tail, m.Err, m.Legacy
	v.Records, v.Salvaged = m.Records, m.Salvaged
	v.setState(m.State)
	return v, nil
}

// setState makes st the registry v names.
func (v *metaView) setState(st *meta.State) {
	v.state, v.Covers, v.Deleted = st, st.Covers, st.Deleted
	v.Queues, v.Partitions = map[[16]byte]string{}, map[[16]byte]partInfo{}
	for _, q := range st.Queues {
		v.Queues[q.ID] = q.Name
	}
	for _, p := range st.Partitions {
		v.Partitions[p.ID] = partInfo{ID: p.ID, QueueID: p.QueueID, Queue: st.QueueByID[p.QueueID].Name, Name: p.Name}
	}
}

// applyCommitLog adds the metadata entries the commit log holds after the
// snapshot's covers LSN, as the server's start-up does (broker/open.go,
// scanCommitLog): queues and partitions made, changed or deleted since the
// last flush pass are then named.
func (v *metaView) applyCommitLog(recs []meta.Record) {
	if len(recs) == 0 {
		return
	}
	st := v.state
	if st == nil {
		st = meta.Apply(nil)
	}
	v.FromCommitLog = len(recs)
	v.setState(meta.Apply(append(st.Records(), recs...)))
}
