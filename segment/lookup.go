package segment

import (
	"math"
	"sort"
)

// OffsetAtOrAfterTime returns the first offset of the first segment whose
// timestamp is ≥ tsMicros, or NextOffset() when no segment is that recent
// (seed 000: a timestamp subscription resolves to a segment boundary).
// O(log files + log segments). An I/O error opening a sealed file's index
// makes it answer as if that file held nothing at or after tsMicros.
func (l *Log) OffsetAtOrAfterTime(tsMicros int64) uint64 {
	if l.pin() != nil {
		return l.NextOffset()
	}
	defer l.unpin()
	l.mu.RLock()
	defer l.mu.RUnlock()
	if off, ok := l.firstSegmentAfterLocked(tsMicros, false); ok {
		return off
	}
	return l.next
}

// LastOffsetAtOrBefore returns the last offset whose segment timestamp is
// ≤ tsMicros, or FirstOffset()-1 when none is (every retained segment is newer).
// Offsets in a quarantined gap have no segment and are never returned.
func (l *Log) LastOffsetAtOrBefore(tsMicros int64) uint64 {
	if l.pin() != nil {
		return l.FirstOffset() - 1
	}
	defer l.unpin()
	l.mu.RLock()
	defer l.mu.RUnlock()
	if tsMicros == math.MaxInt64 {
		return l.next - 1
	}
	if off, ok := l.firstSegmentAfterLocked(tsMicros+1, false); ok {
		return l.beforeLocked(off)
	}
	return l.next - 1
}

// beforeLocked is the offset before off, stepping back over a quarantined gap
// (QuarantineFileName) when off starts the file after it: the last offset
// that exists, or FirstOffset()-1 when none does.
func (l *Log) beforeLocked(off uint64) uint64 {
	i := sort.Search(len(l.files), func(i int) bool { return l.files[i].base >= off })
	if i == 0 || i == len(l.files) || l.files[i].base != off {
		return off - 1
	}
	for j := i - 1; j >= 0; j-- {
		if fi := l.files[j]; fi.next > fi.base {
			return fi.next - 1
		}
	}
	return l.firstLocked() - 1
}

// firstSegmentAfterLocked finds the base offset of the first segment with
// timestamp ≥ ts. Files are searched by their last timestamp (timestamps
// never decrease along the log), then the file's index.
func (l *Log) firstSegmentAfterLocked(ts int64, _ bool) (uint64, bool) {
	first := 0
	for first < len(l.files) && l.files[first].next == l.files[first].base {
		first++ // only an emptied newest file can be empty, but stay general
	}
	files := l.files[first:]
	i := sort.Search(len(files), func(i int) bool {
		fi := files[i]
		return fi.next > fi.base && fi.lastTs >= ts
	})
	if i == len(files) {
		return 0, false
	}
	fi := files[i]
	if fi.firstTs >= ts {
		return fi.base, true
	}
	of, err := l.acquireLocked(fi)
	if err != nil {
		return 0, false
	}
	defer of.unref()
	ents := of.idx.Entries()
	j := ents.FirstAtOrAfterTime(ts)
	if j == ents.Len() {
		return 0, false
	}
	return ents.At(j).Base, true
}
