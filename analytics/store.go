package analytics

import (
	"sync"
	"time"
)

// Interval is a bucket width: Minute, Hour or Day (UTC).
type Interval int

const (
	Minute Interval = iota
	Hour
	Day
)

// Seconds is the width of a bucket.
func (i Interval) Seconds() int64 { return [...]int64{60, 3600, 86400}[i] }

// ParseInterval reads "minute", "hour" or "day"; anything else is def.
func ParseInterval(s string, def Interval) Interval {
	switch s {
	case "minute":
		return Minute
	case "hour":
		return Hour
	case "day":
		return Day
	}
	return def
}

// Ring sizes (buckets) per resolution; see doc.go for the memory they bound.
var (
	allSizes   = [3]int{1440, 336, 90}
	queueSizes = [3]int{120, 48, 31}
)

// series is one queue's counters and rings (or, with the zero id, the sum of
// all queues, which has no counters of its own).
type series struct {
	name  string
	c     *Counters
	rings [3]ring
}

func newSeries(name string, sizes [3]int) *series {
	s := &series{name: name}
	for i, n := range sizes {
		s.rings[i] = newRing(n)
	}
	return s
}

// Store holds every series; safe for concurrent use. A nil *Store (counting
// off) answers zero buckets and ignores the rest. The hot paths touch
// only Counters; Store's lock is taken by Tick, Query and the file code.
type Store struct {
	mu     sync.Mutex
	minute int64 // unix minute the live counters count; 0 before the first Tick
	all    *series
	byID   map[[16]byte]*series
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{all: newSeries("", allSizes), byID: make(map[[16]byte]*series)}
}

// Counters returns the counters of queue id (named name), creating its
// series or adopting one restored from the file.
func (s *Store) Counters(id [16]byte, name string) *Counters {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sr := s.byID[id]
	if sr == nil {
		sr = newSeries(name, queueSizes)
		s.byID[id] = sr
	}
	sr.name = name
	if sr.c == nil {
		sr.c = new(Counters)
	}
	return sr.c
}

// Drop forgets queue id (a deleted queue). The all-queues series keeps what
// it counted.
func (s *Store) Drop(id [16]byte) {
	if s == nil {
		return
	}
	s.mu.Lock()
	delete(s.byID, id)
	s.mu.Unlock()
}

// DropUnclaimed forgets the restored series no queue asked Counters for (the
// queue was deleted while the file was not rewritten).
func (s *Store) DropUnclaimed() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, sr := range s.byID {
		if sr.c == nil {
			delete(s.byID, id)
		}
	}
}

func unixMinute(t time.Time) int64 { return t.Unix() / 60 }

// Tick closes the minute being counted once now is past it: every queue's
// counters move into its rings and into the all-queues series. It reports
// whether a minute closed (the caller then saves the file).
func (s *Store) Tick(now time.Time) bool {
	if s == nil {
		return false
	}
	m := unixMinute(now)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.minute == 0 {
		s.minute = m
		return false
	}
	if m <= s.minute {
		return false
	}
	s.rollLocked()
	s.minute = m
	return true
}

// Flush moves the live counters into the minute being counted without closing
// it (at Close, so the file holds them).
func (s *Store) Flush(now time.Time) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.minute == 0 {
		s.minute = unixMinute(now)
	}
	s.rollLocked()
}

func (s *Store) rollLocked() {
	for _, sr := range s.byID {
		if sr.c == nil {
			continue
		}
		p := sr.c.take()
		if p.IsZero() {
			continue
		}
		sr.addLocked(s.minute, p)
		s.all.addLocked(s.minute, p)
	}
}

// addLocked adds p (counted in unix minute m) to the minute, hour and day rings.
func (sr *series) addLocked(m int64, p Point) {
	sr.rings[Minute].add(m, p)
	sr.rings[Hour].add(m/60, p)
	sr.rings[Day].add(m/1440, p)
}
