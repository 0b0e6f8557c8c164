package broker

import (
	"errors"

	"github.com/combmq/comb/commitlog"
)

// Healthy reports whether the broker is open and its journals accept writes:
// false once closed, or once cursor checkpoints cannot be made durable until
// a restart (a failed write or fdatasync of the commit log; see
// CheckpointFailure). A full disk is not unhealthy
// but degraded: the broker answers 5xx to what it cannot make durable and
// recovers by itself once space is freed.
func (b *Broker) Healthy() bool {
	if b.closed.Load() || b.cur == nil {
		return false
	}
	f, failing := b.CheckpointFailure()
	return !failing || !f.Sticky
}

// CheckpointFailure is why consumption cannot be made durable right now (GET
// /health reports it).
type CheckpointFailure struct {
	// Reason is the failed checkpoint's error (cursor.CheckpointError: the
	// commit log's append or its wait), e.g. a full disk's "no space left on
	// device".
	Reason      string
	SinceMicros int64 // when checkpoints started failing
	// Sticky: a journal fdatasync failed; only a restart brings consumption
	// back (Healthy is false). Otherwise the broker retries by itself.
	Sticky bool
}

// CheckpointFailure reports whether cursor checkpoints are failing now (from a
// failed checkpoint until the next good one): pops, acks, lease extensions,
// seeks and transactions answer 5xx meanwhile and claim nothing.
func (b *Broker) CheckpointFailure() (CheckpointFailure, bool) {
	if b.cur == nil {
		return CheckpointFailure{}, false
	}
	if err := b.wal.Err(); err != nil {
		since := b.walFailSince.Load()
		if since == 0 {
			b.walFailSince.CompareAndSwap(0, b.now().UnixMicro())
			since = b.walFailSince.Load()
		}
		return CheckpointFailure{Reason: "commit log: " + err.Error(), SinceMicros: since,
			Sticky: errors.Is(err, commitlog.ErrFailed)}, true
	}
	b.walFailSince.Store(0)
	f, failing := b.cur.Failure()
	if !failing {
		return CheckpointFailure{}, false
	}
	return CheckpointFailure{Reason: f.Err.Error(), SinceMicros: f.Since.UnixMicro(), Sticky: f.Sticky}, true
}

// ReplicationStatus is a replicated node's place in its cluster (GET
// /health, issue 15).
type ReplicationStatus struct {
	Role       string // "leader" or "follower"
	LeaderID   string // "" while no leader is known
	LeaderAddr string // the leader's raft address
	AppliedLSN uint64 // the highest LSN committed and applied here
	// LeaderTerms is how many times this node became the ready leader
	// since start (comb_raft_leader_changes_total).
	LeaderTerms uint64
	// CommitLatency: every waited entry from its append to committed and
	// applied here, since start.
	CommitLatency LatencyHistogram
}

// Replication reports the node's role and its leader; false on a single
// node (Config.Replicated nil).
func (b *Broker) Replication() (ReplicationStatus, bool) {
	r := b.cfg.Replicated
	if r == nil {
		return ReplicationStatus{}, false
	}
	id, addr := r.Leader()
	return ReplicationStatus{Role: r.Role(), LeaderID: id, LeaderAddr: addr, AppliedLSN: r.DurableLSN(),
		LeaderTerms: r.LeaderTerms(), CommitLatency: b.commitHist.snapshot()}, true
}
