package commitlog

import (
	"sync"
	"time"
)

// syncGate tells other writers of the device when the committer is writing
// and syncing a batch (SyncAlways), so that they can start their own syncs
// between the log's (AwaitSync; the broker's flush pass, issue 23). The
// committer pays two uncontended locks per batch; a channel is made only
// when someone waits.
type syncGate struct {
	mu   sync.Mutex
	busy bool          // a batch's write and sync are in flight
	done chan struct{} // closed when they end; nil until a waiter asks
}

// begin marks a batch's write and sync in flight.
func (g *syncGate) begin() {
	g.mu.Lock()
	g.busy = true
	g.mu.Unlock()
}

// end marks them over and wakes the waiters.
func (g *syncGate) end() {
	g.mu.Lock()
	g.busy = false
	if g.done != nil {
		close(g.done)
		g.done = nil
	}
	g.mu.Unlock()
}

// wait returns a channel closed when the batch in flight ends, nil when none
// is.
func (g *syncGate) wait() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.busy {
		return nil
	}
	if g.done == nil {
		g.done = make(chan struct{})
	}
	return g.done
}

// AwaitSync waits until the batch the committer is writing and syncing when
// it is called (SyncAlways: its write, its fdatasync, and the sync of the
// previous file when it enters a new one) is done, for at most max. It
// reports true when none was in flight or it finished in time, false when
// max passed first. Under SyncInterval and SyncNever no acknowledgement
// waits on a sync, and it returns true at once.
//
// For another writer of the same device that can choose when to sync (the
// broker's flush pass, segment.Committer.SetYield): starting its fdatasync
// just after the log's lets the log's next one queue behind one sync, not
// behind many. It does not wait for the next batch: a caller under
// continuous load waits at most one batch (or max). Safe for concurrent
// use; costs one lock when nothing is in flight.
func (l *Log) AwaitSync(max time.Duration) bool {
	ch := l.gate.wait()
	if ch == nil {
		return true
	}
	if max <= 0 {
		return false
	}
	t := time.NewTimer(max)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}
