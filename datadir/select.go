package datadir

import (
	"fmt"

	"github.com/google/uuid"
)

// SelectLogs returns the log directories a filter selects, with their names by
// LogDir.Rel: those on disk, and those of live partitions and queues only the
// commit log holds records of (their directory is made at the server's next
// start). partitionID (a directory name) wins over queue and partition names;
// names need the metadata (v.Meta); dlq adds the dead-letter logs of the
// selected queues. A filter that selects nothing returns an error wrapping
// ErrNotFound.
func SelectLogs(dataDir string, v *View, queue, partition, partitionID string, dlq bool) ([]LogDir, map[string]PartInfo, error) {
	all, err := ListLogs(dataDir)
	if err != nil {
		return nil, nil, err
	}
	all = append(all, v.WALOnlyLogs(dataDir, all)...)
	meta := v.Meta
	names := map[string]PartInfo{}
	for _, d := range all {
		if meta == nil {
			continue
		}
		if d.DLQ {
			names[d.Rel] = PartInfo{ID: d.ID, QueueID: d.ID, Queue: meta.Queues[d.ID], Name: "(dlq)"}
		} else if p, ok := meta.Partitions[d.ID]; ok {
			names[d.Rel] = p
		}
	}
	var out []LogDir
	switch {
	case partitionID != "":
		id, err := uuid.Parse(partitionID)
		if err != nil {
			return nil, nil, fmt.Errorf("partition id %q: %w", partitionID, err)
		}
		for _, d := range all {
			if d.ID == id && !d.DLQ {
				out = append(out, d)
			}
		}
	case queue != "" || partition != "":
		if meta == nil {
			return nil, nil, fmt.Errorf("selecting by queue or partition name needs the metadata journal: %w (use --partition-id)", v.MetaErr)
		}
		for _, d := range all {
			n := names[d.Rel]
			if (queue == "" || n.Queue == queue) && (partition == "" || (!d.DLQ && n.Name == partition)) && (!d.DLQ || dlq) {
				out = append(out, d)
			}
		}
	default:
		for _, d := range all {
			if !d.DLQ || dlq {
				out = append(out, d)
			}
		}
	}
	if len(out) == 0 && (partitionID != "" || queue != "" || partition != "") {
		return nil, nil, fmt.Errorf("queue %q partition %q id %q: %w", queue, partition, partitionID, ErrNotFound)
	}
	return out, names, nil
}
