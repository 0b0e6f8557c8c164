package replica

import (
	"fmt"

	"github.com/hashicorp/raft"
)

// lastAppend is the newest entry Append proposed: its LSN and raft's future.
type lastAppend struct {
	lsn uint64
	f   raft.ApplyFuture
}

// ReadIndex returns nil once every entry this node proposed before the call
// is committed and applied here, and a quorum has confirmed after that that
// this node still leads, in the same term (raft's VerifyLeader): the
// leader's side of a linearizable read (issue 22, docs/replication.md
// "Reads"). It is raft's ReadIndex idea turned around for a leader whose
// handlers change its memory before their entries commit: the caller reads
// its memory first, then calls ReadIndex, so what it saw (the effects of
// entries proposed before the call) is committed before it answers, and no
// other node can have led in between (a quorum that confirms this node
// cannot have elected another).
//
// Cost: waiting for the entries in flight, and one heartbeat round trip to a
// quorum (raft sends it at once; concurrent calls share rounds). Both are
// bounded by raft: a leader cut off from its quorum steps down after
// LeaderLeaseTimeout, which fails both waits.
//
// Errors: ErrNotLeader (wrapped with raft's reason) when this node does not
// lead, lost its term meanwhile, or could not confirm it; a *CommitError when
// the newest entry failed to commit (leadership lost: its fate is the next
// leader's). Both are retryable.
func (l *Log) ReadIndex() error {
	if l.r == nil || !l.ready.Load() {
		return ErrNotLeader
	}
	terms := l.leaders.Load()
	if last := l.last.Load(); last != nil {
		if err := last.f.Error(); err != nil {
			return &CommitError{LSN: last.lsn, Err: err}
		}
	}
	if err := l.r.VerifyLeader().Error(); err != nil {
		return fmt.Errorf("%w: %v", ErrNotLeader, err)
	}
	if !l.ready.Load() || l.leaders.Load() != terms {
		return ErrNotLeader
	}
	return nil
}
