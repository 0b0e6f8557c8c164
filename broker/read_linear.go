package broker

import "fmt"

// Linearizable reads on a replicated node (issue 22, docs/replication.md
// "Reads"). A leader changes its memory before the entry that carries the
// change commits: an ack moves a cursor at once and its checkpoint follows
// within CheckpointInterval; a pop's claim, a seek, a transaction's states
// likewise. A read answered from that memory could show a change the cluster
// never commits (the leader is cut off, the ack fails 503, the next leader
// shows the old cursor: a cursor that went back). So a read on a cluster
// node reads its memory as on a single node, then calls ReadBarrier before
// it answers: what it saw is then committed, and this node still led when
// it confirmed it.

// ReadBarrier returns nil once everything a read of this node's memory made
// before the call may have seen is committed, and a quorum has confirmed
// that this node still leads: the caller (httpapi, after a read route's
// handler built its answer) may then send that answer. On a single node it
// returns nil at once and costs a nil check.
//
// It waits for a checkpoint holding every cursor and lease change made so
// far (cursor.Engine.Wait: at once, not on the 5 ms tick), then for the newest
// entry proposed before and a heartbeat round to a quorum
// (ReplicatedLog.ReadIndex). A leader cut off from its quorum fails it
// within raft's LeaderLeaseTimeout, when it steps down.
//
// Errors: ErrClosed; ErrNotLeader (wrapped with the reason) when this node
// does not lead, lost its term meanwhile, could not confirm its leadership,
// or the changes it saw failed to commit. The answer is then a 503.
func (b *Broker) ReadBarrier() error {
	r := b.cfg.Replicated
	if r == nil {
		return nil
	}
	if err := b.enter(); err != nil {
		return err
	}
	defer b.leave()
	if !r.Leading() || b.isStale() {
		return ErrNotLeader
	}
	terms := r.LeaderTerms()
	if err := b.cur.Wait(); err != nil {
		return fmt.Errorf("%w: the cursor changes a read saw did not commit: %v", ErrNotLeader, err)
	}
	if err := r.ReadIndex(); err != nil {
		return fmt.Errorf("%w: %v", ErrNotLeader, err)
	}
	if r.LeaderTerms() != terms || b.isStale() {
		return ErrNotLeader
	}
	return nil
}
