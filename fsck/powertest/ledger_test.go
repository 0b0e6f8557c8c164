package powertest

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/combmq/comb/broker"
)

// Violation kinds, as the report counts them.
const (
	vMissing        = "acked push missing"
	vMissingDupOnly = "acked push missing (answered only duplicate)"
	vTwice          = "message present more than once"
	vWrongID        = "message id or partition differs from the push answer"
	vUnknown        = "message never pushed"
	vRedelivered    = "acked message redelivered to its group"
	vCursorBack     = "cursor went back"
	vNegativeLag    = "cursor past the high-water mark"
	vDLQMissing     = "message answered dlq missing from the DLQ"
	vDLQTwice       = "message in the DLQ more than once"
	vFsck2          = "fsck exit 2"
	vOpen           = "reopen failed"
	vAnswer         = "bad answer"
)

// stored is what the answers to one transactionId promised.
type stored struct {
	partition string
	messageID string
	queued    bool // some answer said queued (or a transaction's push success, not duplicate)
	duplicate bool // some answer said duplicate
	epoch     int  // first answered in this run
}

// ledger is what the broker promised before each cut; safe for concurrent use.
type ledger struct {
	// cut is set just before the power is cut: an answer read after it set
	// may rest on work done after the cut and promises nothing.
	cut   atomic.Bool
	clock atomic.Uint64 // orders ack answers before later pops

	mu       sync.Mutex
	payload  map[string]string // txid → payload of every push sent
	sentRun  map[string]int    // txid → run it was first sent in
	promised map[string]stored // txid → what its answers said
	pending  map[uint64][]broker.PushItem
	nextPend uint64
	acked    map[string]uint64 // txid → clock of its first successful ack (completed or dlq) for the work group
	dlq      map[string]bool   // txid → answered moved to the DLQ
	reported map[string]bool   // violations already counted (kind and txid), each counted once
	viol     map[string]int
	details  []string

	pushes, pushedMsgs, dupAnswers, lostAnswers, acks, nacks, dlqs, txs, deliveries, redeliveries int
}

func newLedger() *ledger {
	return &ledger{payload: map[string]string{}, sentRun: map[string]int{}, promised: map[string]stored{},
		pending: map[uint64][]broker.PushItem{}, acked: map[string]uint64{}, dlq: map[string]bool{}, reported: map[string]bool{}, viol: map[string]int{}}
}

// violate counts a violation of kind and keeps its detail (the first 300).
func (l *ledger) violate(kind, format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.violateLocked(kind, format, args...)
}

func (l *ledger) violateLocked(kind, format string, args ...any) {
	l.viol[kind]++
	if len(l.details) < 300 {
		l.details = append(l.details, kind+": "+fmt.Sprintf(format, args...))
	}
}

func (l *ledger) violations() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.viol {
		n += c
	}
	return n
}

// once reports whether key is new (and remembers it): a damage found again
// by every later check is one violation.
func (l *ledger) once(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.onceLocked(key)
}

func (l *ledger) onceLocked(key string) bool {
	if l.reported[key] {
		return false
	}
	l.reported[key] = true
	return true
}

// byKind is one line: every kind with its count.
func (l *ledger) byKind() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	kinds := make([]string, 0, len(l.viol))
	for k, n := range l.viol {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(kinds)
	return strings.Join(kinds, ", ")
}

// summary lists the violations by kind, then their details.
func (l *ledger) summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	kinds := make([]string, 0, len(l.viol))
	for k := range l.viol {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var b strings.Builder
	for _, k := range kinds {
		fmt.Fprintf(&b, "  %5d  %s\n", l.viol[k], k)
	}
	for _, d := range l.details {
		b.WriteString("    " + d + "\n")
	}
	return b.String()
}

// sent registers a push about to go out (run is the current run) and returns
// its pending id: it stays pending until an answer before the cut arrives.
func (l *ledger) sent(run int, items []broker.PushItem) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, it := range items {
		l.payload[it.TransactionID] = string(it.Payload)
		if _, ok := l.sentRun[it.TransactionID]; !ok {
			l.sentRun[it.TransactionID] = run
		}
	}
	l.nextPend++
	l.pending[l.nextPend] = items
	return l.nextPend
}

// answered records the answer to pending push id, unless the power was cut
// before the answer was read (then the push stays pending).
func (l *ledger) answered(run int, id uint64, items []broker.PushItem, res []broker.PushResult, err error) {
	if l.cut.Load() {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		return // a storage error: pending, re-sent after the reopen
	}
	delete(l.pending, id)
	l.pushes++
	if len(res) != len(items) {
		l.violateLocked(vAnswer, "run %d: push of %d items answered %d results", run, len(items), len(res))
		return
	}
	for i, r := range res {
		tx := items[i].TransactionID
		switch r.Status {
		case broker.PushQueued, broker.PushDuplicate:
		default:
			l.violateLocked(vAnswer, "run %d: push %s answered %s %q", run, tx, r.Status, r.Error)
			continue
		}
		l.promiseLocked(run, tx, items[i].Partition, r.MessageID, r.Status == broker.PushDuplicate)
	}
}

func (l *ledger) promiseLocked(run int, tx, partition, id string, dup bool) {
	s, ok := l.promised[tx]
	if ok && s.messageID != id {
		l.violateLocked(vWrongID, "run %d: push %s answered id %s, an earlier answer said %s", run, tx, id, s.messageID)
		return
	}
	if !ok {
		s = stored{partition: partition, messageID: id, epoch: run}
		l.pushedMsgs++
	}
	if dup {
		s.duplicate = true
		l.dupAnswers++
	} else {
		s.queued = true
	}
	l.promised[tx] = s
}

// expect registers pushes that are not re-sent when their answer is lost
// (a transaction's): they may be stored, never promised.
func (l *ledger) expect(run int, items []broker.PushItem) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, it := range items {
		l.payload[it.TransactionID] = string(it.Payload)
		if _, ok := l.sentRun[it.TransactionID]; !ok {
			l.sentRun[it.TransactionID] = run
		}
	}
}

// takePending hands back every push no answer before a cut covered.
func (l *ledger) takePending() [][]broker.PushItem {
	l.mu.Lock()
	defer l.mu.Unlock()
	ids := make([]uint64, 0, len(l.pending))
	for id := range l.pending {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	out := make([][]broker.PushItem, 0, len(ids))
	for _, id := range ids {
		out = append(out, l.pending[id])
		delete(l.pending, id)
	}
	l.lostAnswers += len(out)
	return out
}

// delivered checks one pop answer of the work group, whose pop was sent at
// clock popClock: a message acked before that is a redelivery.
func (l *ledger) delivered(run int, popClock uint64, msgs []broker.Message) {
	if l.cut.Load() {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range msgs {
		l.deliveries++
		if at, ok := l.acked[m.TransactionID]; ok {
			l.redeliveries++
			if at <= popClock {
				l.violateLocked(vRedelivered, "run %d: %s (%s, partition %s offset %d) delivered to group %s after its ack was answered success", run, m.TransactionID, m.ID, m.Partition, m.Offset, workGroup)
			}
		}
		if _, ok := l.payload[m.TransactionID]; !ok {
			l.violateLocked(vUnknown, "run %d: delivered %s was never pushed", run, m.TransactionID)
		}
		if s, ok := l.promised[m.TransactionID]; ok && (s.messageID != m.ID || s.partition != m.Partition) {
			l.violateLocked(vWrongID, "run %d: delivered %s as %s in %s, push answer said %s in %s", run, m.TransactionID, m.ID, m.Partition, s.messageID, s.partition)
		}
	}
}

// ackAnswered records the successful acks of the work group (txids resolved:
// completed, or failed into the DLQ when toDLQ).
func (l *ledger) ackAnswered(txids []string, toDLQ []bool) {
	if l.cut.Load() {
		return
	}
	now := l.clock.Add(1)
	if l.cut.Load() {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, tx := range txids {
		if _, ok := l.acked[tx]; !ok {
			l.acked[tx] = now
		}
		if toDLQ[i] {
			l.dlq[tx] = true
			l.dlqs++
		} else {
			l.acks++
		}
	}
}

func (l *ledger) nacked(n int) {
	l.mu.Lock()
	l.nacks += n
	l.mu.Unlock()
}

// txAnswered records a transaction answered success: its pushes and acks.
func (l *ledger) txAnswered(run int, pushes []broker.PushItem, res broker.TxResult, ackTx []string) {
	if l.cut.Load() {
		return
	}
	l.mu.Lock()
	if !res.Success {
		l.violateLocked(vAnswer, "run %d: transaction answered failure %q", run, res.Error)
		l.mu.Unlock()
		return
	}
	l.txs++
	k := 0
	for _, r := range res.Results {
		if r.Type != "push" {
			continue
		}
		if k < len(pushes) {
			l.promiseLocked(run, pushes[k].TransactionID, pushes[k].Partition, r.MessageID, r.Duplicate)
		}
		k++
	}
	l.mu.Unlock()
	l.ackAnswered(ackTx, make([]bool, len(ackTx)))
}
