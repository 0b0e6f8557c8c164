package broker

import (
	"sync/atomic"
	"time"
)

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
	// ReadIndex returns nil once every entry proposed before the call is
	// committed and a quorum confirmed this node still leads (read_linear.go).
	ReadIndex() error
	// Role is "leader" or "follower"; Leader the current leader's node id
	// and raft address ("" when none is known).
	Role() string
	Leader() (id, addr string)
	// LeaderSince is when this node was elected (zero when it does not
	// lead); LeaderLeaseTimeout how long a deposed leader may still act as
	// one. Together they give the fencing wait (follow_fence.go).
	LeaderSince() time.Time
	LeaderLeaseTimeout() time.Duration
	// LeaderTerms is how many times this node became the ready leader.
	LeaderTerms() uint64
	// Stale is closed when this node must restart (it lost its leadership
	// after it could append, before Leading reports false; or it received
	// another node's snapshot): follow_commit.go.
	Stale() <-chan struct{}
}

// replicatedLog adapts a ReplicatedLog to commitLog, timing each ticket's
// first wait into hist (comb_raft_commit_latency_seconds).
type replicatedLog struct {
	ReplicatedLog
	hist *syncHist
}

type replicatedTicket struct {
	lsn   uint64
	wait  func() error
	start time.Time
	hist  *syncHist
	timed *atomic.Bool
}

func (t replicatedTicket) Wait() error {
	err := t.wait()
	if err == nil && t.timed.CompareAndSwap(false, true) {
		t.hist.observe(time.Since(t.start).Microseconds())
	}
	return err
}

func (t replicatedTicket) LSN() uint64 { return t.lsn }

func (r replicatedLog) Append(kind byte, payload []byte) (walTicket, error) {
	start := time.Now()
	lsn, wait, err := r.ReplicatedLog.Append(kind, payload)
	if err != nil {
		return nil, err
	}
	return replicatedTicket{lsn: lsn, wait: wait, start: start, hist: r.hist, timed: new(atomic.Bool)}, nil
}
