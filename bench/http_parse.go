package bench

import (
	"bytes"
	"fmt"

	"github.com/valyala/fastjson"
)

// Response parsing for the Queen v1 HTTP API, cheap enough that the client is not the
// bottleneck on a box it shares with the server.

// CountPushFailures returns how many items of a push answer (spec 1.6: a JSON array, one
// entry per item) have status "failed". The common case, no failure, is decided by a byte scan
// without building a tree.
func CountPushFailures(p *fastjson.Parser, body []byte) (int, error) {
	b := bytes.TrimSpace(body)
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return 0, fmt.Errorf("push answer is not a JSON array: %w", ErrBadResponse)
	}
	if !bytes.Contains(b, []byte(`failed`)) {
		return 0, nil
	}
	v, err := p.ParseBytes(b)
	if err != nil {
		return 0, fmt.Errorf("push answer: %v: %w", err, ErrBadResponse)
	}
	arr, err := v.Array()
	if err != nil {
		return 0, fmt.Errorf("push answer: %v: %w", err, ErrBadResponse)
	}
	n := 0
	for _, it := range arr {
		if string(it.GetStringBytes("status")) == "failed" {
			n++
		}
	}
	return n, nil
}

// CountAckFailures returns how many results of an ack/batch answer (spec 4.4) are not
// success:true.
func CountAckFailures(p *fastjson.Parser, body []byte) (int, error) {
	v, err := p.ParseBytes(body)
	if err != nil {
		return 0, fmt.Errorf("ack answer: %v: %w", err, ErrBadResponse)
	}
	arr, err := v.Array()
	if err != nil {
		return 0, fmt.Errorf("ack answer: %v: %w", err, ErrBadResponse)
	}
	n := 0
	for _, it := range arr {
		if !it.GetBool("success") {
			n++
		}
	}
	return n, nil
}

// PoppedBatch is a parsed pop answer (spec 3.3): the ack body for every message, built while
// parsing, and each message's embedded send time.
type PoppedBatch struct {
	n       int
	sent    []int64
	ackBody []byte
	// The last message, which a cycle or a transaction acks for the whole batch (committing a
	// message commits everything before it in its partition, spec 4.6); copies, not aliases.
	lastTx, lastPartitionID, lastPartition, lastLease []byte
}

// Len is the number of messages delivered.
func (b *PoppedBatch) Len() int { return b.n }

// SentNanos is message i's embedded send time (Unix ns), 0 when absent or not asked.
func (b *PoppedBatch) SentNanos(i int) int64 {
	if i < len(b.sent) {
		return b.sent[i]
	}
	return 0
}

// AckBody is the POST /api/v1/ack/batch body acknowledging every message (status completed,
// each message's own partitionId and leaseId, spec 4.2).
func (b *PoppedBatch) AckBody() []byte { return b.ackBody }

// ParsePop parses a 200 pop answer into b, reusing b's buffers. group is echoed in the ack
// body; wantTimes reads data.t of each message.
func ParsePop(p *fastjson.Parser, body []byte, group string, wantTimes bool, b *PoppedBatch) error {
	b.n = 0
	b.sent = b.sent[:0]
	b.ackBody = b.ackBody[:0]
	v, err := p.ParseBytes(body)
	if err != nil {
		return fmt.Errorf("pop answer: %v: %w", err, ErrBadResponse)
	}
	msgs := v.GetArray("messages")
	envLease := v.GetStringBytes("leaseId")
	b.ackBody = append(b.ackBody, `{"acknowledgments":[`...)
	for i, m := range msgs {
		tx := m.GetStringBytes("transactionId")
		pid := m.GetStringBytes("partitionId")
		if len(tx) == 0 || len(pid) == 0 {
			return fmt.Errorf("pop answer message %d lacks transactionId or partitionId: %w", i, ErrBadResponse)
		}
		lease := m.GetStringBytes("leaseId")
		if len(lease) == 0 {
			lease = envLease
		}
		b.ackBody = appendAckItem(b.ackBody, i == 0, ackItem{txID: tx, partitionID: pid, leaseID: lease})
		if wantTimes {
			var t int64
			if d := m.Get("data"); d != nil {
				t = d.GetInt64("t")
			}
			b.sent = append(b.sent, t)
		}
	}
	b.ackBody = appendAckTail(b.ackBody, group)
	b.n = len(msgs)
	if b.n > 0 {
		m := msgs[b.n-1]
		b.lastTx = append(b.lastTx[:0], m.GetStringBytes("transactionId")...)
		b.lastPartitionID = append(b.lastPartitionID[:0], m.GetStringBytes("partitionId")...)
		b.lastPartition = append(b.lastPartition[:0], m.GetStringBytes("partition")...)
		lease := m.GetStringBytes("leaseId")
		if len(lease) == 0 {
			lease = envLease
		}
		b.lastLease = append(b.lastLease[:0], lease...)
	}
	return nil
}
