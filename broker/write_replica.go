package broker

import "time"

// ReplicatedLog is a commit log replicated across nodes (package replica's
// *Log): the same contract as the local one (write_wal.go's commitLog), with
// the ticket spelled as an LSN and a wait. Append fails on a node that is not
// the leader; Read visits nothing (raft applies a node's missing entries
// again after a start, through ApplyReplicated).
type ReplicatedLog interface {
	Append(kind byte, payload []byte) (lsn uint64, wait func() error, err error)
	Read(from uint64, fn func(lsn uint64, kind byte, payload []byte) error) error
	DurableLSN() uint64
	FirstLSN() uint64
	TruncateBefore(lsn uint64) error
	RetainedBytes() int64
	Err() error
	Close() error
	// NumberFrom says the broker's state covers every LSN below start (its
	// snapshots): the log's LSNs never go back below it.
	NumberFrom(start uint64)
	// Leading reports whether this node appends (the ready leader).
	Leading() bool
	// Role is "leader" or "follower"; Leader the current leader's node id
	// and raft address ("" when none is known).
	Role() string
	Leader() (id, addr string)
	// LeaderSince is when this node was elected (zero when it does not
	// lead); LeaderLeaseTimeout how long a deposed leader may still act as
	// one. Together they give the fencing wait (follow_fence.go).
	LeaderSince() time.Time
	LeaderLeaseTimeout() time.Duration
}

// replicatedLog adapts a ReplicatedLog to commitLog.
type replicatedLog struct{ ReplicatedLog }

type replicatedTicket struct {
	lsn  uint64
	wait func() error
}

func (t replicatedTicket) Wait() error { return t.wait() }
func (t replicatedTicket) LSN() uint64 { return t.lsn }

func (r replicatedLog) Append(kind byte, payload []byte) (walTicket, error) {
	lsn, wait, err := r.ReplicatedLog.Append(kind, payload)
	if err != nil {
		return nil, err
	}
	return replicatedTicket{lsn, wait}, nil
}
