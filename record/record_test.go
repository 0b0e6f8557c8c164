package record

import (
	"bytes"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/vfs"
)

var testFmt = NewFormat("TEST", 64)

func frames(t testing.TB, bodies ...string) []byte {
	var b []byte
	for _, s := range bodies {
		var err error
		b, err = testFmt.Append(b, []byte(s))
		require.NoError(t, err)
	}
	return b
}

func TestAppendRefusesWhatReadersRefuse(t *testing.T) {
	_, err := testFmt.Append(nil, nil)
	require.ErrorIs(t, err, ErrEmpty)
	b, err := testFmt.Append([]byte("x"), bytes.Repeat([]byte("a"), 65))
	require.ErrorIs(t, err, ErrTooLarge)
	require.Equal(t, "x", string(b), "nothing appended")
	b, start := testFmt.Begin([]byte("y"))
	b = append(b, bytes.Repeat([]byte("a"), 65)...)
	b, err = testFmt.Finish(b, start)
	require.ErrorIs(t, err, ErrTooLarge)
	require.Equal(t, "y", string(b), "cut back to the frame's start")
}

// The tail rules of the package comment, one case each.
func TestScanTails(t *testing.T) {
	two := frames(t, "first", "second")
	one := frames(t, "first")
	third := frames(t, "third")
	flip := func(b []byte, i int) []byte { c := bytes.Clone(b); c[i] ^= 1; return c }
	cases := []struct {
		name    string
		data    []byte
		end     int
		tail    Tail
		resync  int
		dataEnd int
	}{
		{"empty file", nil, 0, TailClean, -1, 0},
		{"clean end", two, len(two), TailClean, -1, len(two)},
		{"preallocated zeros", append(bytes.Clone(two), make([]byte, 100)...), len(two), TailZeros, -1, len(two)},
		{"partial header", append(bytes.Clone(one), two[len(one):len(one)+5]...), len(one), TailTorn, -1, len(one) + 5},
		{"body cut short", two[:len(two)-2], len(one), TailTorn, -1, len(two) - 2},
		{"full-length frame with a flipped body bit", flip(two, len(two)-1), len(one), TailDamaged, -1, len(two)},
		{"torn write into preallocated space", append(append(bytes.Clone(one), two[len(one):len(one)+20]...), make([]byte, 40)...), len(one), TailDamaged, -1, len(one) + 20},
		{"zero header then garbage", append(append(bytes.Clone(one), make([]byte, 16)...), 'x'), len(one), TailDamaged, -1, len(one) + 17},
		{"damage before a verified frame", append(flip(two, len(one)+HeaderSize), third...), len(one), TailCorrupt, len(two), len(two) + len(third)},
		{"first frame damaged, second intact", flip(two, 2), 0, TailCorrupt, len(one), len(two)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			s, err := testFmt.Scan(c.data, func(pos int64, body []byte) error {
				got = append(got, string(body))
				return nil
			})
			require.NoError(t, err)
			require.Equal(t, int64(c.end), s.End)
			require.Equal(t, c.tail, s.Tail)
			require.Equal(t, int64(c.resync), s.Resync)
			require.Equal(t, int64(c.dataEnd), s.DataEnd)
			require.Equal(t, len(got), s.Frames)
		})
	}
}

func TestScanStopsAtCallerError(t *testing.T) {
	data := frames(t, "a", "bad", "c")
	boom := os.ErrInvalid
	s, err := testFmt.Scan(data, func(pos int64, body []byte) error {
		if string(body) == "bad" {
			return boom
		}
		return nil
	})
	require.ErrorIs(t, err, boom)
	require.Equal(t, int64(HeaderSize+1), s.End)
}

func TestWriteReadFile(t *testing.T) {
	m := vfs.NewStrictMem("/d")
	require.NoError(t, testFmt.WriteFile(m, "/d/f", []byte("body"), false))
	got, err := testFmt.ReadFile(m.Crash(false), "/d/f")
	require.NoError(t, err)
	require.Equal(t, "body", string(got))
	b := m.Bytes("/d/f")
	b[len(b)-1] ^= 0x10
	m.SetBytes("/d/f", b)
	_, err = testFmt.ReadFile(m, "/d/f")
	require.ErrorIs(t, err, ErrChecksum)
	m.SetBytes("/d/f", append(frames(t, "body"), 0))
	_, err = testFmt.ReadFile(m, "/d/f")
	require.ErrorIs(t, err, ErrHeader)
}

// FuzzScan: any bytes scan without panicking, the verified prefix re-encodes
// to itself, and the tail classification is consistent with its fields.
func FuzzScan(f *testing.F) {
	f.Add(frames(f, "a", "bb"))
	f.Add(append(frames(f, "a"), 0, 0, 0))
	f.Add([]byte("TEST\x05\x00\x00\x00garbage"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var re []byte
		s, err := testFmt.Scan(data, func(pos int64, body []byte) error {
			var aerr error
			re, aerr = testFmt.Append(re, body)
			return aerr
		})
		require.NoError(t, err)
		require.True(t, bytes.Equal(data[:s.End], re), "the verified prefix re-encodes to itself")
		require.LessOrEqual(t, s.End, s.DataEnd)
		require.LessOrEqual(t, s.DataEnd, int64(len(data)))
		switch s.Tail {
		case TailClean:
			require.Equal(t, int64(len(data)), s.End)
		case TailZeros:
			require.False(t, s.Lost())
		case TailCorrupt:
			require.Greater(t, s.Resync, s.End)
			_, _, nerr := testFmt.Next(data[s.Resync:])
			require.NoError(t, nerr)
		default:
			require.True(t, s.Lost())
		}
	})
}

// A salted format's frames do not verify under another seed (or none): a
// client's bytes cannot carry a frame the file would accept.
func TestSeedSeparatesFiles(t *testing.T) {
	salted := testFmt.WithSeed(0x9e3779b97f4a7c15)
	b, err := salted.Append(nil, []byte("body"))
	require.NoError(t, err)
	_, _, err = salted.Next(b)
	require.NoError(t, err)
	_, _, err = testFmt.Next(b)
	require.ErrorIs(t, err, ErrChecksum)
	_, _, err = testFmt.WithSeed(1).Next(b)
	require.ErrorIs(t, err, ErrChecksum)
}
