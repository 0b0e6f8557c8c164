package analytics

import "time"

// Query selects buckets: Interval wide, from From to To (inclusive of the
// buckets they fall in). Match picks queues by id and name; nil means every
// queue (answered from the all-queues series, which keeps the longest window).
type Query struct {
	Interval Interval
	From, To time.Time
	Match    func(id [16]byte, name string) bool
}

// Bucket is one point of an answer; Start is the bucket's first second (UTC).
type Bucket struct {
	Start time.Time
	Point
}

// QueueSeries is one queue's buckets.
type QueueSeries struct {
	ID      [16]byte
	Name    string
	Buckets []Bucket
}

// MaxBuckets caps one answer's buckets (a day of minutes): a request for a
// longer range gets its newest MaxBuckets buckets.
const MaxBuckets = 1440

// units returns the first and last bucket index of q, capped to MaxBuckets
// and to what the all-queues ring can still hold.
func (q Query) units() (int64, int64) {
	w := q.Interval.Seconds()
	to := q.To.Unix() / w
	from := q.From.Unix() / w
	from = max(from, to-int64(min(MaxBuckets, allSizes[q.Interval]))+1, 0)
	return from, to
}

// Series returns the buckets of q summed over the matching queues, dense
// (zeros where nothing happened), oldest first. The minute being counted
// includes its live counters.
func (s *Store) Series(q Query) []Bucket {
	from, to := q.units()
	if to < from {
		return []Bucket{}
	}
	out := make([]Bucket, to-from+1)
	w := q.Interval.Seconds()
	for i := range out {
		out[i].Start = time.Unix((from+int64(i))*w, 0).UTC()
	}
	if s == nil {
		return out
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if q.Match == nil {
		s.fillLocked(out, from, q.Interval, s.all)
		for _, sr := range s.byID {
			s.addLiveLocked(out, from, q.Interval, sr)
		}
		return out
	}
	for id, sr := range s.byID {
		if q.Match(id, sr.name) {
			s.fillLocked(out, from, q.Interval, sr)
			s.addLiveLocked(out, from, q.Interval, sr)
		}
	}
	return out
}

// PerQueue returns q's buckets for each matching queue that has any in the
// range (sparse: only non-zero buckets), by queue name.
func (s *Store) PerQueue(q Query) []QueueSeries {
	from, to := q.units()
	if to < from || s == nil {
		return []QueueSeries{}
	}
	w := q.Interval.Seconds()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []QueueSeries{}
	buf := make([]Bucket, to-from+1)
	for id, sr := range s.byID {
		if q.Match != nil && !q.Match(id, sr.name) {
			continue
		}
		clear(buf)
		s.fillLocked(buf, from, q.Interval, sr)
		s.addLiveLocked(buf, from, q.Interval, sr)
		qs := QueueSeries{ID: id, Name: sr.name}
		for i := range buf {
			if !buf[i].IsZero() {
				buf[i].Start = time.Unix((from+int64(i))*w, 0).UTC()
				qs.Buckets = append(qs.Buckets, buf[i])
			}
		}
		if len(qs.Buckets) > 0 {
			out = append(out, qs)
		}
	}
	sortByName(out)
	return out
}

// LastMinute calls fn with every queue's newest closed minute (the per-minute
// gauges of spec 8.3); a queue idle in that minute gets a zero Point.
func (s *Store) LastMinute(fn func(id [16]byte, name string, p Point)) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.minute - 1
	for id, sr := range s.byID {
		fn(id, sr.name, sr.rings[Minute].get(m))
	}
}

func (s *Store) fillLocked(out []Bucket, from int64, iv Interval, sr *series) {
	r := &sr.rings[iv]
	for i := range out {
		out[i].add(r.get(from + int64(i)))
	}
}

// addLiveLocked adds sr's live counters to the bucket holding the minute
// being counted.
func (s *Store) addLiveLocked(out []Bucket, from int64, iv Interval, sr *series) {
	if sr.c == nil || s.minute == 0 {
		return
	}
	u := s.minute * 60 / iv.Seconds()
	if i := u - from; i >= 0 && i < int64(len(out)) {
		out[i].add(sr.c.peek())
	}
}
