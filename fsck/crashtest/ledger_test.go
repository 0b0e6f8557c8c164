//go:build crash

package crashtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// confirmed is a message whose push was answered 201 (queued or duplicate).
type confirmed struct {
	partition   string
	partitionID string
	messageID   string
	payload     []byte // compacted JSON
}

// pendingPush is a push request whose answer never arrived (the server was killed).
type pendingPush struct {
	items []pushItem
}

// ledger is what the verifying client knows the broker promised. All methods are safe
// for concurrent use.
type ledger struct {
	clock atomic.Uint64 // logical clock ordering ack answers before later pops

	mu         sync.Mutex
	expected   map[string][]byte    // txid → compacted payload of every push ever sent
	sentAt     map[string]time.Time // txid → when it was first sent
	confirmed  map[string]confirmed // txid → what its 201 answer said
	pending    map[uint64]*pendingPush
	nextPend   uint64
	retried    map[string]bool   // txids re-sent after a kill: exempt from the order check
	ackedAt    map[string]uint64 // txid → clock when the first successful ack answer arrived
	violations []string

	pushes, pushedMsgs, acks, ackedMsgs, deliveries, redeliveries uint64
}

func newLedger() *ledger {
	return &ledger{
		expected:  map[string][]byte{},
		sentAt:    map[string]time.Time{},
		confirmed: map[string]confirmed{},
		pending:   map[uint64]*pendingPush{},
		retried:   map[string]bool{},
		ackedAt:   map[string]uint64{},
	}
}

func (l *ledger) violate(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.violations) < 200 {
		l.violations = append(l.violations, fmt.Sprintf(format, args...))
	}
}

func (l *ledger) violationCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.violations)
}

// sent registers a push about to go out and returns its pending id.
func (l *ledger) sent(items []pushItem) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	for _, it := range items {
		l.expected[it.TransactionID] = compact(it.Payload)
		if _, ok := l.sentAt[it.TransactionID]; !ok {
			l.sentAt[it.TransactionID] = now
		}
	}
	l.nextPend++
	l.pending[l.nextPend] = &pendingPush{items: items}
	return l.nextPend
}

// answered records a 201 answer for pending push id.
func (l *ledger) answered(id uint64, items []pushItem, res []pushResult) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.pending, id)
	l.pushes++
	if len(res) != len(items) {
		l.violations = append(l.violations, fmt.Sprintf("push of %d items answered with %d results", len(items), len(res)))
		return
	}
	for i, r := range res {
		it := items[i]
		if r.Status != "queued" && r.Status != "duplicate" {
			l.violations = append(l.violations, fmt.Sprintf("push item %s answered status %q error %q", it.TransactionID, r.Status, r.Error))
			continue
		}
		if r.MessageID == "" {
			l.violations = append(l.violations, fmt.Sprintf("push item %s answered without message_id", it.TransactionID))
			continue
		}
		if old, ok := l.confirmed[it.TransactionID]; ok && old.messageID != r.MessageID {
			l.violations = append(l.violations, fmt.Sprintf("push item %s answered id %s, earlier answer said %s", it.TransactionID, r.MessageID, old.messageID))
			continue
		}
		if _, ok := l.confirmed[it.TransactionID]; !ok {
			l.pushedMsgs++
		}
		l.confirmed[it.TransactionID] = confirmed{partition: it.Partition, partitionID: r.PartitionID, messageID: r.MessageID, payload: l.expected[it.TransactionID]}
	}
}

// takePending hands back every unanswered push and marks its txids as retried.
func (l *ledger) takePending() []*pendingPush {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]*pendingPush, 0, len(l.pending))
	ids := make([]uint64, 0, len(l.pending))
	for id := range l.pending {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		p := l.pending[id]
		for _, it := range p.items {
			l.retried[it.TransactionID] = true
		}
		out = append(out, p)
		delete(l.pending, id)
	}
	return out
}

// delivered checks one pop answer of the working group: popClock is the clock read
// before the pop was sent.
func (l *ledger) delivered(popClock uint64, msgs []popMessage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range msgs {
		l.deliveries++
		if at, ok := l.ackedAt[m.TransactionID]; ok {
			l.redeliveries++
			if at <= popClock {
				l.violations = append(l.violations, fmt.Sprintf("message %s (%s) delivered again to its group after its ack was answered success", m.TransactionID, m.ID))
			}
		}
		if _, ok := l.expected[m.TransactionID]; !ok {
			l.violations = append(l.violations, fmt.Sprintf("delivered message %s was never pushed", m.TransactionID))
		}
		if c, ok := l.confirmed[m.TransactionID]; ok && c.messageID != m.ID {
			l.violations = append(l.violations, fmt.Sprintf("delivered message %s has id %s, push answer said %s", m.TransactionID, m.ID, c.messageID))
		}
	}
}

// ackSucceeded records the txids whose ack was answered success.
func (l *ledger) ackSucceeded(txids []string) {
	now := l.clock.Add(1)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.acks++
	for _, tx := range txids {
		l.ackedMsgs++
		if _, ok := l.ackedAt[tx]; !ok {
			l.ackedAt[tx] = now
		}
	}
}

// drainReport is what one verification drain found.
type drainReport struct {
	messages int
	checked  int
}

// verifyDrain checks the messages of one drain (every partition, from the start when
// since is zero, else from a timestamp subscription at since) against the ledger:
// every confirmed push sent at or after since exactly once with its id, nothing
// unknown, per-(partition, producer) push order, payloads byte-equal after compaction.
func (l *ledger) verifyDrain(msgs []popMessage, since time.Time) drainReport {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := make(map[string]int, len(msgs))
	lastSeq := map[string]int{} // partition/producer → last sequence seen
	bad := func(format string, args ...any) {
		if len(l.violations) < 200 {
			l.violations = append(l.violations, fmt.Sprintf(format, args...))
		}
	}
	for _, m := range msgs {
		seen[m.TransactionID]++
		if seen[m.TransactionID] == 2 {
			bad("drain: message %s present more than once", m.TransactionID)
		}
		want, ok := l.expected[m.TransactionID]
		if !ok {
			bad("drain: message %s was never pushed", m.TransactionID)
			continue
		}
		if got := compact(m.Data); !bytes.Equal(got, want) {
			bad("drain: message %s payload %s, pushed %s", m.TransactionID, got, want)
		}
		if c, ok := l.confirmed[m.TransactionID]; ok {
			if c.messageID != m.ID {
				bad("drain: message %s has id %s, push answer said %s", m.TransactionID, m.ID, c.messageID)
			}
			if c.partition != m.Partition {
				bad("drain: message %s in partition %s, pushed to %s", m.TransactionID, m.Partition, c.partition)
			}
		}
		if l.retried[m.TransactionID] {
			continue
		}
		var producer, seq int
		if _, err := fmt.Sscanf(m.TransactionID, "w%d-%d", &producer, &seq); err == nil {
			k := fmt.Sprintf("%s/%d", m.Partition, producer)
			if prev, ok := lastSeq[k]; ok && seq <= prev {
				bad("drain: partition %s producer %d: seq %d after %d (push order broken)", m.Partition, producer, seq, prev)
			}
			lastSeq[k] = seq
		}
	}
	checked := 0
	for tx, c := range l.confirmed {
		if !since.IsZero() && l.sentAt[tx].Before(since) {
			continue
		}
		checked++
		if seen[tx] == 0 {
			bad("drain: message %s (%s) answered 201 but missing", tx, c.messageID)
		}
	}
	return drainReport{messages: len(msgs), checked: checked}
}

func compact(b []byte) []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return append([]byte(nil), b...)
	}
	return buf.Bytes()
}
