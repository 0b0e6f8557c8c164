package segment

// Bytes returns the bytes of whole, published segments in l's files, and
// false when l was opened from a Summary and has not listed its directory
// yet (OpenSummary): then the size is unknown without reading it, and 0 is
// returned. For gauges (Prometheus comb_segment_bytes); it takes l's read lock.
func (l *Log) Bytes() (int64, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.unlisted {
		return 0, false
	}
	var n int64
	for _, f := range l.files {
		n += f.size
	}
	return n, true
}
