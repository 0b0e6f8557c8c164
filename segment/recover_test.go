package segment

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/combmq/comb/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// threeSegments writes segments of offsets 1-4, 5-8, 9-12 and returns the
// byte position where the last one starts and the file size.
func threeSegments(t *testing.T, fs *vfs.Mem, opts Options) (lastStart, size int) {
	withIndexFiles(t) // these tests damage a file whose index lists its segments
	l, _ := openMem(t, fs, opts)
	for i := 0; i < 3; i++ {
		_, err := l.Append(int64(100*(i+1)), recs(i*4, 4, 60))
		require.NoError(t, err)
	}
	require.NoError(t, l.Close())
	b := fs.Bytes("/p/" + segName(1))
	h1, err := parseHeader(b)
	require.NoError(t, err)
	h2, err := parseHeader(b[h1.size():])
	require.NoError(t, err)
	return int(h1.size() + h2.size()), len(b)
}

// Issue 2: torn-write recovery at every byte boundary of the last segment.
func TestTornTailAtEveryByte(t *testing.T) {
	for _, codec := range []Codec{CodecNone, CodecS2} {
		for _, tail := range []string{"cut", "cut + zeros", "cut + garbage"} {
			t.Run(codec.String()+"/"+tail, func(t *testing.T) {
				orig := vfs.NewMem()
				lastStart, size := threeSegments(t, orig, Options{Codec: codec, MinCompressBytes: -1})
				full := orig.Bytes("/p/" + segName(1))
				for cut := lastStart; cut < size; cut++ {
					fs := orig.Crash(true) // the index still lists all three segments
					b := append([]byte(nil), full[:cut]...)
					switch tail {
					case "cut + zeros":
						b = append(b, make([]byte, 100)...)
					case "cut + garbage":
						for i := 0; i < 100; i++ {
							b = append(b, byte(i*37+cut))
						}
					}
					fs.SetBytes("/p/"+segName(1), b)
					l, rep := openMem(t, fs, Options{})
					require.Equal(t, uint64(9), l.NextOffset(), "cut at %d", cut)
					switch {
					case len(b) == lastStart:
						// A clean cut at a segment boundary: nothing torn to
						// report, only the stale index entry to drop.
						assert.Zero(t, rep.TruncatedBytes)
						assert.Zero(t, rep.LostFirstOffset)
						assert.Empty(t, rep.File)
					case tail == "cut":
						assert.Equal(t, int64(len(b)-lastStart), rep.TruncatedBytes, "cut at %d", cut)
						assert.Equal(t, "/p/"+segName(1), rep.File)
						assert.Equal(t, uint64(9), rep.LostFirstOffset, "cut at %d", cut)
						wantLast := uint64(9) // header torn: only the first lost offset is known
						if cut-lastStart >= HeaderSize {
							wantLast = 12 // the header survived and says 9-12
						}
						assert.Equal(t, wantLast, rep.LostLastOffset, "cut at %d", cut)
					default:
						assert.Equal(t, int64(len(b)-lastStart), rep.TruncatedBytes, "cut at %d", cut)
						assert.Equal(t, uint64(9), rep.LostFirstOffset, "cut at %d", cut)
						// the header is partly filler: its count is a guess
						assert.GreaterOrEqual(t, rep.LostLastOffset, uint64(9), "cut at %d", cut)
					}
					assert.Equal(t, []string{"/p/" + idxName(1)}, rep.IndexesRebuilt, "cut at %d", cut)
					assert.Len(t, fs.Bytes("/p/"+segName(1)), lastStart)
					// The log goes on from the cut.
					first, err := l.Append(400, recs(100, 2, 10))
					require.NoError(t, err)
					assert.Equal(t, uint64(9), first)
					got := readAll(t, l, 1)
					require.Len(t, got, 10)
					requireRecord(t, rec(7, 60), got[7])
					requireRecord(t, rec(101, 10), got[9])
					require.NoError(t, l.Close())
				}
			})
		}
	}
}

// Issue 2: a flipped byte in the header or the payload is detected by the checksum.
func TestFlippedByteDetected(t *testing.T) {
	orig := vfs.NewMem()
	lastStart, _ := threeSegments(t, orig, Options{})
	full := orig.Bytes("/p/" + segName(1))
	h1, _ := parseHeader(full)
	// Flip each byte of the middle segment: Open (which verifies only the
	// tail) succeeds, Read and Verify report exactly that segment.
	for at := int(h1.size()); at < lastStart; at++ {
		fs := orig.Crash(true)
		b := append([]byte(nil), full...)
		b[at] ^= 0x40
		fs.SetBytes("/p/"+segName(1), b)
		l, rep := openMem(t, fs, Options{})
		require.False(t, rep.Repaired(), "flip at %d", at)
		var rb ReadBuffer
		msgs, err := l.Read(1, 100, 0, &rb)
		var ce *CorruptionError
		require.ErrorAs(t, err, &ce, "flip at %d", at)
		assert.ErrorIs(t, err, ErrCorrupt)
		assert.Len(t, msgs, 4, "the segment before the damage is returned")
		assert.Equal(t, h1.size(), ce.StartByte)
		var reports []*CorruptionError
		_, verr := verifyFS(fs, "/p", func(c *CorruptionError) { reports = append(reports, c) })
		require.NoError(t, verr)
		require.Len(t, reports, 1, "flip at %d", at)
		assert.Equal(t, h1.size(), reports[0].StartByte)
		assert.Equal(t, int64(lastStart), reports[0].EndByte, "Verify resyncs at the next good segment")
		assert.Equal(t, uint64(5), reports[0].FirstOffset)
		assert.Equal(t, uint64(8), reports[0].LastOffset)
		require.NoError(t, l.Close())
	}
}

func TestFlippedByteInLastSegmentIsTruncatedOnOpen(t *testing.T) {
	orig := vfs.NewMem()
	lastStart, size := threeSegments(t, orig, Options{})
	full := orig.Bytes("/p/" + segName(1))
	for _, at := range []int{lastStart, lastStart + 8, lastStart + 40, lastStart + HeaderSize, size - 1} {
		fs := orig.Crash(true)
		b := append([]byte(nil), full...)
		b[at] ^= 1
		fs.SetBytes("/p/"+segName(1), b)
		l, rep := openMem(t, fs, Options{})
		assert.Equal(t, uint64(9), l.NextOffset(), "flip at %d", at)
		assert.Equal(t, int64(size-lastStart), rep.TruncatedBytes, "flip at %d", at)
		require.NoError(t, l.Close())
	}
}

func TestCorruptSealedFileFailsOpenWhenIndexMustBeRebuilt(t *testing.T) {
	fs := vfs.NewMem()
	l, _ := openMem(t, fs, Options{MaxFileBytes: 300})
	for i := 0; i < 4; i++ {
		_, err := l.Append(int64(i), recs(i*4, 4, 60)) // one segment > 300 B: one file each
		require.NoError(t, err)
	}
	require.NoError(t, l.Close())
	b := fs.Bytes("/p/" + segName(5))
	b[HeaderSize+3] ^= 0xff
	fs.SetBytes("/p/"+segName(5), b)
	require.NoError(t, fs.Remove("/p/"+idxName(5)))
	_, _, err := openLog(fs, "/p", Options{})
	var ce *CorruptionError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "/p/"+segName(5), ce.File)
	assert.Equal(t, int64(0), ce.StartByte)
	assert.Equal(t, int64(len(b)), ce.EndByte)
	assert.Equal(t, uint64(5), ce.FirstOffset)
	assert.Equal(t, uint64(8), ce.LastOffset)
}

// Issue 2: index deleted, truncated or garbage → rebuilt, same answers.
func TestIndexRebuilt(t *testing.T) {
	damage := map[string]func(b []byte) []byte{
		"deleted":             func([]byte) []byte { return nil },
		"truncated mid-entry": func(b []byte) []byte { return b[:len(b)-7] },
		"header only":         func(b []byte) []byte { return b[:32] },
		"torn header":         func(b []byte) []byte { return b[:10] },
		"garbage entry":       func(b []byte) []byte { b[32+40] ^= 0xff; return b },
		"wrong file":          func(b []byte) []byte { b[8]++; return b },
		"stale extra entry": func(b []byte) []byte {
			e := append([]byte(nil), b[len(b)-32:]...)
			return append(b, e...)
		},
	}
	for name, fn := range damage {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			l, _, err := Open(dir, Options{MaxFileBytes: 2000})
			require.NoError(t, err)
			for i := 0; i < 20; i++ {
				_, err := l.Append(int64(i*10), recs(i*4, 4, 60))
				require.NoError(t, err)
			}
			type answers struct {
				at, before []uint64
				msgs       []Message
			}
			ask := func(l *Log) answers {
				var a answers
				for ts := int64(-5); ts < 210; ts += 5 {
					a.at = append(a.at, l.OffsetAtOrAfterTime(ts))
					a.before = append(a.before, l.LastOffsetAtOrBefore(ts))
				}
				a.msgs = readAll(t, l, 1)
				return a
			}
			want := ask(l)
			require.NoError(t, l.Close())
			for _, base := range []uint64{1, 41} { // a sealed file and the active one
				path := filepath.Join(dir, idxName(base))
				b, err := os.ReadFile(path)
				require.NoError(t, err)
				if nb := fn(b); nb == nil {
					require.NoError(t, os.Remove(path))
				} else {
					require.NoError(t, os.WriteFile(path, nb, 0o644))
				}
			}
			l, rep, err := Open(dir, Options{MaxFileBytes: 2000})
			require.NoError(t, err)
			assert.Contains(t, rep.IndexesRebuilt, filepath.Join(dir, idxName(1)))
			assert.Contains(t, rep.IndexesRebuilt, filepath.Join(dir, idxName(41)))
			assert.Zero(t, rep.TruncatedBytes)
			assert.Equal(t, want, ask(l))
			require.NoError(t, l.Close())
		})
	}
}

func TestOpenRejectsGapBetweenFiles(t *testing.T) {
	fs := vfs.NewMem()
	l, _ := openMem(t, fs, Options{MaxFileBytes: 300})
	for i := 0; i < 3; i++ {
		_, err := l.Append(int64(i), recs(i*4, 4, 60))
		require.NoError(t, err)
	}
	require.NoError(t, l.Close())
	fs.SetBytes("/p/"+segName(5), nil) // a sealed file emptied
	_, _, err := openLog(fs, "/p", Options{})
	assert.True(t, errors.Is(err, ErrCorrupt), "%v", err)
}
