package segment

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scanLog writes 10 segments of 4 records (offsets 1-40, timestamps 10..100 µs)
// across several files and closes the log.
func scanLog(t *testing.T, codec Codec) string {
	t.Helper()
	dir := t.TempDir()
	l, _, err := Open(dir, Options{MaxFileBytes: 900, Codec: codec, MinCompressBytes: -1})
	require.NoError(t, err)
	for i := 0; i < 10; i++ {
		_, err := l.Append(int64(10*(i+1)), recs(i*4, 4, 60))
		require.NoError(t, err)
	}
	require.NoError(t, l.Close())
	return dir
}

type scanned struct {
	infos []SegmentInfo
	msgs  []Message
}

func scanAll(t *testing.T, dir string, from uint64, limit int) (scanned, error) {
	t.Helper()
	var s scanned
	err := Scan(dir, from, func(info SegmentInfo, msgs []Message) bool {
		s.infos = append(s.infos, info)
		for _, m := range msgs {
			m.Payload = append([]byte(nil), m.Payload...)
			m.Extra = append([]byte(nil), m.Extra...)
			if len(m.Extra) == 0 {
				m.Extra = nil
			}
			s.msgs = append(s.msgs, m)
		}
		return limit <= 0 || len(s.infos) < limit
	})
	return s, err
}

// dirDigest fingerprints every file name and content under dir.
func dirDigest(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		out[e.Name()] = sha256.Sum256(b)
	}
	return out
}

// Issue 5: Scan yields every segment and record in offset order, exactly as
// Read does, with the segment's place in its file.
func TestScanYieldsEverySegment(t *testing.T) {
	for _, codec := range []Codec{CodecNone, CodecS2, CodecZstd} {
		t.Run(codec.String(), func(t *testing.T) {
			dir := scanLog(t, codec)
			before := dirDigest(t, dir)
			s, err := scanAll(t, dir, 0, 0)
			require.NoError(t, err)
			require.Len(t, s.infos, 10)
			require.Len(t, s.msgs, 40)
			for i, m := range s.msgs {
				assert.Equal(t, uint64(i+1), m.Offset)
				assert.Equal(t, int64(10*(i/4+1)), m.TimestampMicros)
				requireRecord(t, rec(i, 60), m)
			}
			sizes := map[string]int64{}
			for i, info := range s.infos {
				assert.Equal(t, uint64(4*i+1), info.FirstOffset)
				assert.Equal(t, uint32(4), info.Count)
				assert.Equal(t, int64(10*(i+1)), info.TimestampMicros)
				assert.Equal(t, codec, info.Codec)
				assert.Equal(t, sizes[info.File], info.Pos, "segments are back to back")
				sizes[info.File] += info.Bytes
			}
			assert.GreaterOrEqual(t, len(sizes), 2, "several files")
			for name, n := range sizes {
				st, err := os.Stat(filepath.Join(dir, name))
				require.NoError(t, err)
				assert.Equal(t, st.Size(), n, name)
			}
			assert.Equal(t, before, dirDigest(t, dir), "read-only")
		})
	}
}

func TestScanStartsAtTheSegmentHoldingFrom(t *testing.T) {
	cases := []struct {
		name       string
		from       uint64
		dropIndex  bool
		firstSeg   uint64
		segs, msgs int
	}{
		{"from 0 is the first segment", 0, false, 1, 10, 40},
		{"from inside a segment starts at its first offset", 10, false, 9, 8, 32},
		{"from at a segment boundary", 13, false, 13, 7, 28},
		{"without index files the headers are followed", 10, true, 9, 8, 32},
		{"from the last offset", 40, false, 37, 1, 4},
		{"from past the end yields nothing", 41, false, 0, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := scanLog(t, CodecS2)
			if tc.dropIndex {
				idx, err := filepath.Glob(filepath.Join(dir, "*.idx"))
				require.NoError(t, err)
				for _, p := range idx {
					require.NoError(t, os.Remove(p))
				}
			}
			s, err := scanAll(t, dir, tc.from, 0)
			require.NoError(t, err)
			require.Len(t, s.infos, tc.segs)
			assert.Len(t, s.msgs, tc.msgs)
			if tc.segs > 0 {
				assert.Equal(t, tc.firstSeg, s.infos[0].FirstOffset)
				assert.Equal(t, uint64(40), s.msgs[len(s.msgs)-1].Offset)
			}
		})
	}
}

func TestScanStopsWhenFnSaysSo(t *testing.T) {
	dir := scanLog(t, CodecNone)
	s, err := scanAll(t, dir, 0, 3)
	require.NoError(t, err)
	assert.Len(t, s.infos, 3)
	assert.Equal(t, uint64(12), s.msgs[len(s.msgs)-1].Offset)
}

// Issue 5: damage ends a scan with a *CorruptionError, except a torn tail of
// the newest file, which ends it with nil (what Open would truncate).
func TestScanDamage(t *testing.T) {
	const garbage = -1
	cases := []struct {
		name    string
		sealed  bool // damage the first file, else the newest
		seg     int  // which segment of that file (from its end when negative, garbage = append bytes)
		at      int  // byte within the segment to flip
		wantErr bool
	}{
		{"torn tail of the newest file ends with nil", false, garbage, 0, false},
		{"last segment of the newest file damaged ends with nil", false, -2, HeaderSize + 2, false},
		{"damage in the newest file before a whole segment", false, 0, HeaderSize + 2, true},
		{"damage in a sealed file", true, 0, HeaderSize + 2, true},
		{"damaged header in a sealed file", true, 1, 9, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := scanLog(t, CodecS2)
			clean, err := scanAll(t, dir, 0, 0)
			require.NoError(t, err)
			byFile := map[string][]SegmentInfo{}
			var files []string
			for _, info := range clean.infos {
				if len(byFile[info.File]) == 0 {
					files = append(files, info.File)
				}
				byFile[info.File] = append(byFile[info.File], info)
			}
			require.GreaterOrEqual(t, len(files), 2)
			name := files[len(files)-1]
			if tc.sealed {
				name = files[0]
			}
			segs := byFile[name]
			require.GreaterOrEqual(t, len(segs), 2)
			path := filepath.Join(dir, name)
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			wantMsgs := 40
			var hit SegmentInfo
			switch {
			case tc.seg == garbage:
				b = append(b, 1, 2, 3, 4, 5)
			default:
				i := tc.seg
				if i < 0 {
					i = len(segs) + i + 1
				}
				hit = segs[i]
				b[int(hit.Pos)+tc.at] ^= 0x10
				wantMsgs = int(hit.FirstOffset) - 1
			}
			require.NoError(t, os.WriteFile(path, b, 0o644))
			before := dirDigest(t, dir)
			s, err := scanAll(t, dir, 0, 0)
			assert.Len(t, s.msgs, wantMsgs, "messages passed before the damage")
			assert.Equal(t, before, dirDigest(t, dir), "read-only")
			if !tc.wantErr {
				require.NoError(t, err)
				return
			}
			var ce *CorruptionError
			require.ErrorAs(t, err, &ce)
			assert.ErrorIs(t, err, ErrCorrupt)
			assert.Equal(t, path, ce.File)
			assert.Equal(t, hit.Pos, ce.StartByte)
			assert.Equal(t, hit.Pos+hit.Bytes, ce.EndByte, "up to the next whole segment")
			if tc.at >= HeaderSize { // the header still names the offsets
				assert.Equal(t, hit.FirstOffset, ce.FirstOffset)
				assert.Equal(t, hit.FirstOffset+uint64(hit.Count)-1, ce.LastOffset)
			}
		})
	}
}

func TestScanGaps(t *testing.T) {
	dir := fourFiles(t) // 1-4, 5-8, 9-12, 13-16
	moveAside(t, dir, 5)
	_, err := scanAll(t, dir, 0, 0)
	var ce *CorruptionError
	require.ErrorAs(t, err, &ce, "a gap without a marker is damage")
	assert.Equal(t, uint64(5), ce.FirstOffset)
	assert.Equal(t, uint64(8), ce.LastOffset)

	require.NoError(t, AddQuarantined(dir, OffsetRange{5, 8}, ""))
	s, err := scanAll(t, dir, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, []uint64{1, 2, 3, 4, 9, 10, 11, 12, 13, 14, 15, 16}, offsetsOf(s.msgs))
	s, err = scanAll(t, dir, 6, 0)
	require.NoError(t, err)
	assert.Equal(t, uint64(9), s.msgs[0].Offset, "from inside the gap")
}

// Scan while a writer appends and rotates: every scan sees a dense prefix of
// the log and no error (run with -race).
func TestScanWhileAppending(t *testing.T) {
	dir := t.TempDir()
	l, _, err := Open(dir, Options{MaxFileBytes: 2000})
	require.NoError(t, err)
	const segments = 200
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < segments; i++ {
			if _, err := l.Append(int64(i), recs(i*2, 2, 50)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for done := false; !done; {
		n := l.NextOffset()
		done = n > 2*segments
		var next uint64 = 1
		err := Scan(dir, 0, func(_ SegmentInfo, msgs []Message) bool {
			for _, m := range msgs {
				if m.Offset != next {
					t.Errorf("offset %d, want %d", m.Offset, next)
				}
				next++
			}
			return true
		})
		require.NoError(t, err)
		require.GreaterOrEqual(t, next, n, "everything appended before the scan started is seen")
	}
	wg.Wait()
	require.NoError(t, l.Close())
}
