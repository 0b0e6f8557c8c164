//go:build cluster

package clustertest

import (
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestClusterChecksRules feeds checkRun hand-made ledgers: a history a correct broker may
// produce gives no violation, and each broken promise gives exactly its check, so the harness
// neither cries wolf nor sleeps through one.
func TestClusterChecksRules(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	const lease = 3 * time.Second

	// legit: a and b pushed to p0 and acknowledged; ga gets them under L1, nacks (retry), gets
	// them again under L2 at once (the nack released L1) and acks b, which commits a too; gt gets
	// them under L5 and commits both in a transaction that pushes x-a.
	legit := func() (*ledger, map[string][]popMessage) {
		l := newLedger(t0)
		push := func(tx, queue, part, id string, txs ...string) {
			l.pushes[tx] = &pushRec{txid: tx, queue: queue, partition: part, acked: true, messageID: id, partitionID: "P-" + part, node: "n1", firstSent: at(0), recv: at(1), txs: txs}
		}
		push("a", workQueue, "p0", "id-a")
		push("b", workQueue, "p0", "id-b")
		push("x-a", txQueue, "t0", "id-xa", "tx1")
		deliver(l, ackGroup, "L1", at(10), at(20), "a", "b")
		l.acks = append(l.acks, &ackRec{group: ackGroup, leaseID: "L1", via: "ack/batch", node: "n1", firstSent: at(100), recv: at(110),
			items: []ackItemRec{{txid: "a", partitionID: "P-p0", status: "retry", outcome: applied}, {txid: "b", partitionID: "P-p0", status: "retry", outcome: applied}}})
		deliver(l, ackGroup, "L2", at(200), at(210), "a", "b")
		l.acks = append(l.acks, &ackRec{group: ackGroup, leaseID: "L2", via: "ack/batch", node: "n1", firstSent: at(250), recv: at(300),
			items: []ackItemRec{{txid: "b", partitionID: "P-p0", status: "completed", outcome: applied}}})
		deliver(l, txGroup, "L5", at(10), at(20), "a", "b")
		tx := &txRec{id: "tx1", pushes: []string{"x-a"}, outcome: applied}
		tx.ack = &ackRec{group: txGroup, leaseID: "L5", via: "transaction tx1", node: "n1", firstSent: at(30), recv: at(40),
			items: []ackItemRec{{txid: "a", partitionID: "P-p0", status: "completed", outcome: applied}, {txid: "b", partitionID: "P-p0", status: "completed", outcome: applied}}}
		l.txs = append(l.txs, tx)
		l.acks = append(l.acks, tx.ack)
		fresh := map[string][]popMessage{
			workQueue: {{ID: "id-a", TransactionID: "a", PartitionID: "P-p0", Partition: "p0"}, {ID: "id-b", TransactionID: "b", PartitionID: "P-p0", Partition: "p0"}},
			txQueue:   {{ID: "id-xa", TransactionID: "x-a", PartitionID: "P-t0", Partition: "t0"}},
		}
		return l, fresh
	}
	checks := func(l *ledger) []string {
		var out []string
		for _, v := range l.violations {
			out = append(out, v.check)
		}
		sort.Strings(out)
		return out
	}

	t.Run("a correct history gives no violation", func(t *testing.T) {
		l, fresh := legit()
		fig := checkRun(l, fresh, lease)
		require.Empty(t, l.violations)
		require.Equal(t, 2, fig.pushesAcked)
		require.Equal(t, 1, fig.txPushesAcked)
		require.Equal(t, 2, fig.nacksApplied) // items, not requests
	})
	t.Run("an offset below an acked one delivered again: 4", func(t *testing.T) {
		l, fresh := legit()
		deliver(l, ackGroup, "L3", at(400), at(410), "a") // b acked at 300 committed a
		checkRun(l, fresh, lease)
		require.Equal(t, []string{"4 cursor went back"}, checks(l))
	})
	t.Run("an acked message delivered again: 2", func(t *testing.T) {
		l, fresh := legit()
		deliver(l, ackGroup, "L4", at(400), at(410), "b")
		checkRun(l, fresh, lease)
		require.Equal(t, []string{"2 redelivered after ack"}, checks(l))
	})
	t.Run("a pop sent before the ack's answer may deliver it", func(t *testing.T) {
		l, fresh := legit()
		deliver(l, ackGroup, "L4", at(290), at(5000), "b") // sent before the answer at 300, L2 released by then
		checkRun(l, fresh, lease)
		require.Empty(t, l.violations)
	})
	t.Run("a second lease while the first runs: 3", func(t *testing.T) {
		l, fresh := legit()
		deliver(l, txGroup, "L6", at(15), at(25), "a") // L5 (sent at 10) runs to at least 3.01 s; its ack was sent at 30
		checkRun(l, fresh, lease)
		require.Equal(t, []string{"3 two live leases"}, checks(l))
	})
	t.Run("a second lease after the first's leaseTime is fine", func(t *testing.T) {
		l, fresh := legit()
		l.acks = l.acks[:len(l.acks)-1] // gt never acked: L5 runs out
		l.txs[0].outcome = unknown
		deliver(l, txGroup, "L6", at(2900), at(3050), "a", "b")
		checkRun(l, fresh, lease)
		require.Empty(t, l.violations)
	})
	t.Run("an acknowledged push missing, or read twice, or with another id: 1", func(t *testing.T) {
		l, fresh := legit()
		fresh[workQueue] = fresh[workQueue][:1]
		checkRun(l, fresh, lease)
		require.Equal(t, []string{"1 lost push"}, checks(l))

		l, fresh = legit()
		fresh[txQueue] = append(fresh[txQueue], popMessage{ID: "id-xa2", TransactionID: "x-a", PartitionID: "P-t1", Partition: "t1"})
		checkRun(l, fresh, lease)
		require.Equal(t, []string{"1 lost push"}, checks(l))

		l, fresh = legit()
		fresh[txQueue][0].ID = "other"
		checkRun(l, fresh, lease)
		require.Equal(t, []string{"1 lost push"}, checks(l))
	})
	t.Run("an aborted transaction's push stored: 1", func(t *testing.T) {
		l, fresh := legit()
		l.pushes["x-a"].acked = false
		l.txs[0].outcome = refused
		checkRun(l, fresh, lease)
		require.Equal(t, []string{"1 lost push"}, checks(l))

		l, fresh = legit()
		l.pushes["x-a"].acked = false
		l.txs[0].outcome, l.txs[0].uncertain = refused, true // an earlier attempt may have committed
		checkRun(l, fresh, lease)
		require.Empty(t, l.violations)
	})
}

// deliver records one pop answer of group under lease delivering txids of partition p0.
func deliver(l *ledger, group, lease string, sent, recv time.Time, txids ...string) {
	for i, tx := range txids {
		l.deliveries = append(l.deliveries, delivery{group: group, txid: tx, msgID: "id-" + tx, partitionID: "P-p0", partition: "p0",
			leaseID: lease, node: "n1", sent: sent, recv: recv, spanEnd: i == len(txids)-1})
	}
}

// TestClusterReadCheckRules feeds checkReads hand-made reads: reads that overlap in time may
// disagree (either may come first), a read sent after another's answer may show more or the
// same, but not less, nor no cursor where one was shown; each group is judged on its own.
func TestClusterReadCheckRules(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	read := func(group, node string, sent, recv int, consumed map[string]int64) groupRead {
		return groupRead{group: group, node: node, sent: at(sent), recv: at(recv), consumed: consumed}
	}
	l := newLedger(t0)
	l.reads = []groupRead{
		read(ackGroup, "n1", 0, 10, map[string]int64{"cq/p0": 5}),
		read(ackGroup, "n2", 5, 20, map[string]int64{"cq/p0": 3}),              // overlaps the first: fine
		read(ackGroup, "n3", 30, 40, map[string]int64{"cq/p0": 5, "cq/p1": 1}), // same: fine
		read(txGroup, "n1", 45, 50, map[string]int64{"cq/p0": 0}),              // another group: fine
		read(ackGroup, "n1", 60, 70, map[string]int64{"cq/p0": 7, "cq/p1": 1}), // more: fine
	}
	require.Equal(t, 5, checkReads(l))
	require.Empty(t, l.violations)

	l.reads = append(l.reads,
		read(ackGroup, "n2", 80, 90, map[string]int64{"cq/p0": 6, "cq/p1": 1}), // 6 after 7: went back
		read(ackGroup, "n3", 95, 99, map[string]int64{"cq/p0": 7}),             // p1's cursor gone
	)
	l.violations = nil
	checkReads(l)
	require.Len(t, l.violations, 2)
	for _, v := range l.violations {
		require.Equal(t, "6 read went back", v.check)
	}
	require.Contains(t, l.violations[0].text+l.violations[1].text, "totalConsumed 6 from n2")
	require.Contains(t, l.violations[0].text+l.violations[1].text, "no cursor from n3")
}
