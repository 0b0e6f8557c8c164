package lease

// DefaultLeaseSeconds is the lease length when neither the pop nor the queue
// gives a positive one (seed 000, "Parameters": "the fallback when a queue has
// none is 60 seconds"; spec 3.2).
const DefaultLeaseSeconds = 60

// DefaultExtendSeconds is the renewal of an extend call without a positive
// `seconds` (seed 000: "60 if you send no body"; spec 6).
const DefaultExtendSeconds = 60

// MaxLeaseSeconds caps every lease length and renewal: 7 days. The spec sets
// no ceiling (3.2, 6), but a lease must stay representable: now + seconds in
// µs overflows int64 for seconds near 2^63 / 10^6 (a lease born expired), and
// an expiry past year 9999 cannot be written as RFC 3339. A week is far longer
// than any consumer should hold a batch without extending it.
const MaxLeaseSeconds = 7 * 24 * 3600

// Lease is the claim of one (partition, consumer group) span by one pop.
type Lease struct {
	ID              [16]byte // zero = no lease held
	WorkerID        string
	Start, End      uint64 // inclusive offsets of the leased span
	ExpiresAtMicros int64  // µs since the Unix epoch
	Attempts        uint32 // deliveries of this span (1 on first, +1 per redelivery after expiry or release)
}

// Held reports whether a lease id is recorded, live or expired.
func (l Lease) Held() bool { return l.ID != [16]byte{} }

// Live reports whether the lease is held and has not expired at nowMicros.
// An expired lease needs no reaper: claims simply ignore it (seed 000).
func (l Lease) Live(nowMicros int64) bool { return l.Held() && l.ExpiresAtMicros > nowMicros }

// State is everything durable about one (partition, consumer group).
type State struct {
	Committed uint64 // cursor: last committed offset; 0 = nothing consumed
	Lease     Lease
	Retries   uint32 // explicit `failed` releases charged to the current span (spec 4.5)
}

// Idle reports whether s carries nothing but a cursor: no lease (held or
// remembered) and no retry charged. cursor.Engine stores idle states compactly.
func (s State) Idle() bool { return s.Lease == Lease{} && s.Retries == 0 }

// EffectiveSeconds is the lease length of a pop in seconds (spec 3.2, seed 000
// "leaseSeconds"): the pop's leaseSeconds if > 0, else the queue's leaseTime if
// > 0, else 60; capped at MaxLeaseSeconds.
func EffectiveSeconds(popLeaseSeconds, queueLeaseTime int64) int64 {
	switch {
	case popLeaseSeconds > 0:
		return min(popLeaseSeconds, MaxLeaseSeconds)
	case queueLeaseTime > 0:
		return min(queueLeaseTime, MaxLeaseSeconds)
	default:
		return DefaultLeaseSeconds
	}
}

// CanClaim reports whether a pop may claim this (partition, group) now: there
// is no live lease (seed 000: "the claim simply ignores expired leases").
func CanClaim(s State, nowMicros int64) bool { return !s.Lease.Live(nowMicros) }

// Grant records a claim of [s.Committed+1, end] under lease id for worker,
// expiring at expiresAtMicros (seed 000 "One leased batch per (partition,
// group)"; spec 3.5 step 4). The caller has checked CanClaim.
//
// When the new span starts inside the previous (expired or released) span, it is
// a redelivery: Attempts carries over +1 and Retries is kept, because only
// explicit `failed` acks consume the budget (seed 000; spec 3.10). Any other
// claim starts a fresh span with Attempts 1 and Retries 0.
func Grant(s *State, id [16]byte, worker string, end uint64, expiresAtMicros int64) {
	start := s.Committed + 1
	prev := s.Lease
	attempts := uint32(1)
	if prev.Attempts > 0 && start >= prev.Start && start <= prev.End {
		attempts = prev.Attempts + 1
	} else {
		s.Retries = 0
	}
	s.Lease = Lease{ID: id, WorkerID: worker, Start: start, End: end, ExpiresAtMicros: expiresAtMicros, Attempts: attempts}
}

// AutoAck commits the cursor to end and takes no lease (seed 000 "autoAck":
// "commit the cursor in the same transaction that reads the messages"; spec
// 3.10). It never moves the cursor backwards. The claim was made with no lease,
// so any remembered span and retry charge are dropped.
func AutoAck(s *State, end uint64) {
	if end > s.Committed {
		s.Committed = end
	}
	s.Lease = Lease{}
	s.Retries = 0
}

// Extend renews a live lease to max(current expiry, now+seconds) and reports
// whether it did (spec 6; seed 000 "To hold a batch longer than the lease").
// seconds <= 0 means 60; seconds above MaxLeaseSeconds mean MaxLeaseSeconds. It
// never shortens a lease and never revives an expired one.
func Extend(s *State, nowMicros, seconds int64) bool {
	if !s.Lease.Live(nowMicros) {
		return false
	}
	if seconds <= 0 {
		seconds = DefaultExtendSeconds
	}
	seconds = min(seconds, MaxLeaseSeconds)
	if exp := nowMicros + seconds*1_000_000; exp > s.Lease.ExpiresAtMicros {
		s.Lease.ExpiresAtMicros = exp
	}
	return true
}

// release gives up the lease but remembers the span and its attempts, so the
// redelivery that follows is counted (spec 3.10, 4.5).
func release(s *State) {
	s.Lease.ID = [16]byte{}
	s.Lease.WorkerID = ""
	s.Lease.ExpiresAtMicros = 0
}
