package analytics

import (
	"encoding/binary"
	"testing"
	"time"
	"unsafe"

	"github.com/combmq/comb/vfs"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 30, 0, time.UTC)

func id(b byte) [16]byte { return [16]byte{15: b} }

func minuteQuery(from, to time.Time) Query { return Query{Interval: Minute, From: from, To: to} }

// The minute being counted shows its live counters; after Tick they are in the
// minute's bucket, and the next minute starts at zero.
func TestTickMovesLiveCountersIntoTheirMinute(t *testing.T) {
	s := NewStore()
	s.Tick(t0)
	c := s.Counters(id(1), "q1")
	c.Ingested(10)
	c.Popped(4, 400, 250)
	c.Popped(2, 20, 10)
	c.Processed(3)
	c.Errors(1)
	want := Point{Ingested: 10, Popped: 6, Processed: 3, Errors: 1, LagSumMs: 420, LagMaxMs: 250}
	got := s.Series(minuteQuery(t0, t0))
	if len(got) != 1 || got[0].Point != want || !got[0].Start.Equal(t0.Truncate(time.Minute)) {
		t.Fatalf("live minute = %+v, want %+v", got, want)
	}
	if !s.Tick(t0.Add(time.Minute)) {
		t.Fatal("Tick across a minute boundary reported no roll")
	}
	got = s.Series(minuteQuery(t0, t0.Add(time.Minute)))
	if len(got) != 2 || got[0].Point != want || !got[1].IsZero() {
		t.Fatalf("after tick = %+v", got)
	}
	if avg := got[0].AvgLagMs(); avg != 70 {
		t.Fatalf("avg lag = %v, want 70", avg)
	}
}

// Hour and day buckets are the sums of their minutes (lag max: the largest).
func TestRollupsSumMinutes(t *testing.T) {
	s := NewStore()
	s.Tick(t0)
	c := s.Counters(id(1), "q1")
	for i := range 3 {
		c.Ingested(5)
		c.Popped(1, 100, uint64(100*(i+1)))
		s.Tick(t0.Add(time.Duration(i+1) * time.Minute))
	}
	h := s.Series(Query{Interval: Hour, From: t0, To: t0})
	if len(h) != 1 || h[0].Ingested != 15 || h[0].Popped != 3 || h[0].LagMaxMs != 300 {
		t.Fatalf("hour = %+v", h)
	}
	d := s.Series(Query{Interval: Day, From: t0, To: t0, Match: func(_ [16]byte, n string) bool { return n == "q1" }})
	if len(d) != 1 || d[0].Ingested != 15 {
		t.Fatalf("day = %+v", d)
	}
}

// A filter sums the matching queues only; PerQueue lists them by name.
func TestMatchAndPerQueue(t *testing.T) {
	s := NewStore()
	s.Tick(t0)
	s.Counters(id(1), "b").Ingested(1)
	s.Counters(id(2), "a").Ingested(2)
	s.Counters(id(3), "c").Ingested(4)
	got := s.Series(Query{Interval: Minute, From: t0, To: t0, Match: func(_ [16]byte, n string) bool { return n != "c" }})
	if got[0].Ingested != 3 {
		t.Fatalf("filtered = %d, want 3", got[0].Ingested)
	}
	if all := s.Series(minuteQuery(t0, t0)); all[0].Ingested != 7 {
		t.Fatalf("all = %d, want 7", all[0].Ingested)
	}
	pq := s.PerQueue(minuteQuery(t0, t0))
	if len(pq) != 3 || pq[0].Name != "a" || pq[0].Buckets[0].Ingested != 2 || pq[2].Name != "c" {
		t.Fatalf("per queue = %+v", pq)
	}
}

// A ring forgets buckets older than its window, also after a long idle gap.
func TestRingWindow(t *testing.T) {
	r := newRing(4)
	for u := int64(10); u < 16; u++ {
		r.add(u, Point{Ingested: uint64(u)})
	}
	for u, want := range map[int64]uint64{11: 0, 12: 12, 15: 15, 16: 0} {
		if got := r.get(u).Ingested; got != want {
			t.Errorf("get(%d) = %d, want %d", u, got, want)
		}
	}
	r.add(100, Point{Ingested: 1})
	if r.get(15).Ingested != 0 || r.get(97).Ingested != 0 || r.get(100).Ingested != 1 {
		t.Fatal("a gap longer than the window did not clear it")
	}
	r.add(50, Point{Ingested: 1}) // older than the window: dropped
	if r.get(50).Ingested != 0 {
		t.Fatal("an old bucket was written")
	}
}

// The file keeps every ring: a restored store answers what the saved one did,
// and the series reattach to their queues by id.
func TestSaveLoadRoundTrip(t *testing.T) {
	fsys := vfs.NewMem()
	if err := fsys.MkdirAll("d"); err != nil {
		t.Fatal(err)
	}
	s := NewStore()
	s.Tick(t0)
	s.Counters(id(1), "q1").Ingested(7)
	s.Counters(id(2), "q2").Popped(3, 30, 20)
	s.Flush(t0)
	if err := s.Save(fsys, "d/analytics", false); err != nil {
		t.Fatal(err)
	}
	r, err := Load(fsys, "d/analytics")
	if err != nil {
		t.Fatal(err)
	}
	r.Counters(id(1), "q1").Ingested(1) // the restarted broker keeps counting the same minute
	r.DropUnclaimed()                   // q2 was deleted meanwhile
	got := r.Series(minuteQuery(t0, t0))
	if got[0].Ingested != 8 || got[0].Popped != 3 || got[0].LagMaxMs != 20 {
		t.Fatalf("restored all-queues minute = %+v", got[0])
	}
	if pq := r.PerQueue(minuteQuery(t0, t0)); len(pq) != 1 || pq[0].Name != "q1" || pq[0].Buckets[0].Ingested != 8 {
		t.Fatalf("restored per queue = %+v", pq)
	}
	if h := r.Series(Query{Interval: Hour, From: t0, To: t0}); h[0].Ingested != 8 {
		t.Fatalf("restored hour = %+v (the live minute counts in its hour too)", h[0])
	}
}

// Dead letters are counted per minute and survive a save; a version-1 file
// (written before DeadLettered existed) still loads, its points reading 0.
func TestDeadLetteredPerMinuteAndVersion1Files(t *testing.T) {
	s := NewStore()
	s.Tick(t0)
	c := s.Counters(id(1), "q1")
	c.Errors(3)
	c.DeadLettered(2)
	s.Flush(t0)
	r, err := Decode(s.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Series(minuteQuery(t0, t0)); got[0].DeadLettered != 2 || got[0].Errors != 3 {
		t.Fatalf("restored minute = %+v, want 2 dead letters of 3 errors", got[0])
	}
	next := t0.Add(time.Minute)
	r.Tick(next)
	if got := r.Series(minuteQuery(next, next)); got[0].DeadLettered != 0 {
		t.Fatalf("the next minute = %+v: dead letters are per minute", got[0])
	}

	v1 := version1Body(t0, Point{Ingested: 5, Errors: 1, LagSumMs: 9, LagMaxMs: 4})
	r, err = Decode(v1)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Series(minuteQuery(t0, t0)); got[0].Ingested != 5 || got[0].Errors != 1 || got[0].LagMaxMs != 4 || got[0].DeadLettered != 0 {
		t.Fatalf("version-1 minute = %+v", got[0])
	}
}

// version1Body is a version-1 file body with one point in the all-queues
// minute ring at t and the other rings empty (doc.go's layout before version 2).
func version1Body(t time.Time, p Point) []byte {
	minute := t.Unix() / 60
	b := []byte{1}
	b = binary.AppendVarint(b, minute)
	b = binary.AppendUvarint(b, 1)
	b = append(b, make([]byte, 16)...)
	b = binary.AppendUvarint(b, 0) // name ""
	b = binary.AppendVarint(b, minute)
	b = binary.AppendUvarint(b, 1)
	b = binary.AppendUvarint(b, 0) // age
	for _, v := range []uint64{p.Ingested, p.Popped, p.Processed, p.Errors, p.LagSumMs, p.LagMaxMs} {
		b = binary.AppendUvarint(b, v)
	}
	for range 2 { // hours, days: empty
		b = binary.AppendVarint(b, 0)
		b = binary.AppendUvarint(b, 0)
	}
	return b
}

// A missing file is an empty store; a damaged one is an error (the broker
// warns and starts blank).
func TestLoadMissingAndDamaged(t *testing.T) {
	fsys := vfs.NewMem()
	if err := fsys.MkdirAll("d"); err != nil {
		t.Fatal(err)
	}
	s, err := Load(fsys, "d/none")
	if err != nil || len(s.byID) != 0 {
		t.Fatalf("missing file: %v", err)
	}
	full := NewStore()
	full.Tick(t0)
	full.Counters(id(1), "q1").Ingested(7)
	full.Flush(t0)
	if err := full.Save(fsys, "d/a", true); err != nil {
		t.Fatal(err)
	}
	data, _ := fsys.ReadFile("d/a")
	for _, cut := range []int{len(data) - 1, 20, 3} {
		if err := vfs.WriteFileAtomic(fsys, "d/b", data[:cut], true); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(fsys, "d/b"); err == nil {
			t.Errorf("file cut at %d loaded", cut)
		}
	}
	bad := append([]byte(nil), data...)
	bad[len(bad)-2] ^= 0xff
	_ = vfs.WriteFileAtomic(fsys, "d/c", bad, true)
	if _, err := Load(fsys, "d/c"); err == nil {
		t.Error("a flipped byte loaded")
	}
}

func FuzzDecode(f *testing.F) {
	s := NewStore()
	s.Tick(t0)
	s.Counters(id(1), "q1").Ingested(7)
	s.Counters(id(2), "q2").Popped(3, 30, 20)
	s.Flush(t0)
	f.Add(s.Encode())
	f.Add(version1Body(t0, Point{Ingested: 5, Errors: 1}))
	f.Add([]byte{1})
	f.Add([]byte{1, 2, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := Decode(b)
		if err != nil {
			return
		}
		// Whatever decoded must answer queries and encode again.
		st.Series(Query{Interval: Hour, From: t0.Add(-24 * time.Hour), To: t0})
		st.PerQueue(minuteQuery(t0.Add(-time.Hour), t0))
		if _, err := Decode(st.Encode()); err != nil {
			t.Fatalf("re-encoded store does not decode: %v", err)
		}
	})
}

// The hot path: one atomic add per counter, no allocation.
func BenchmarkCountersPush(b *testing.B) {
	c := NewStore().Counters(id(1), "q")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.Ingested(1)
		}
	})
}

func BenchmarkCountersPop(b *testing.B) {
	c := NewStore().Counters(id(1), "q")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c.Popped(10, 1000, uint64(i%500))
	}
}

// Counting races with Tick and queries: nothing is lost or counted twice.
func TestConcurrentCountingLosesNothing(t *testing.T) {
	s := NewStore()
	s.Tick(t0)
	c := s.Counters(id(1), "q")
	const workers, adds = 4, 5000
	done := make(chan struct{})
	for range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			for range adds {
				c.Ingested(1)
				c.Popped(1, 3, 3)
			}
		}()
	}
	now := t0
	for range 50 {
		now = now.Add(time.Minute)
		s.Tick(now)
		s.Series(Query{Interval: Day, From: t0, To: now})
	}
	for range workers {
		<-done
	}
	got := s.Series(Query{Interval: Day, From: t0, To: now})
	var sum Point
	for _, b := range got {
		sum.add(b.Point)
	}
	if sum.Ingested != workers*adds || sum.Popped != workers*adds || sum.LagSumMs != 3*workers*adds {
		t.Fatalf("counted %+v, want %d each", sum, workers*adds)
	}
}

// doc.go's memory bound assumes these sizes.
func TestSizesOfTheBound(t *testing.T) {
	if s := unsafe.Sizeof(Point{}); s != 56 {
		t.Errorf("Point is %d bytes; update doc.go's bound", s)
	}
	if s := unsafe.Sizeof(Counters{}); s != 64 {
		t.Errorf("Counters is %d bytes; update doc.go's bound", s)
	}
}

// Crash after each save: the file holds the saved series (Save syncs the
// file and its directory); a save that never synced leaves the previous
// series or the new one, never a file that does not load.
func TestSaveSurvivesACrash(t *testing.T) {
	fsys := vfs.NewStrictMem("/data")
	require := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	s := NewStore()
	s.Tick(t0)
	s.Counters(id(1), "q").Ingested(3)
	s.Flush(t0)
	require(s.Save(fsys, "/data/analytics", false))
	after := fsys.Crash(false)
	r, err := Load(after, "/data/analytics")
	require(err)
	if got := r.Series(minuteQuery(t0, t0))[0].Ingested; got != 3 {
		t.Fatalf("after a crash: %d ingested, want 3", got)
	}

	s.Counters(id(1), "q").Ingested(4)
	s.Flush(t0)
	require(s.Save(after, "/data/analytics", true)) // not synced
	r, err = Load(after.Crash(false), "/data/analytics")
	require(err)
	if got := r.Series(minuteQuery(t0, t0))[0].Ingested; got != 3 && got != 7 {
		t.Fatalf("an unsynced save then a crash: %d ingested, want the old 3 or the new 7", got)
	}
}
