package broker

import (
	"sync/atomic"
	"time"

	"github.com/combmq/comb/lsn"
)

// ReplicatedLog is a commit log replicated across nodes (package replica's
// *Log): the same contract as the local one (write_wal.go's commitLog), with
// the same ticket (package lsn's). Append fails on a node that is not
// the leader; Read visits nothing (raft applies a node's missing entries
// again after a start, through ApplyReplicated).
type ReplicatedLog interface {
	Append(kind byte, payload []byte) (lsn.Ticket, error)
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

// timedWait is the Waiter of a replicated entry's ticket: the log's own
// wait, its first success timed into hist from the append.
type timedWait struct {
	t     lsn.Ticket
	start time.Time
	hist  *syncHist
	timed atomic.Bool
}

func (w *timedWait) Wait() error {
	err := w.t.Wait()
	if err == nil && w.timed.CompareAndSwap(false, true) {
		w.hist.observe(time.Since(w.start).Microseconds())
	}
	return err
}

func (r replicatedLog) Append(kind byte, payload []byte) (walTicket, error) {
	start := time.Now()
	t, err := r.ReplicatedLog.Append(kind, payload)
	if err != nil {
		return walTicket{}, err
	}
	return lsn.NewTicket(t.LSN, &timedWait{t: t, start: start, hist: r.hist}), nil
}
