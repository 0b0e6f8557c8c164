package replica

import (
	"bytes"
	"errors"
	"testing"
)

func TestEntryRoundTrip(t *testing.T) {
	cases := []entry{
		{lsn: 1, origin: 7, kind: 3, payload: []byte{}},
		{lsn: 1 << 40, origin: ^uint64(0), kind: 255, payload: []byte("segment bytes")},
	}
	for _, c := range cases {
		got, err := decodeEntry(encodeEntry(c))
		if err != nil {
			t.Fatalf("decode %+v: %v", c, err)
		}
		if got.lsn != c.lsn || got.origin != c.origin || got.kind != c.kind || !bytes.Equal(got.payload, c.payload) {
			t.Fatalf("round trip: got %+v, want %+v", got, c)
		}
	}
}

func TestDecodeEntryRefuses(t *testing.T) {
	good := encodeEntry(entry{lsn: 5, origin: 1, kind: 2, payload: []byte("x")})
	short := good[:headerLen-1]
	badVersion := append([]byte{9}, good[1:]...)
	zeroLSN := encodeEntry(entry{lsn: 0, kind: 2})
	for name, data := range map[string][]byte{"short header": short, "unknown version": badVersion, "LSN 0": zeroLSN, "empty": nil} {
		if _, err := decodeEntry(data); !errors.Is(err, ErrBadEntry) {
			t.Errorf("%s: got %v, want ErrBadEntry", name, err)
		}
	}
}

// FuzzDecodeEntry feeds every command decoder (fsm.Apply picks one by the
// first byte): none may panic, and whatever one accepts re-encodes to a
// command it reads back the same; no input is two kinds of command.
func FuzzDecodeEntry(f *testing.F) {
	f.Add(encodeEntry(entry{lsn: 5, origin: 1, kind: 2, payload: []byte("x")}))
	f.Add([]byte{1, 0, 0})
	f.Add(encodeAnnounce(announcement{node: "n1", httpAddr: "127.0.0.1:6632"}))
	f.Add([]byte{announceVersion, 200, 'n'})
	f.Add(encodeClusterID(clusterIDCommand{id: "0123456789abcdef0123456789abcdef"}))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, cerr := decodeClusterID(data)
		if cerr == nil {
			again, err := decodeClusterID(encodeClusterID(c))
			if err != nil || again != c {
				t.Fatalf("re-encoding %+v gave %+v, %v", c, again, err)
			}
		}
		a, aerr := decodeAnnounce(data)
		if aerr == nil {
			again, err := decodeAnnounce(encodeAnnounce(a))
			if err != nil || again != a {
				t.Fatalf("re-encoding %+v gave %+v, %v", a, again, err)
			}
		}
		e, err := decodeEntry(data)
		if err != nil {
			return
		}
		if aerr == nil || cerr == nil {
			t.Fatalf("%x decodes as an entry and as another command", data)
		}
		again, err := decodeEntry(encodeEntry(e))
		if err != nil || again.lsn != e.lsn || again.origin != e.origin || again.kind != e.kind || !bytes.Equal(again.payload, e.payload) {
			t.Fatalf("re-encoding %+v gave %+v, %v", e, again, err)
		}
	})
}
