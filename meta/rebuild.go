package meta

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"

	"github.com/combmq/comb/layout"
	"github.com/combmq/comb/vfs"
)

// Directories under the data directory that hold one log each, named by id.
const (
	PartitionsDir = layout.Partitions
	DLQDir        = layout.DLQ
)

// RebuildReport says what Rebuild recovered and what it could not.
type RebuildReport struct {
	Kept       int      // records carried over from the old journal
	Queues     []string // queues recovered from descriptors: their options are the defaults
	Partitions []string // "queue/partition (id)" recovered from descriptors
	// Undescribed are directories (relative to the data directory) that the
	// journal does not name and that carry no readable descriptor: made
	// before descriptors existed, or with a damaged one. A person decides.
	Undescribed []string
	// Conflicts are directories whose descriptor names a queue the journal
	// holds under another id (a queue deleted and made again, its delete
	// record lost?). A person decides.
	Conflicts []string
}

// Rebuild returns the records of a journal that names every partition and
// DLQ directory of dataDir that has a descriptor: survived (what a lost, cut
// or damaged journal still held, in order), then a queue put for each queue
// only a descriptor knows (name, labels and creation time from it, options
// the defaults) and a partition create for each partition only a descriptor
// knows. Directories of queues survived deleted are left out (the broker
// removes them). Nothing is written.
//
// Errors: the file system's, wrapped, when a directory cannot be listed.
func Rebuild(fsys vfs.FS, dataDir string, survived []Record) ([]Record, *RebuildReport, error) {
	if fsys == nil {
		fsys = vfs.OS
	}
	st := Apply(survived)
	rep := &RebuildReport{Kept: len(survived)}
	byName := map[string][16]byte{}
	for _, q := range st.Queues {
		byName[q.Name] = q.ID
	}
	var queues, parts []Record
	newQueue := map[[16]byte]bool{}
	for _, sub := range []string{PartitionsDir, DLQDir} {
		names, err := fsys.List(filepath.Join(dataDir, sub))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("meta: rebuild: %w", err)
		}
		for _, name := range names {
			id, ok := ParseID(name)
			if !ok || st.Deleted[id] || (sub == PartitionsDir && st.PartByID[id] != nil) || (sub == DLQDir && st.QueueByID[id] != nil) {
				continue
			}
			rel := filepath.Join(sub, name)
			d, err := ReadDescriptor(fsys, filepath.Join(dataDir, rel))
			if err == nil {
				err = d.CheckDir(sub == DLQDir, id)
			}
			if err != nil {
				rep.Undescribed = append(rep.Undescribed, rel)
				continue
			}
			if other, ok := byName[d.Queue]; ok && other != d.QueueID {
				rep.Conflicts = append(rep.Conflicts, fmt.Sprintf("%s: queue %q is %s in the journal, %s in the descriptor", rel, d.Queue, IDString(other), IDString(d.QueueID)))
				continue
			}
			if st.QueueByID[d.QueueID] == nil && !newQueue[d.QueueID] {
				newQueue[d.QueueID] = true
				byName[d.Queue] = d.QueueID
				queues = append(queues, Record{Kind: KindQueuePut, ID: d.QueueID, CreatedAt: d.QueueCreatedAt, Name: d.Queue,
					Namespace: d.Namespace, Task: d.Task, Opts: DefaultQueueOptions()})
				rep.Queues = append(rep.Queues, d.Queue)
			}
			if d.Kind == DescribesPartition {
				parts = append(parts, Record{Kind: KindPartitionCreate, ID: d.PartitionID, QueueID: d.QueueID, CreatedAt: d.PartitionCreated, Name: d.Partition})
				rep.Partitions = append(rep.Partitions, fmt.Sprintf("%s/%s (%s)", d.Queue, d.Partition, IDString(d.PartitionID)))
			}
		}
	}
	sort.SliceStable(queues, func(i, j int) bool { return queues[i].CreatedAt < queues[j].CreatedAt })
	sort.SliceStable(parts, func(i, j int) bool { return parts[i].CreatedAt < parts[j].CreatedAt })
	out := append(append(append([]Record(nil), survived...), queues...), parts...)
	return out, rep, nil
}

// WriteJournal replaces <dir>/journal with recs, atomically (temporary file,
// fdatasync, rename, directory fsync): after a crash the directory holds the
// old journal or the new one.
//
// Errors: ErrRecordTooLarge, or the file system's, wrapped with the path.
func WriteJournal(fsys vfs.FS, dir string, recs []Record, noSync bool) error {
	if fsys == nil {
		fsys = vfs.OS
	}
	var b []byte
	for i := range recs {
		var err error
		if b, err = recs[i].appendFrame(b); err != nil {
			return fmt.Errorf("metadata journal: record %d: %w", i, err)
		}
	}
	if err := fsys.MkdirAll(dir); err != nil {
		return fmt.Errorf("metadata journal: %w", err)
	}
	return vfs.WriteFileAtomic(fsys, filepath.Join(dir, JournalFile), b, noSync)
}
