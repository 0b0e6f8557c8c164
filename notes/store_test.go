package notes

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"testing"

	"github.com/combmq/comb/vfs"
	"github.com/combmq/comb/vfs/errorfs"
)

func pid(b byte) [16]byte { return [16]byte{0: b, 15: b} }

func trace(p byte, off uint64, id byte, us int64, names ...string) Trace {
	return Trace{MessageRef: MessageRef{pid(p), off}, ID: [16]byte{0: id}, CreatedMicros: us,
		TransactionID: "tx", Group: "__QUEUE_MODE__", EventType: "info", Names: names, Data: []byte(`{"step":1}`)}
}

func mustOpen(t *testing.T, fsys vfs.FS) (*Store, OpenReport) {
	t.Helper()
	s, rep, err := Open(fsys, "/d/notes", Options{QuarantineDir: "/d/quarantine/notes"})
	if err != nil {
		t.Fatal(err)
	}
	return s, rep
}

// An acknowledged tombstone or trace survives a power loss (doc.go: each
// append returns after its fdatasync).
func TestAcknowledgedNotesSurviveCrash(t *testing.T) {
	mem := vfs.NewMem()
	s, _ := mustOpen(t, mem)
	if added, err := s.Delete(MessageRef{pid(1), 7}); err != nil || !added {
		t.Fatalf("delete: %v %v", added, err)
	}
	if added, err := s.Delete(MessageRef{pid(1), 7}); err != nil || added {
		t.Fatalf("repeat delete: %v %v", added, err)
	}
	for i := range 3 {
		if err := s.AddTrace(trace(1, 9, byte(i+1), int64(100+i), "flow")); err != nil {
			t.Fatal(err)
		}
	}
	s2, rep := mustOpen(t, mem.Crash(false))
	if rep != (OpenReport{Records: 4}) {
		t.Fatalf("report %+v", rep)
	}
	if !s2.Deleted(MessageRef{pid(1), 7}) || s2.Deleted(MessageRef{pid(1), 8}) {
		t.Fatal("tombstone lost or invented")
	}
	got := s2.Traces(MessageRef{pid(1), 9})
	if len(got) != 3 || got[0].ID[0] != 1 || got[2].ID[0] != 3 || !reflect.DeepEqual(got[1], trace(1, 9, 2, 101, "flow")) {
		t.Fatalf("traces %+v", got)
	}
}

// A torn or damaged tail (an append a crash interrupted) is copied to the
// quarantine directory and cut; every whole record before it stays. Damage
// with a verified record after it is corruption: Open refuses and changes
// nothing (package record's tail rule, docs/format.md section 8).
func TestTailRule(t *testing.T) {
	mem := vfs.NewMem()
	s, _ := mustOpen(t, mem)
	if _, err := s.Delete(MessageRef{pid(2), 1}); err != nil {
		t.Fatal(err)
	}
	rf := s.rf
	s.Close()
	good := mem.Bytes("/d/notes/log")
	whole, _ := rf.Append(nil, EncodeTrace(&Trace{Names: []string{"x"}}))
	flipped := append([]byte(nil), whole...)
	flipped[len(flipped)-1] ^= 1
	cases := []struct {
		name string
		tail []byte
		want OpenReport
	}{
		{"torn", whole[:len(whole)-3], OpenReport{Records: 1, Tail: "torn", CutBytes: int64(len(whole) - 3)}},
		{"damaged", flipped, OpenReport{Records: 1, Tail: "damaged", CutBytes: int64(len(whole))}},
		{"zeros", make([]byte, 40), OpenReport{Records: 1, Tail: "zeros", CutBytes: 40}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mem.SetBytes("/d/notes/log", append(append([]byte(nil), good...), c.tail...))
			s2, rep := mustOpen(t, mem)
			defer s2.Close()
			kept := rep.KeptAt
			rep.KeptAt = ""
			if rep != c.want {
				t.Fatalf("report %+v, want %+v", rep, c.want)
			}
			if c.name != "zeros" && !bytes.Equal(mem.Bytes(kept), c.tail) {
				t.Fatalf("quarantined %q: %x", kept, mem.Bytes(kept))
			}
			if !s2.Deleted(MessageRef{pid(2), 1}) {
				t.Fatal("record before the tail lost")
			}
			if got := mem.Bytes("/d/notes/log"); !bytes.Equal(got, good) {
				t.Fatalf("file after cut: %d bytes, want %d", len(got), len(good))
			}
		})
	}
	corrupt := append(append(append([]byte(nil), good...), flipped...), whole...)
	mem.SetBytes("/d/notes/log", corrupt)
	if _, _, err := Open(mem, "/d/notes", Options{QuarantineDir: "/d/quarantine/notes"}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("damage before a verified record: %v", err)
	}
	if !bytes.Equal(mem.Bytes("/d/notes/log"), corrupt) {
		t.Fatal("a corrupt file was changed")
	}
}

// The cap per message (MaxTracesPerMessage) refuses the event past it.
func TestTraceCapPerMessage(t *testing.T) {
	s, _ := mustOpen(t, vfs.NewMem())
	for i := range MaxTracesPerMessage {
		tr := trace(3, 1, 0, int64(i))
		tr.ID[1], tr.ID[2] = byte(i), byte(i>>8)
		if err := s.AddTrace(tr); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddTrace(trace(3, 1, 0xff, 0)); err != ErrTooManyTraces {
		t.Fatalf("past the cap: %v", err)
	}
	if err := s.AddTrace(trace(3, 2, 1, 0)); err != nil {
		t.Fatalf("another message: %v", err)
	}
	// The same event again (a commit-log entry replayed after a crash) is a no-op.
	if applied, err := s.Apply(EncodeTrace(&Trace{MessageRef: MessageRef{pid(3), 2}, ID: [16]byte{0: 1}, TransactionID: "tx",
		Group: "__QUEUE_MODE__", EventType: "info", Data: []byte(`{"step":1}`)})); err != nil || applied {
		t.Fatalf("replayed event: %v %v", applied, err)
	}
	if n := s.TraceCount(MessageRef{pid(3), 2}); n != 1 {
		t.Fatalf("%d events after a replay, want 1", n)
	}
}

// Notes go with their message's retention: Prune drops what is below a
// partition's first offset, and all of a partition that is gone, and the
// rewrite keeps exactly the live notes across a crash.
func TestPruneAndCompact(t *testing.T) {
	old := compactMinDeadBytes
	compactMinDeadBytes = 0
	defer func() { compactMinDeadBytes = old }()
	mem := vfs.NewMem()
	s, _ := mustOpen(t, mem)
	for off := uint64(1); off <= 10; off++ {
		if err := s.AddTrace(trace(1, off, byte(off), int64(off), "a")); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Delete(MessageRef{pid(2), off}); err != nil {
			t.Fatal(err)
		}
	}
	keep := func(p [16]byte) (uint64, bool) { return 8, p == pid(1) }
	if err := s.Prune(keep, nil); err != nil {
		t.Fatal(err)
	}
	if s.AnyDeleted() || len(s.Traces(MessageRef{pid(1), 7})) != 0 || len(s.Traces(MessageRef{pid(1), 8})) != 1 {
		t.Fatal("prune kept too much or too little")
	}
	if got, total := s.ByName("a", 10, 0); total != 3 || len(got) != 3 || got[0].Offset != 10 || got[2].Offset != 8 {
		t.Fatalf("by name after prune: %d %+v", total, got)
	}
	if err := s.AddTrace(trace(1, 9, 99, 50, "b")); err != nil {
		t.Fatal(err) // appends go to the rewritten file
	}
	s2, rep := mustOpen(t, mem.Crash(false))
	if rep.Records != 4 || rep.CutBytes != 0 {
		t.Fatalf("after rewrite and crash: %+v", rep)
	}
	names, total := s2.Names(50, 0)
	want := []NameStat{{Name: "b", Traces: 1, Messages: 1, LastSeenMicros: 50}, {Name: "a", Traces: 3, Messages: 3, LastSeenMicros: 10}}
	if total != 2 || !reflect.DeepEqual(names, want) {
		t.Fatalf("names %d %+v", total, names)
	}
}

// A failed sync makes the store refuse further appends (what reached the
// disk is unknown), instead of acknowledging notes it may lose.
func TestFailedSyncRefusesAppends(t *testing.T) {
	fy := errorfs.New(vfs.NewMem())
	s, _ := mustOpen(t, fy)
	remove := fy.Inject(errorfs.Fault{Op: errorfs.OpSync, Err: os.ErrInvalid})
	if _, err := s.Delete(MessageRef{pid(1), 1}); err == nil {
		t.Fatal("delete acknowledged after a failed sync")
	}
	remove()
	if err := s.AddTrace(trace(1, 2, 1, 1)); err == nil {
		t.Fatal("append accepted after a failed sync")
	}
}
