package fsck

import (
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/combmq/comb/broker"
)

// readMeta reads the broker's metadata journal (<data>/meta/journal) read-only with
// broker.ReadMetadata: queue and partition names, and whether bytes past the valid
// prefix are a torn tail (Open truncates it) or damage Open refuses (MidFile). A
// variable so tests can name partitions without a journal.
var readMeta = readMetaJournal

// metaJournalFile is the journal's name inside dirMeta (broker/doc.go).
const metaJournalFile = "journal"

func readMetaJournal(dataDir string) (*metaView, error) {
	v := &metaView{Queues: map[[16]byte]string{}, Partitions: map[[16]byte]partInfo{}}
	m, err := broker.ReadMetadata(dataDir)
	if errors.Is(err, fs.ErrNotExist) {
		return v, nil
	}
	if err != nil {
		return nil, err
	}
	v.Present, v.File = true, filepath.Join(dirMeta, metaJournalFile)
	v.Bytes, v.ValidBytes, v.MidFile = m.Bytes, m.ValidBytes, m.DamageMidFile
	for _, q := range m.Queues {
		v.Queues[q.ID] = q.Name
	}
	for id, p := range m.Partitions {
		v.Partitions[id] = partInfo{ID: id, QueueID: p.QueueID, Queue: p.Queue, Name: p.Name}
	}
	return v, nil
}
