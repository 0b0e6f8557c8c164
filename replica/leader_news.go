package replica

import (
	"sync"

	"github.com/hashicorp/raft"
)

// news hands waiters a channel that the next fire closes: the wake-up of
// whoever waits for LeaderHTTP's answer to change (LeaderChanged). A
// waiter takes the channel before it looks, so a change in between closes
// the channel it holds and is never missed.
type news struct {
	mu sync.Mutex
	ch chan struct{} // nil until a waiter asks
}

func (n *news) wait() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch == nil {
		n.ch = make(chan struct{})
	}
	return n.ch
}

func (n *news) fire() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch != nil {
		close(n.ch)
		n.ch = nil
	}
}

// LeaderChanged returns a channel closed at the next change that may alter
// LeaderHTTP's answer: raft names another leader (or none), or an
// announcement or snapshot marker sets a node's HTTP address. Take it before
// asking LeaderHTTP. httpapi's forwarder waits on it for the address of a
// new leader instead of polling.
func (l *Log) LeaderChanged() <-chan struct{} { return l.leaderNews.wait() }

// watchLeaderChanges fires leaderNews for each raft.LeaderObservation
// until stop is closed. raft sends observations without blocking and drops
// those its channel has no room for: one pending is enough, since every
// waiter looks again after it wakes.
func (l *Log) watchLeaderChanges(obs <-chan raft.Observation, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for {
		select {
		case <-obs:
			l.leaderNews.fire()
		case <-stop:
			return
		}
	}
}
