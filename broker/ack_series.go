package broker

import "github.com/combmq/comb/lease"

// countAcks adds an ack request's applied acks to their queues' series.
func countAcks(batches []ackBatch, results []AckResult) {
	for i := range batches {
		ab := &batches[i]
		var done, failed int
		for i := range ab.acks {
			if !results[ab.acks[i].Index].Success {
				continue
			}
			switch ab.acks[i].Status {
			case lease.StatusCompleted:
				done++
			case lease.StatusFailed, lease.StatusDLQ:
				failed++
			}
		}
		ab.p.q.an.Processed(done)
		ab.p.q.an.Errors(failed)
	}
}
