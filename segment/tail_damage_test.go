package segment

import (
	"testing"

	"github.com/combmq/comb/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issues 2 and 5: Open truncates the newest file only at a true torn tail. When
// a whole segment (checksum verifies) follows the damage, the damaged bytes held
// acknowledged data and so does what follows: Open refuses with a
// *CorruptionError naming the file, the damaged byte range and its offsets, and
// leaves the file as it was.
func TestOpenRefusesDamageFollowedByWholeSegment(t *testing.T) {
	orig := vfs.NewMem()
	lastStart, size := threeSegments(t, orig, Options{}) // offsets 1-4, 5-8, 9-12
	full := orig.Bytes("/p/" + segName(1))
	h1, err := parseHeader(full)
	require.NoError(t, err)
	secondStart := int(h1.size())

	cases := []struct {
		name  string
		index string // "kept": the index lists every segment; "dropped": rebuilt from the file
		at    int    // byte to flip, relative to the second segment
	}{
		{"flipped payload byte, index dropped", "dropped", HeaderSize + 3},
		{"flipped magic byte, index dropped", "dropped", 0},
		{"flipped count byte, index dropped", "dropped", 16},
		{"flipped checksum byte, index dropped", "dropped", 40},
		{"flipped payload byte, index lists only the first segment", "first only", HeaderSize + 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := orig.Crash(true)
			b := append([]byte(nil), full...)
			b[secondStart+tc.at] ^= 0x40
			fs.SetBytes("/p/"+segName(1), b)
			switch tc.index {
			case "dropped":
				require.NoError(t, fs.Remove("/p/"+idxName(1)))
			case "first only":
				idx := fs.Bytes("/p/" + idxName(1))
				fs.SetBytes("/p/"+idxName(1), idx[:len(idx)-2*32]) // header + first entry
			}
			_, _, err := openLog(fs, "/p", Options{})
			var ce *CorruptionError
			require.ErrorAs(t, err, &ce)
			assert.ErrorIs(t, err, ErrCorrupt)
			assert.Equal(t, "/p/"+segName(1), ce.File)
			assert.Equal(t, int64(secondStart), ce.StartByte)
			assert.Equal(t, int64(lastStart), ce.EndByte, "the range ends where the next whole segment starts")
			assert.Equal(t, uint64(5), ce.FirstOffset)
			assert.Equal(t, uint64(8), ce.LastOffset)
			assert.Equal(t, b, fs.Bytes("/p/"+segName(1)), "nothing truncated")
			assert.Len(t, b, size)
		})
	}
}

// A whole segment whose checksum verifies but whose base offset is wrong is not
// a torn write either: Open refuses instead of cutting it off.
func TestOpenRefusesWholeSegmentOutOfOrder(t *testing.T) {
	orig := vfs.NewMem()
	lastStart, size := threeSegments(t, orig, Options{})
	full := orig.Bytes("/p/" + segName(1))
	b := append([]byte(nil), full...)
	h, err := parseHeader(b[lastStart:])
	require.NoError(t, err)
	h.base = 20 // 9 expected
	putHeader(b[lastStart:], h)
	sum := checksum(b[lastStart:], b[lastStart+HeaderSize:size])
	for i := 0; i < 8; i++ {
		b[lastStart+40+i] = byte(sum >> (8 * i))
	}
	fs := orig.Crash(false)
	fs.SetBytes("/p/"+segName(1), b)
	_, _, err = openLog(fs, "/p", Options{})
	var ce *CorruptionError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, int64(lastStart), ce.StartByte)
	assert.Equal(t, int64(size), ce.EndByte)
	assert.Equal(t, uint64(20), ce.FirstOffset)
	assert.Equal(t, uint64(23), ce.LastOffset)
	assert.Equal(t, b, fs.Bytes("/p/"+segName(1)))
}

// The rule's other half: damage with nothing whole after it is still a torn
// tail, cut and reported, whatever the state of the index.
func TestOpenStillTruncatesTornTailWithoutWholeSegmentAfter(t *testing.T) {
	orig := vfs.NewMem()
	lastStart, size := threeSegments(t, orig, Options{})
	full := orig.Bytes("/p/" + segName(1))
	for _, keepIndex := range []bool{true, false} {
		fs := orig.Crash(keepIndex)
		b := append([]byte(nil), full...)
		b[lastStart+HeaderSize+1] ^= 0x01
		b = append(b, make([]byte, 64)...) // zeros after a damaged last segment
		fs.SetBytes("/p/"+segName(1), b)
		l, rep := openMem(t, fs, Options{})
		assert.Equal(t, uint64(9), l.NextOffset())
		assert.Equal(t, int64(size+64-lastStart), rep.TruncatedBytes)
		assert.Equal(t, uint64(9), rep.LostFirstOffset)
		assert.Equal(t, uint64(12), rep.LostLastOffset)
		require.NoError(t, l.Close())
	}
}

// The same at every byte of the middle segment, with the index gone (the case
// where Open used to cut the file at the damage and drop the last segment too).
func TestOpenRefusesMidFileDamageAtEveryByte(t *testing.T) {
	for _, codec := range []Codec{CodecNone, CodecS2} {
		t.Run(codec.String(), func(t *testing.T) {
			orig := vfs.NewMem()
			lastStart, _ := threeSegments(t, orig, Options{Codec: codec, MinCompressBytes: -1})
			full := orig.Bytes("/p/" + segName(1))
			h1, err := parseHeader(full)
			require.NoError(t, err)
			for at := int(h1.size()); at < lastStart; at++ {
				fs := orig.Crash(false)
				b := append([]byte(nil), full...)
				b[at] ^= 0x01
				fs.SetBytes("/p/"+segName(1), b)
				_, _, err := openLog(fs, "/p", Options{})
				var ce *CorruptionError
				require.ErrorAs(t, err, &ce, "flip at %d", at)
				assert.Equal(t, h1.size(), ce.StartByte, "flip at %d", at)
				assert.Equal(t, int64(lastStart), ce.EndByte, "flip at %d", at)
				assert.Equal(t, b, fs.Bytes("/p/"+segName(1)), "flip at %d: nothing truncated", at)
			}
		})
	}
}
