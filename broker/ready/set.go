package ready

import (
	"container/heap"
	"sync"
)

// Set is the ready set of one (queue, consumer group); see the package doc.
// Its methods are safe for concurrent use, except Add and Defer, which build a
// Set before it is shared.
type Set[P comparable] struct {
	mu       sync.Mutex
	entries  map[P]*entry[P]
	ready    entryHeap[P]
	deferred entryHeap[P]
	seq      uint64
}

// Where an entry is.
const (
	inFlight uint8 = iota
	inReady
	inDeferred
)

type entry[P comparable] struct {
	p        P
	readyKey int64 // µs
	until    int64 // µs, deferred only
	where    uint8
	idx      int
	seq      uint64
}

// Verdict is what a pop tells the Set about a member it took.
type Verdict uint8

// Verdicts of a pop on a member it took (Finish).
const (
	Done  Verdict = iota // nothing pending for the group: drop the entry
	Later                // deferred until `until`
	Again                // still has work: back to ready with readyKey key
)

// New returns an empty Set.
func New[P comparable]() *Set[P] {
	return &Set[P]{entries: make(map[P]*entry[P]), deferred: entryHeap[P]{byExpiry: true}}
}

// unlinkLocked takes e out of its heap (s.mu held).
func (s *Set[P]) unlinkLocked(e *entry[P]) {
	switch e.where {
	case inReady:
		heap.Remove(&s.ready, e.idx)
	case inDeferred:
		heap.Remove(&s.deferred, e.idx)
	}
	e.where = inFlight
}

// Touch says p probably has work now (a push landed, a lease was released, a
// seek moved the cursor back). key is the µs timestamp of the work.
func (s *Set[P]) Touch(p P, key int64) {
	s.mu.Lock()
	s.touchLocked(p, key)
	s.mu.Unlock()
}

// Add is Touch for a Set not yet shared (the scan a Set is built from): it
// takes no lock.
func (s *Set[P]) Add(p P, key int64) { s.touchLocked(p, key) }

// touchLocked is Touch with s.mu held.
func (s *Set[P]) touchLocked(p P, key int64) {
	s.seq++
	e := s.entries[p]
	if e == nil {
		e = &entry[P]{p: p, readyKey: key}
		s.entries[p] = e
	} else if e.where == inReady {
		e.seq = s.seq
		if key < e.readyKey {
			e.readyKey = key
			heap.Fix(&s.ready, e.idx)
		}
		return
	} else {
		s.unlinkLocked(e)
		if e.readyKey == 0 || key < e.readyKey {
			e.readyKey = key
		}
	}
	e.seq = s.seq
	e.where = inReady
	heap.Push(&s.ready, e)
}

// Pushed is Touch for a push: a member already deferred (leased) stays
// deferred, because the new messages wait behind the lease anyway.
func (s *Set[P]) Pushed(p P, key int64) {
	s.mu.Lock()
	if e := s.entries[p]; e != nil && e.where != inFlight {
		s.mu.Unlock()
		return
	}
	s.touchLocked(p, key)
	s.mu.Unlock()
}

// Take removes and returns the oldest ready member after promoting every
// deferred entry due at nowMicros, excluding skip; seq identifies the take for
// Finish. ok=false when none is ready.
func (s *Set[P]) Take(nowMicros int64, skip map[P]bool) (p P, seq uint64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.deferred.Len() > 0 && s.deferred.items[0].until <= nowMicros {
		e := heap.Pop(&s.deferred).(*entry[P])
		e.where = inReady
		heap.Push(&s.ready, e)
	}
	var put []*entry[P]
	defer func() {
		for _, e := range put {
			heap.Push(&s.ready, e)
		}
	}()
	for s.ready.Len() > 0 {
		e := heap.Pop(&s.ready).(*entry[P])
		if skip[e.p] {
			put = append(put, e)
			continue
		}
		e.where = inFlight
		return e.p, e.seq, true
	}
	return p, 0, false
}

// PeekKey returns the readyKey (µs) of the oldest ready entry, counting a
// deferred one due at nowMicros.
func (s *Set[P]) PeekKey(nowMicros int64) (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ready.Len() > 0 {
		return s.ready.items[0].readyKey, true
	}
	if s.deferred.Len() > 0 && s.deferred.items[0].until <= nowMicros {
		return s.deferred.items[0].readyKey, true
	}
	return 0, false
}

// NextDeferred returns the earliest `until` (µs) of the deferred entries: when
// the next held-back member becomes a candidate. 0 when none is deferred.
func (s *Set[P]) NextDeferred() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deferred.Len() == 0 {
		return 0
	}
	return s.deferred.items[0].until
}

// Finish applies a pop's verdict on a member it took with Take (seq is what
// Take returned): Later defers it until `until` (µs; key, when not 0, is its
// new readyKey), Again puts it back ready with readyKey key. A member touched
// since the Take keeps the touch's state.
func (s *Set[P]) Finish(p P, seq uint64, verdict Verdict, key, until int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[p]
	if e == nil {
		if verdict == Done {
			return
		}
		e = &entry[P]{p: p}
		s.entries[p] = e
	} else if e.where != inFlight || e.seq != seq {
		return // touched meanwhile: the touch's verdict stands
	}
	switch verdict {
	case Done:
		delete(s.entries, p)
	case Later:
		if key != 0 {
			e.readyKey = key
		}
		e.until = until
		e.where = inDeferred
		heap.Push(&s.deferred, e)
	default:
		e.readyKey = key
		e.where = inReady
		heap.Push(&s.ready, e)
	}
}

// Defer puts p, which has no entry yet, in deferred until `until` (µs), for
// a Set not yet shared (the scan a Set is built from): it takes no lock.
func (s *Set[P]) Defer(p P, key, until int64) {
	e := &entry[P]{p: p, readyKey: key, until: until, where: inDeferred}
	s.entries[p] = e
	heap.Push(&s.deferred, e)
}

// Released says the group's lease on p went away with nothing left to claim:
// an entry deferred until that lease's expiry is dropped, so that the next
// push makes p a candidate at once instead of after the old expiry.
func (s *Set[P]) Released(p P) {
	s.mu.Lock()
	if e := s.entries[p]; e != nil && e.where == inDeferred {
		s.unlinkLocked(e)
		delete(s.entries, p)
	}
	s.mu.Unlock()
}

// Peek returns the oldest ready member without taking it (the zero P when
// none is ready).
func (s *Set[P]) Peek() P {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ready.Len() == 0 {
		var zero P
		return zero
	}
	return s.ready.items[0].p
}
