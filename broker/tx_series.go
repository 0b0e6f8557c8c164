package broker

import "github.com/combmq/comb/lease"

// countTx adds a committed transaction's pushes (not its duplicates) and
// applied acks to their queues' series.
func countTx(t *txRun) {
	if !t.res.Success {
		return
	}
	for i, r := range t.results {
		if !r.Success || i >= len(t.opPart) || t.opPart[i] == nil {
			continue
		}
		an := t.opPart[i].q.an
		switch {
		case r.Type == "push" && !r.Duplicate:
			an.Ingested(1)
		case r.Type == "ack":
			switch lease.ParseStatus(t.ops[i].Ack.Status) {
			case lease.StatusCompleted:
				an.Processed(1)
			case lease.StatusFailed, lease.StatusDLQ:
				an.Errors(1)
			}
		}
	}
}
