package notes

import (
	"bytes"
	"errors"
	"testing"

	"github.com/combmq/comb/vfs"
)

// notesFile returns a file holding a header, one tombstone and one trace,
// and the record format it is seeded with.
func notesFile(t testing.TB) ([]byte, *Store) {
	t.Helper()
	mem := vfs.NewMem()
	s, _, err := Open(mem, "/d/notes", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(MessageRef{pid(2), 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddTrace(trace(2, 3, 9, 100, "flow")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	return mem.Bytes("/d/notes/log"), s
}

// Check gives, for every kind of damage, the verdict Open acts on: what it
// cuts (and keeps) or that it refuses, with the byte positions (issue 21:
// fsck reads every file the server reads at start-up, with its decoder).
func TestCheckIsOpensVerdict(t *testing.T) {
	good, s := notesFile(t)
	hdr := int64(headerFrameBytes)
	rec2 := int64(len(good)) // end of the file
	whole, _ := s.rf.Append(nil, EncodeTombstone(MessageRef{pid(3), 300}))
	flipLast := append([]byte(nil), good...)
	flipLast[len(flipLast)-1] ^= 1
	tomb := hdr + record16 + int64(len(EncodeTombstone(MessageRef{pid(2), 1})))
	flipFirst := append([]byte(nil), good...)
	flipFirst[hdr+record16+2] ^= 1
	flipHeader := append([]byte(nil), good...)
	flipHeader[8] ^= 0x40 // the acceptance check's byte: the header's checksum
	undecodable, _ := s.rf.Append(nil, []byte{7, 1, 2})
	cases := []struct {
		name   string
		data   []byte
		want   Verdict
		refuse bool
		start  int64 // DamageError.Start
	}{
		{"clean", good, Verdict{Records: 2, End: rec2}, false, 0},
		{"torn tail: cut", append(append([]byte(nil), good...), whole[:len(whole)-1]...),
			Verdict{Records: 2, End: rec2, Tail: "torn", KeptFrom: rec2, KeptTo: rec2 + int64(len(whole)) - 1}, false, 0},
		{"damaged last record: cut and kept", flipLast,
			Verdict{Records: 1, End: tomb, Tail: "damaged", KeptFrom: tomb, KeptTo: rec2}, false, 0},
		{"zeros after the records: cut, nothing kept", append(append([]byte(nil), good...), make([]byte, 30)...),
			Verdict{Records: 2, End: rec2, Tail: "zeros", KeptFrom: rec2, KeptTo: rec2}, false, 0},
		{"header cut short: written afresh", good[:10], Verdict{Recreate: true}, false, 0},
		{"damage before a verified record: refused", flipFirst, Verdict{}, true, hdr},
		{"flipped header byte: refused", flipHeader, Verdict{}, true, 0},
		{"verified record that does not decode: refused", append(append([]byte(nil), good...), undecodable...), Verdict{}, true, rec2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mem := vfs.NewMem()
			mem.SetBytes("/d/notes/log", c.data)
			v, err := Check(mem, "/d/notes")
			var de *DamageError
			if c.refuse {
				if !errors.As(err, &de) || !errors.Is(err, ErrCorrupt) || de.Start != c.start {
					t.Fatalf("Check: %v, want a DamageError from byte %d", err, c.start)
				}
			} else {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				c.want.Path, c.want.Exists, c.want.Size = "/d/notes/log", true, int64(len(c.data))
				if v != c.want {
					t.Fatalf("verdict %+v, want %+v", v, c.want)
				}
			}
			if !bytes.Equal(mem.Bytes("/d/notes/log"), c.data) {
				t.Fatal("Check changed the file")
			}
			st, rep, oerr := Open(mem, "/d/notes", Options{QuarantineDir: "/d/q"})
			if c.refuse {
				if !errors.Is(oerr, ErrCorrupt) {
					t.Fatalf("Open: %v, want ErrCorrupt as Check says", oerr)
				}
				return
			}
			if oerr != nil {
				t.Fatalf("Open: %v", oerr)
			}
			st.Close()
			if rep.Records != v.Records || rep.Tail != v.Tail {
				t.Fatalf("Open did %+v, Check said %+v", rep, v)
			}
		})
	}
}

// record16 is a frame header's size (record.HeaderSize) in this file's tests.
const record16 = 16

// FuzzCheck: on any bytes Check and Open agree (Open refuses exactly where
// Check reports damage; Open cuts exactly what Check says), and neither
// panics.
func FuzzCheck(f *testing.F) {
	good, _ := notesFile(f)
	f.Add(good)
	f.Add(good[:len(good)-2])
	f.Add([]byte("CMNH"))
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := vfs.NewMem()
		mem.SetBytes("/n/log", data)
		v, cerr := Check(mem, "/n")
		s, rep, oerr := Open(mem, "/n", Options{})
		if (cerr != nil) != (oerr != nil) {
			t.Fatalf("Check %v, Open %v", cerr, oerr)
		}
		if oerr != nil {
			return
		}
		defer s.Close()
		if rep.Records != v.Records || rep.Tail != v.Tail {
			t.Fatalf("Open did %+v, Check said %+v", rep, v)
		}
		if v.Tail != "" && int64(len(mem.Bytes("/n/log"))) != v.End {
			t.Fatalf("Open cut to %d bytes, Check said %d", len(mem.Bytes("/n/log")), v.End)
		}
	})
}
