package broker

import (
	"context"
	"fmt"
	"strconv"
	"testing"
)

// BenchmarkCommit compares a streams cycle with its baseline, a plain
// transaction of the same sink push and source ack (issue 12: "a cycle's p99
// against a plain transaction of the same size"), as `comb bench cycle` and
// `comb bench transaction` drive them: a pop of 10 from one of P source
// partitions (not timed), then one commit of one 200-byte sink push to the
// source's partition name and the ack of the batch's last message; the cycle
// also upserts 4 keys. Sync "never": the engine's CPU and allocations, not
// the disk's.
func BenchmarkCommit(b *testing.B) {
	for _, parts := range []int{1, 100} {
		for _, via := range []string{"cycle", "transaction"} {
			b.Run(fmt.Sprintf("%s/parts=%d", via, parts), func(b *testing.B) { benchCommit(b, via, parts) })
		}
	}
}

func benchCommit(b *testing.B, via string, parts int) {
	br := benchBroker(b, "never")
	const batch = 10
	payload := []byte(fmt.Sprintf(`{"pad":"%0190d"}`, 0))
	for p := 0; p < parts; p++ {
		items := make([]PushItem, 0, (b.N/parts+2)*batch)
		for i := 0; i < cap(items); i++ {
			items = append(items, PushItem{Queue: "src", Partition: "p" + strconv.Itoa(p), Payload: payload})
		}
		for len(items) > 0 {
			n := min(len(items), 1000)
			if _, err := br.Push(items[:n]); err != nil {
				b.Fatal(err)
			}
			items = items[n:]
		}
	}
	var qid string
	if via == "cycle" {
		r, err := br.StreamRegister(StreamQueryRequest{Name: "bench", SourceQueue: "src", SinkQueue: "sink", ConfigHash: "h"})
		if err != nil {
			b.Fatal(err)
		}
		qid = r.QueryID
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		res, err := br.Pop(context.Background(), PopRequest{Queue: "src", Batch: batch, Partitions: 1})
		if err != nil || len(res.Messages) == 0 {
			b.Fatalf("pop: %v (%d messages)", err, len(res.Messages))
		}
		last := res.Messages[len(res.Messages)-1]
		push := PushItem{Queue: "sink", Partition: res.Partition, TransactionID: "out-" + strconv.Itoa(i), Payload: payload}
		var ops []StreamStateOp
		if via == "cycle" {
			ops = make([]StreamStateOp, 4)
			for k := range ops {
				ops[k] = StreamStateOp{Type: "upsert", Key: "k" + strconv.Itoa(k),
					Value: []byte(`{"acc":` + strconv.Itoa(i) + `,"windowStart":0,"windowEnd":60000}`)}
			}
		}
		b.StartTimer()
		ok := false
		if via == "cycle" {
			r, err := br.StreamCycle(StreamCycleRequest{QueryID: qid, PartitionID: last.PartitionID, StateOps: ops,
				Push: []PushItem{push}, ReleaseLease: true,
				Ack: &StreamAck{TransactionID: last.TransactionID, LeaseID: res.LeaseID, Status: "completed", Count: batch}})
			ok = err == nil && r.Success
		} else {
			r, err := br.Transaction([]TxOp{{Type: "push", Push: push},
				{Type: "ack", Ack: AckItem{TransactionID: last.TransactionID, PartitionID: last.PartitionID, LeaseID: res.LeaseID, Status: "completed"}}})
			ok = err == nil && r.Success
		}
		b.StopTimer()
		res.Release()
		if !ok {
			b.Fatalf("commit %d did not apply", i)
		}
		b.StartTimer()
	}
}
