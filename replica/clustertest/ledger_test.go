//go:build cluster

package clustertest

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// outcome of one ack item, one transaction or one push.
type outcome int

const (
	unknown outcome = iota // no answer (the load stopped while it was retried)
	applied                // success
	refused                // answered, not applied (success:false, or an item error)
)

// pushRec is one message the harness sent, by its transactionId (unique in the whole run).
type pushRec struct {
	txid, queue, partition string
	firstSent              time.Time
	txs                    []string // the transactions that push it (a redelivered message is pushed again); nil for /push
	// acked: a 201 said queued or duplicate, or its transaction answered success:true.
	acked                  bool
	messageID, partitionID string
	node                   string
	recv                   time.Time
}

// delivery is one message in one pop answer to a working group.
type delivery struct {
	group, txid, msgID, partitionID, partition, leaseID, node string
	sent, recv                                                time.Time
	spanEnd                                                   bool // the last message of its partition in that answer
}

// ackItemRec is one item of an ack request.
type ackItemRec struct {
	txid, partitionID, status string
	outcome                   outcome
	err                       string
}

// ackRec is one ack request (/ack/batch, or the ack operations of a transaction).
type ackRec struct {
	group, leaseID, via, node string
	firstSent, recv           time.Time
	uncertain                 bool
	items                     []ackItemRec
}

// txRec is one transaction: the acks and the pushes that commit together.
type txRec struct {
	id        string
	pushes    []string // transactionIds of its push operations
	outcome   outcome
	uncertain bool
	err       string
	ack       *ackRec
}

// violation is one broken promise with its evidence.
type violation struct {
	check string // "1 lost push", "2 redelivered after ack", ...
	text  string
}

// event is a line of the run's timeline (faults, leader changes, restarts).
type event struct {
	at   time.Time
	text string
}

// ledger is everything the client was told. Safe for concurrent use.
type ledger struct {
	t0 time.Time

	mu         sync.Mutex
	pushes     map[string]*pushRec
	deliveries []delivery
	acks       []*ackRec
	txs        []*txRec
	violations []violation
	timeline   []event
	// The attempts that got an answer, for the failover figures: pushes answered 201, pops
	// answered 200 or 204.
	pushAnswers, popAnswers []span
	// reads are the answered cursor reads of check 6 (reads_test.go).
	reads []groupRead
}

func newLedger(t0 time.Time) *ledger {
	return &ledger{t0: t0, pushes: map[string]*pushRec{}}
}

// rel prints t as seconds since the start of the run.
func (l *ledger) rel(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return fmt.Sprintf("t+%.3fs", t.Sub(l.t0).Seconds())
}

func (l *ledger) violate(check, format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.violations = append(l.violations, violation{check: check, text: fmt.Sprintf(format, args...)})
}

func (l *ledger) note(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.timeline = append(l.timeline, event{at: time.Now(), text: fmt.Sprintf(format, args...)})
}

// sentPushes registers messages about to be pushed (again, on a retry: nothing changes).
func (l *ledger) sentPushes(items []pushItem, viaTx string) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, it := range items {
		p, ok := l.pushes[it.TransactionID]
		if !ok {
			p = &pushRec{txid: it.TransactionID, queue: it.Queue, partition: it.Partition, firstSent: now}
			l.pushes[it.TransactionID] = p
		}
		if viaTx != "" {
			p.txs = append(p.txs, viaTx)
		}
	}
}

// pushAnswered records a 201: each item queued or duplicate is acknowledged; an answer that
// names another message id than an earlier answer for the same transactionId is a finding.
func (l *ledger) pushAnswered(ans answer, items []pushItem, res []pushResult) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pushAnswers = append(l.pushAnswers, span{ans.sent, ans.recv})
	if len(res) != len(items) {
		l.violations = append(l.violations, violation{"1 lost push", fmt.Sprintf("push of %d items answered 201 with %d results by %s at %s", len(items), len(res), ans.node, l.rel(ans.recv))})
		return
	}
	for i, r := range res {
		it := items[i]
		p := l.pushes[it.TransactionID]
		if r.Status != "queued" && r.Status != "duplicate" {
			l.violations = append(l.violations, violation{"1 lost push", fmt.Sprintf("push item %s answered 201 with status %q error %q by %s at %s", it.TransactionID, r.Status, r.Error, ans.node, l.rel(ans.recv))})
			continue
		}
		l.ackPushLocked(p, r.MessageID, r.PartitionID, ans)
	}
}

func (l *ledger) ackPushLocked(p *pushRec, messageID, partitionID string, ans answer) {
	if p.acked && p.messageID != messageID {
		l.violations = append(l.violations, violation{"1 lost push", fmt.Sprintf("message %s answered id %s by %s at %s; an earlier answer said %s (%s at %s)", p.txid, messageID, ans.node, l.rel(ans.recv), p.messageID, p.node, l.rel(p.recv))})
		return
	}
	if !p.acked {
		p.acked, p.messageID, p.partitionID, p.node, p.recv = true, messageID, partitionID, ans.node, ans.recv
	}
}

// delivered records one pop answer of a working group.
func (l *ledger) delivered(group string, ans answer, pop *popAnswer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, m := range pop.Messages {
		last := i == len(pop.Messages)-1 || pop.Messages[i+1].PartitionID != m.PartitionID
		lease := m.LeaseID
		if lease == "" {
			lease = pop.LeaseID
		}
		l.deliveries = append(l.deliveries, delivery{group: group, txid: m.TransactionID, msgID: m.ID, partitionID: m.PartitionID,
			partition: m.Partition, leaseID: lease, node: ans.node, sent: ans.sent, recv: ans.recv, spanEnd: last})
	}
}

// span is when an answered attempt was sent and when its answer arrived.
type span struct{ sent, recv time.Time }

func (l *ledger) popAnswered(ans answer) {
	l.mu.Lock()
	l.popAnswers = append(l.popAnswers, span{ans.sent, ans.recv})
	l.mu.Unlock()
}

func (l *ledger) acked(a *ackRec) {
	l.mu.Lock()
	l.acks = append(l.acks, a)
	l.mu.Unlock()
}

// txDone records a transaction's end; on success its pushes are acknowledged.
func (l *ledger) txDone(tx *txRec, ans answer, res *txAnswer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.txs = append(l.txs, tx)
	if tx.ack != nil {
		l.acks = append(l.acks, tx.ack)
	}
	if tx.outcome != applied || res == nil {
		return
	}
	for _, r := range res.Results {
		if r.Type != "push" {
			continue
		}
		p, ok := l.pushes[r.TransactionID]
		if !ok {
			l.violations = append(l.violations, violation{"1 lost push", fmt.Sprintf("transaction %s answered a push result for %s, which it did not push", tx.id, r.TransactionID)})
			continue
		}
		l.ackPushLocked(p, r.MessageID, r.PartitionID, ans)
	}
	for _, tx0 := range tx.pushes {
		if p := l.pushes[tx0]; p != nil && !p.acked {
			l.violations = append(l.violations, violation{"1 lost push", fmt.Sprintf("transaction %s answered success:true without a push result for %s", tx.id, tx0)})
		}
	}
}

// report is the violations grouped by check, and the timeline.
func (l *ledger) report() (byCheck map[string][]string, timeline []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	byCheck = map[string][]string{}
	for _, v := range l.violations {
		byCheck[v.check] = append(byCheck[v.check], v.text)
	}
	sort.Slice(l.timeline, func(i, j int) bool { return l.timeline[i].at.Before(l.timeline[j].at) })
	for _, e := range l.timeline {
		timeline = append(timeline, l.rel(e.at)+" "+e.text)
	}
	return byCheck, timeline
}

func (l *ledger) violationCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.violations)
}

func joinFirst(xs []string, n int) string {
	if len(xs) <= n {
		return strings.Join(xs, ", ")
	}
	return strings.Join(xs[:n], ", ") + fmt.Sprintf(", ... (%d in all)", len(xs))
}

// dump writes the ledger as tab-separated files into dir (deliveries, acks, pushes, times
// relative to the start of the run): the evidence behind a violation, kept with the logs.
func (l *ledger) dump(dir string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var d, a, p strings.Builder
	d.WriteString("group\ttxid\tmessageId\tpartition\tpartitionId\tleaseId\tnode\tsent\tanswered\tspanEnd\n")
	for _, x := range l.deliveries {
		fmt.Fprintf(&d, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%v\n", x.group, x.txid, x.msgID, x.partition, x.partitionID, x.leaseID, x.node, l.rel(x.sent), l.rel(x.recv), x.spanEnd)
	}
	a.WriteString("group\tleaseId\tvia\tnode\tfirstSent\tanswered\tuncertain\ttxid\tpartitionId\tstatus\toutcome\terror\n")
	for _, x := range l.acks {
		for _, it := range x.items {
			fmt.Fprintf(&a, "%s\t%s\t%s\t%s\t%s\t%s\t%v\t%s\t%s\t%s\t%s\t%s\n", x.group, x.leaseID, x.via, x.node, l.rel(x.firstSent), l.rel(x.recv), x.uncertain, it.txid, it.partitionID, it.status, [...]string{"unknown", "applied", "refused"}[it.outcome], it.err)
		}
	}
	p.WriteString("txid\tqueue\tpartition\tacked\tmessageId\tpartitionId\tnode\tfirstSent\tanswered\ttransactions\n")
	for _, x := range l.pushes {
		fmt.Fprintf(&p, "%s\t%s\t%s\t%v\t%s\t%s\t%s\t%s\t%s\t%s\n", x.txid, x.queue, x.partition, x.acked, x.messageID, x.partitionID, x.node, l.rel(x.firstSent), l.rel(x.recv), strings.Join(x.txs, ","))
	}
	for name, b := range map[string]*strings.Builder{"deliveries.tsv": &d, "acks.tsv": &a, "pushes.tsv": &p} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	return nil
}
