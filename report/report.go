package report

import (
	"github.com/combmq/comb/broker"
)

// Reports answers the read-side routes from a broker's View. It keeps what
// makes a repeated ask cheap (the DLQ indexes, the per-partition DLQ counts,
// the throughput sample), so a process builds one per broker and shares it;
// all methods are safe for concurrent use.
type Reports struct {
	v broker.View
	// dlqHits indexes each queue's DLQ by (partition, offset) for the
	// message routes (msgdlq.go); dlqCounts counts it by partition for the
	// resources and status routes (dlqcount.go).
	dlqHits   dlqIndexes
	dlqCounts dlqCountCache
	rates     rateSample // throughput of the resources overview (resources.go)
	dataWalk  dataWalk   // the data directory's size for Storage (storagewalk.go)
}

// New returns the reports of the broker behind v.
func New(v broker.View) *Reports { return &Reports{v: v} }
