package analytics

// Point is one bucket of a series (a minute, an hour or a day). Counts are
// messages; lag is the age of a message when popped, in ms: LagSumMs over
// Popped messages (AvgLagMs) and the largest (LagMaxMs).
type Point struct {
	Ingested, Popped, Processed, Errors uint64
	LagSumMs, LagMaxMs                  uint64
	// DeadLettered counts the messages moved to a dead-letter queue in the
	// bucket (Queen's dlqCount; file version 2).
	DeadLettered uint64
}

// add merges o into p: counts add up, the maximum is the larger.
func (p *Point) add(o Point) {
	p.Ingested += o.Ingested
	p.Popped += o.Popped
	p.Processed += o.Processed
	p.Errors += o.Errors
	p.LagSumMs += o.LagSumMs
	p.LagMaxMs = max(p.LagMaxMs, o.LagMaxMs)
	p.DeadLettered += o.DeadLettered
}

// IsZero reports a bucket where nothing happened.
func (p Point) IsZero() bool { return p == Point{} }

// AvgLagMs is the average pop lag of the bucket (0 without pops).
func (p Point) AvgLagMs() float64 {
	if p.Popped == 0 {
		return 0
	}
	return float64(p.LagSumMs) / float64(p.Popped)
}
