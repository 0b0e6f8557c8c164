package segment

// clockRing is the set of Logs one CLOCK sweep walks: the handle cache's Logs holding file
// handles and the dedup budget's Logs holding an index in memory. Each Log keeps its index in
// the ring in a slot field of its own (slot names it), -1 when absent, so add and remove cost
// O(1). Guarded by HandleCache.mu.
type clockRing struct {
	logs []*Log
	hand int
	slot func(*Log) *int
}

// add puts l at the end of the ring unless it is in it already.
func (r *clockRing) add(l *Log) {
	if *r.slot(l) >= 0 {
		return
	}
	*r.slot(l) = len(r.logs)
	r.logs = append(r.logs, l)
}

// remove takes l out of the ring (if it is in it), moving the last Log into its place.
func (r *clockRing) remove(l *Log) {
	i := *r.slot(l)
	if i < 0 || i >= len(r.logs) || r.logs[i] != l {
		return
	}
	last := len(r.logs) - 1
	r.logs[i] = r.logs[last]
	*r.slot(r.logs[i]) = i
	r.logs[last] = nil
	r.logs = r.logs[:last]
	*r.slot(l) = -1
	if r.hand >= len(r.logs) {
		r.hand = 0
	}
}

// next returns the Log under the hand and moves the hand on, wrapping at the end. The ring
// must not be empty.
func (r *clockRing) next() *Log {
	if r.hand >= len(r.logs) {
		r.hand = 0
	}
	l := r.logs[r.hand]
	r.hand++
	return l
}
