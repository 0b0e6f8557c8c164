//go:build cluster

package clustertest

import (
	"fmt"
	"sort"
	"time"
)

// leaseSlack covers an expiry the server may round to the millisecond.
const leaseSlack = 10 * time.Millisecond

// figures are the run's counts for the report.
type figures struct {
	pushesAcked, txPushesAcked      int
	deliveries                      map[string]int
	ackItemsApplied, nacksApplied   int
	txApplied, txRefused, txUnknown int
	freshRead                       map[string]int
	redeliveries                    map[string]int // same group, same message, delivered again
}

// checkRun runs checks 1 to 4 (the replicas' agreement, check 5, needs the nodes) over the
// ledger and the fresh groups' reads (queue → messages in delivery order).
func checkRun(l *ledger, fresh map[string][]popMessage, leaseTime time.Duration) figures {
	l.mu.Lock()
	defer l.mu.Unlock()
	fig := figures{deliveries: map[string]int{}, freshRead: map[string]int{}, redeliveries: map[string]int{}}
	bad := func(check, format string, args ...any) {
		l.violations = append(l.violations, violation{check: check, text: fmt.Sprintf(format, args...)})
	}

	// Offsets: a message's position in its partition, from the fresh read's order.
	index := map[string]int{}     // txid → position in its partition
	readID := map[string]string{} // txid → message id the fresh read gave
	for queue, msgs := range fresh {
		fig.freshRead[queue] = len(msgs)
		pos := map[string]int{}
		for _, m := range msgs {
			if prev, ok := readID[m.TransactionID]; ok {
				bad("1 lost push", "fresh read of %s: message %s read twice (ids %s and %s): a push stored twice", queue, m.TransactionID, prev, m.ID)
				continue
			}
			readID[m.TransactionID] = m.ID
			index[m.TransactionID] = pos[m.PartitionID]
			pos[m.PartitionID]++
			if _, ok := l.pushes[m.TransactionID]; !ok {
				bad("1 lost push", "fresh read of %s: message %s (%s) was never pushed", queue, m.TransactionID, m.ID)
			}
		}
	}
	txByID := map[string]*txRec{}
	for _, tx := range l.txs {
		txByID[tx.id] = tx
		switch tx.outcome {
		case applied:
			fig.txApplied++
		case refused:
			fig.txRefused++
		default:
			fig.txUnknown++
		}
	}

	// Check 1: every acknowledged push read once with its id; an aborted transaction left nothing.
	deliveredTo := map[string]map[string]bool{} // group → txid
	for _, d := range l.deliveries {
		if deliveredTo[d.group] == nil {
			deliveredTo[d.group] = map[string]bool{}
		}
		if deliveredTo[d.group][d.txid] {
			fig.redeliveries[d.group]++
		}
		deliveredTo[d.group][d.txid] = true
		fig.deliveries[d.group]++
	}
	txids := make([]string, 0, len(l.pushes))
	for tx := range l.pushes {
		txids = append(txids, tx)
	}
	sort.Strings(txids)
	for _, tx := range txids {
		p := l.pushes[tx]
		id, read := readID[tx]
		if !p.acked {
			if read && len(p.txs) > 0 && allRefused(p.txs, txByID) {
				bad("1 lost push", "message %s (%s) read by the fresh group, but every transaction that pushed it (%v) was answered success:false with no earlier attempt of unknown outcome", tx, id, p.txs)
			}
			continue
		}
		if len(p.txs) > 0 {
			fig.txPushesAcked++
		} else {
			fig.pushesAcked++
		}
		switch {
		case !read:
			bad("1 lost push", "message %s (%s/%s, id %s) acknowledged by %s at %s (first sent %s) is missing from the fresh read", tx, p.queue, p.partition, p.messageID, p.node, l.rel(p.recv), l.rel(p.firstSent))
		case id != p.messageID:
			bad("1 lost push", "message %s (%s/%s) read with id %s; its acknowledgement (%s at %s) said %s", tx, p.queue, p.partition, id, p.node, l.rel(p.recv), p.messageID)
		}
		if p.queue == workQueue {
			for _, g := range []string{ackGroup, txGroup} {
				if !deliveredTo[g][tx] {
					bad("1 lost push", "message %s (%s/%s, id %s) acknowledged by %s at %s was never delivered to group %s", tx, p.queue, p.partition, p.messageID, p.node, l.rel(p.recv), g)
				}
			}
		}
	}

	// Acks answered success ("completed"), and the requests that may have released a lease.
	type ackAt struct {
		txid, node, lease, via string
		recv                   time.Time
	}
	acksBy := map[string][]ackAt{} // group/partitionID → applied completions
	spanEnd := map[string]string{} // group/lease/partitionID → txid of the span's last message
	for _, d := range l.deliveries {
		if d.spanEnd {
			spanEnd[d.group+"/"+d.leaseID+"/"+d.partitionID] = d.txid
		}
	}
	releases := map[string][]time.Time{} // group/lease/partitionID → sent times of possible releases
	for _, a := range l.acks {
		for _, it := range a.items {
			key := a.group + "/" + a.leaseID + "/" + it.partitionID
			mayApply := it.outcome != refused || a.uncertain
			if it.outcome == applied && it.status == "completed" {
				fig.ackItemsApplied++
				acksBy[a.group+"/"+it.partitionID] = append(acksBy[a.group+"/"+it.partitionID], ackAt{it.txid, a.node, a.leaseID, a.via, a.recv})
			}
			if it.outcome == applied && it.status == "retry" {
				fig.nacksApplied++
			}
			if mayApply && (it.status == "retry" || spanEnd[key] == it.txid) {
				releases[key] = append(releases[key], a.firstSent)
			}
		}
	}

	// Checks 2 and 4 (offsets): walk each group's partition in time; a pop sent after an ack's
	// answer must not deliver that message nor one below it.
	delsBy := map[string][]delivery{}
	for _, d := range l.deliveries {
		delsBy[d.group+"/"+d.partitionID] = append(delsBy[d.group+"/"+d.partitionID], d)
	}
	for key, dels := range delsBy {
		acks := acksBy[key]
		sort.Slice(acks, func(i, j int) bool { return acks[i].recv.Before(acks[j].recv) })
		sort.SliceStable(dels, func(i, j int) bool { return dels[i].sent.Before(dels[j].sent) })
		ackedAt := map[string]ackAt{}
		var top ackAt // the acked message of the highest offset so far
		topIdx, j := -1, 0
		for _, d := range dels {
			for ; j < len(acks) && acks[j].recv.Before(d.sent); j++ {
				a := acks[j]
				if _, ok := ackedAt[a.txid]; !ok {
					ackedAt[a.txid] = a
				}
				if i, ok := index[a.txid]; ok && i > topIdx {
					topIdx, top = i, a
				}
			}
			if a, ok := ackedAt[d.txid]; ok {
				bad("2 redelivered after ack", "group %s: message %s (partition %s) delivered by %s to a pop sent at %s (lease %s), after its ack (%s, lease %s) was answered success by %s at %s",
					d.group, d.txid, d.partition, d.node, l.rel(d.sent), d.leaseID, a.via, a.lease, a.node, l.rel(a.recv))
				continue
			}
			if i, ok := index[d.txid]; ok && i < topIdx {
				bad("4 cursor went back", "group %s partition %s: offset %d (%s) delivered by %s to a pop sent at %s (lease %s), after offset %d (%s) was acked (%s, lease %s) with success by %s at %s",
					d.group, d.partition, i, d.txid, d.node, l.rel(d.sent), d.leaseID, topIdx, top.txid, top.via, top.lease, top.node, l.rel(top.recv))
			}
		}
	}

	// Check 3: two live leases on one message. A later delivery answered before the earlier
	// pop's send time + leaseTime was claimed while the earlier lease still ran, unless a
	// release of the earlier lease (a nack, or an ack of its span's end) was sent before.
	byMsg := map[string][]delivery{}
	for _, d := range l.deliveries {
		k := d.group + "/" + d.txid
		byMsg[k] = append(byMsg[k], d)
	}
	for _, dels := range byMsg {
		if len(dels) < 2 {
			continue
		}
		sort.Slice(dels, func(i, j int) bool { return dels[i].recv.Before(dels[j].recv) })
		for i := 1; i < len(dels); i++ {
			d2 := dels[i]
			for _, d1 := range dels[:i] {
				if d1.leaseID == d2.leaseID || !d2.recv.Before(d1.sent.Add(leaseTime-leaseSlack)) {
					continue
				}
				released := false
				for _, s := range releases[d1.group+"/"+d1.leaseID+"/"+d1.partitionID] {
					if s.Before(d2.recv) {
						released = true
					}
				}
				if released {
					continue
				}
				bad("3 two live leases", "group %s: message %s (partition %s) delivered under lease %s by %s (pop sent %s, answered %s; the lease runs to at least %s) and again under lease %s by %s (pop sent %s, answered %s), with no release of the first sent before",
					d1.group, d1.txid, d1.partition, d1.leaseID, d1.node, l.rel(d1.sent), l.rel(d1.recv), l.rel(d1.sent.Add(leaseTime)), d2.leaseID, d2.node, l.rel(d2.sent), l.rel(d2.recv))
			}
		}
	}
	return fig
}

// allRefused: every transaction was answered success:false and none had an attempt of
// unknown outcome before its answer.
func allRefused(ids []string, txs map[string]*txRec) bool {
	for _, id := range ids {
		tx := txs[id]
		if tx == nil || tx.outcome != refused || tx.uncertain {
			return false
		}
	}
	return true
}
