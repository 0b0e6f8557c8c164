package broker

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/combmq/comb/segment"
)

// createPartition makes a new partition's log: a mkdir and a stat
// (segment.Create), no listing and no file until its first append. The
// directory's entry in <data>/partitions is not synced here: createPartitions
// syncs that directory once for all the partitions of a request.
func (b *Broker) createPartition(q *queue, id [16]byte, name string, createdAt int64) (*partition, error) {
	idStr := uuidString(id)
	l, err := segment.Create(filepath.Join(b.dir, "partitions", idStr), b.segOpts)
	if err != nil {
		return nil, fmt.Errorf("broker: queue %s partition %s (%s): %w", q.name, name, idStr, err)
	}
	p := &partition{id: id, idStr: idStr, name: name, q: q, createdAt: createdAt, log: l}
	p.visible.Store(l.NextOffset())
	return p, nil
}

// syncPartitionsDir makes the new partition directories' entries durable
// (one fsync for every partition a request created) before their metadata
// record is journaled: a partition a 201 answer names survives a crash with
// its directory, whatever the sync policy but never.
func (b *Broker) syncPartitionsDir() error {
	if b.noSync() {
		return nil
	}
	return syncDir(filepath.Join(b.dir, "partitions"))
}

// ensurePartitionsDir creates <data>/partitions at Open, so creating a
// partition is a single mkdir.
func (b *Broker) ensurePartitionsDir() error {
	if err := os.MkdirAll(filepath.Join(b.dir, "partitions"), 0o755); err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	return nil
}
