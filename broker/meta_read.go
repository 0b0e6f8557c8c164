package broker

import (
	"fmt"
	"os"
	"path/filepath"
)

// Metadata is the metadata journal as ReadMetadata decoded it: the registry a
// broker opening the directory would rebuild, plus what its recovery would do
// to the file.
type Metadata struct {
	Queues     []MetaQueue                // live queues, in the order they were created
	Partitions map[[16]byte]MetaPartition // live partitions by partition id
	File       string                     // the journal's path
	Bytes      int64                      // file size
	ValidBytes int64                      // length of the valid prefix; bytes past it are a torn tail Open truncates, unless DamageMidFile
	// DamageMidFile: the bytes past ValidBytes are not a torn tail (a valid
	// record follows the damage, or a record passes its checksum but does not
	// decode): Open refuses with ErrCorrupt. Err says where.
	DamageMidFile bool
	Err           error // wraps ErrCorrupt when DamageMidFile; nil otherwise
}

// MetaQueue is one live queue of the metadata journal.
type MetaQueue struct {
	ID                    [16]byte
	Name, Namespace, Task string
	CreatedAtMicros       int64
	Options               QueueOptions
}

// MetaPartition is one live partition of the metadata journal.
type MetaPartition struct {
	ID, QueueID     [16]byte
	Queue, Name     string // queue name, partition name
	CreatedAtMicros int64
}

// ReadMetadata decodes <dataDir>/meta/journal without writing anything (no
// lock taken, nothing truncated or created), for offline tools (comb fsck,
// dump, replay). Records past the valid prefix are not applied. A journal
// that does not exist returns an error wrapping fs.ErrNotExist; damage is
// reported in the result (ValidBytes, DamageMidFile, Err), not as an error.
// Safe to call while a broker runs on the directory: it sees a prefix of
// what is durable, possibly ending in a record being written (a torn tail).
func ReadMetadata(dataDir string) (*Metadata, error) {
	path := filepath.Join(dataDir, "meta", "journal")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("metadata journal: %w", err)
	}
	sc := scanMetaFrames(data)
	m := &Metadata{File: path, Bytes: int64(len(data)), ValidBytes: sc.valid,
		Partitions: map[[16]byte]MetaPartition{}}
	if m.Err = sc.damage(path); m.Err != nil {
		m.DamageMidFile = true
	}
	queues := map[[16]byte]int{} // id → index in m.Queues
	for _, r := range sc.records {
		switch r.Kind {
		case metaQueuePut:
			if i, ok := queues[r.ID]; ok { // reconfigured: the name and createdAt stay
				q := &m.Queues[i]
				q.Namespace, q.Task, q.Options = r.Namespace, r.Task, r.Opts
				continue
			}
			queues[r.ID] = len(m.Queues)
			m.Queues = append(m.Queues, MetaQueue{ID: r.ID, Name: r.Name, Namespace: r.Namespace, Task: r.Task,
				CreatedAtMicros: r.CreatedAt, Options: r.Opts})
		case metaPartitionCreate:
			m.Partitions[r.ID] = MetaPartition{ID: r.ID, QueueID: r.QueueID, Name: r.Name, CreatedAtMicros: r.CreatedAt}
		case metaQueueDelete:
			if i, ok := queues[r.ID]; ok {
				m.Queues = append(m.Queues[:i], m.Queues[i+1:]...)
				delete(queues, r.ID)
				for id, j := range queues {
					if j > i {
						queues[id] = j - 1
					}
				}
			}
			for id, p := range m.Partitions {
				if p.QueueID == r.ID {
					delete(m.Partitions, id)
				}
			}
		}
	}
	for id, p := range m.Partitions {
		i, ok := queues[p.QueueID]
		if !ok {
			continue // a partition of an unknown queue: Open refuses it; the caller sees the empty name
		}
		p.Queue = m.Queues[i].Name
		m.Partitions[id] = p
	}
	return m, nil
}
