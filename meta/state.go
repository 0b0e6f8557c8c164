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
			if s.QueueByID[r.ID] == nil {
				continue
			}
			delete(s.QueueByID, r.ID)
			s.Deleted[r.ID] = true
			for id, p := range s.PartByID {
				if p.QueueID == r.ID {
					delete(s.PartByID, id)
					s.Deleted[id] = true
				}
			}
		case KindDescribed:
			s.Described = true
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

// Records returns the records that rebuild s from nothing: one put per
// queue, one create per partition (and the described mark). Deletions are
// not carried: the result names only what is live.
func (s *State) Records() []Record {
	out := make([]Record, 0, len(s.Queues)+len(s.Partitions)+1)
	for _, q := range s.Queues {
		out = append(out, Record{Kind: KindQueuePut, ID: q.ID, CreatedAt: q.CreatedAt, Name: q.Name, Namespace: q.Namespace, Task: q.Task, Opts: q.Opts})
	}
	for _, p := range s.Partitions {
		out = append(out, Record{Kind: KindPartitionCreate, ID: p.ID, QueueID: p.QueueID, CreatedAt: p.CreatedAt, Name: p.Name})
	}
	if s.Described {
		out = append(out, Record{Kind: KindDescribed})
	}
	return out
}
