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
	v.Records, v.Salvaged, v.Deleted = m.Records, m.Salvaged, m.Deleted
	for _, q := range m.Queues {
		v.Queues[q.ID] = q.Name
	}
	for _, p := range m.Partitions {
		v.Partitions[p.ID] = partInfo{ID: p.ID, QueueID: p.QueueID, Queue: m.QueueByID[p.QueueID].Name, Name: p.Name}
	}
	return v, nil
}
