package meta

// State is the registry a sequence of records describes.
type State struct {
	Queues     []*Queue            // live queues, in creation order
	QueueByID  map[[16]byte]*Queue // live queues by id
	Partitions []*Partition        // live partitions, in creation order
	PartByID   map[[16]byte]*Partition
	// Deleted holds the ids of deleted queues and of every partition such a
	// queue had: directories the broker may remove (finishing a delete).
	Deleted map[[16]byte]bool
	// Described is true once a KindDescribed record was applied: every
	// directory made before it carries a DESCRIPTOR.
	Described bool
	// Covers is the LSN of the commit log up to which the records describe
	// the registry (a KindCovers record; 0 = none: replay every meta entry).
	Covers uint64
}

// Queue is one live queue.
type Queue struct {
	ID                    [16]byte
	Name, Namespace, Task string
	CreatedAt             int64 // µs
	Opts                  QueueOptions
}

// Partition is one live partition.
type Partition struct {
	ID, QueueID [16]byte
	Name        string
	CreatedAt   int64 // µs
}

// Apply returns the state recs describe. A re-put queue keeps its name and
// creation time and takes the new labels and options (a whole replace, spec
// 2.1); a partition of a queue that does not exist (yet) is ignored.
func Apply(recs []Record) *State {
	s := &State{QueueByID: map[[16]byte]*Queue{}, PartByID: map[[16]byte]*Partition{}, Deleted: map[[16]byte]bool{}}
	var order []*Queue
	var parts []*Partition
	for _, r := range recs {
		switch r.Kind {
		case KindQueuePut:
			if q := s.QueueByID[r.ID]; q != nil {
				q.Namespace, q.Task, q.Opts = r.Namespace, r.Task, r.Opts
				continue
			}
			q := &Queue{ID: r.ID, Name: r.Name, Namespace: r.Namespace, Task: r.Task, CreatedAt: r.CreatedAt, Opts: r.Opts}
			s.QueueByID[r.ID] = q
			order = append(order, q)
			delete(s.Deleted, r.ID)
		case KindPartitionCreate:
			if s.QueueByID[r.QueueID] == nil || s.PartByID[r.ID] != nil {
				continue
			}
			p := &Partition{ID: r.ID, QueueID: r.QueueID, Name: r.Name, CreatedAt: r.CreatedAt}
			s.PartByID[r.ID] = p
			parts = append(parts, p)
		case KindQueueDelete:
			s.Deleted[r.ID] = true // a tombstone, even of a queue not (or no longer) described
			if s.QueueByID[r.ID] == nil {
				continue
			}
			delete(s.QueueByID, r.ID)
			for id, p := range s.PartByID {
				if p.QueueID == r.ID {
					delete(s.PartByID, id)
					s.Deleted[id] = true
				}
			}
		case KindDescribed:
			s.Described = true
		case KindCovers:
			s.Covers = r.LSN
		}
	}
	for _, q := range order {
		if s.QueueByID[q.ID] == q {
			s.Queues = append(s.Queues, q)
		}
	}
	for _, p := range parts {
		if s.PartByID[p.ID] == p {
			s.Partitions = append(s.Partitions, p)
		}
	}
	return s
}

// Records returns the records that rebuild s from nothing: the covers mark,
// one put per queue, one create per partition, the described mark, and a
// delete (tombstone) per deleted queue, so that a directory a crash left of
// a deleted queue is still recognised as one.
func (s *State) Records() []Record {
	out := make([]Record, 0, len(s.Queues)+len(s.Partitions)+len(s.Deleted)+2)
	if s.Covers != 0 {
		out = append(out, Record{Kind: KindCovers, LSN: s.Covers})
	}
	for _, q := range s.Queues {
		out = append(out, Record{Kind: KindQueuePut, ID: q.ID, CreatedAt: q.CreatedAt, Name: q.Name, Namespace: q.Namespace, Task: q.Task, Opts: q.Opts})
	}
	for _, p := range s.Partitions {
		out = append(out, Record{Kind: KindPartitionCreate, ID: p.ID, QueueID: p.QueueID, CreatedAt: p.CreatedAt, Name: p.Name})
	}
	if s.Described {
		out = append(out, Record{Kind: KindDescribed})
	}
	for id := range s.Deleted {
		if s.PartByID[id] == nil && s.QueueByID[id] == nil {
			out = append(out, Record{Kind: KindQueueDelete, ID: id})
		}
	}
	return out
}
