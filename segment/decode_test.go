package segment

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/vfs"
)

// appendedSegments returns the bytes AppendTo hands back (what a commit-log
// entry holds) for two pushes, with codec.
func appendedSegments(t testing.TB, codec Codec) ([][]byte, []Record) {
	t.Helper()
	l, _ := openMem(t, vfs.NewMem(), Options{Codec: codec, MinCompressBytes: -1})
	var segs [][]byte
	var all []Record
	for i, n := range []int{3, 2} {
		rs := recs(len(all), n, 40)
		_, seg, err := l.AppendTo(nil, int64(100*(i+1)), rs)
		require.NoError(t, err)
		segs, all = append(segs, seg), append(all, rs...)
	}
	require.NoError(t, l.Close())
	return segs, all
}

// DecodeSegment reads a commit-log entry's segment back as the records pushed, with the
// header's offsets and timestamp, whatever the codec; a segment that does not verify is
// ErrCorrupt, never decoded (docs/format.md 2.2: the checksum covers every bit).
func TestDecodeSegment(t *testing.T) {
	for _, codec := range []Codec{CodecNone, CodecS2, CodecZstd} {
		t.Run(codec.String(), func(t *testing.T) {
			segs, want := appendedSegments(t, codec)
			var buf ReadBuffer
			info, msgs, err := DecodeSegment(segs[1], &buf)
			require.NoError(t, err)
			assert.Equal(t, SegmentInfo{Bytes: int64(len(segs[1])), FirstOffset: 4, Count: 2, TimestampMicros: 200, Codec: info.Codec}, info)
			require.Len(t, msgs, 2)
			for i, m := range msgs {
				assert.Equal(t, uint64(4+i), m.Offset)
				assert.Equal(t, int64(200), m.TimestampMicros)
				requireRecord(t, want[3+i], m)
			}
		})
	}
	segs, _ := appendedSegments(t, CodecNone)
	flipped := append([]byte(nil), segs[0]...)
	flipped[len(flipped)-3] ^= 0x20
	cases := []struct {
		name string
		seg  []byte
	}{
		{"a flipped payload bit fails the checksum", flipped},
		{"a short segment", segs[0][:len(segs[0])-1]},
		{"two segments are not one", append(append([]byte(nil), segs[0]...), segs[1]...)},
		{"a header alone", segs[0][:HeaderSize]},
		{"nothing", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var buf ReadBuffer
			_, msgs, err := DecodeSegment(tc.seg, &buf)
			assert.ErrorIs(t, err, ErrCorrupt)
			assert.Nil(t, msgs)
		})
	}
}

// FuzzDecodeSegment: any bytes as a commit-log entry's segment decode without
// panicking; what decodes verified, and holds exactly the header's records.
func FuzzDecodeSegment(f *testing.F) {
	for _, codec := range []Codec{CodecNone, CodecS2, CodecZstd} {
		segs, _ := appendedSegments(f, codec)
		f.Add(segs[0])
	}
	f.Add([]byte("CMBS\x01"))
	f.Fuzz(func(t *testing.T, seg []byte) {
		var buf ReadBuffer
		info, msgs, err := DecodeSegment(seg, &buf)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error not ErrCorrupt: %v", err)
			}
			return
		}
		if int64(len(seg)) != info.Bytes || len(msgs) != int(info.Count) {
			t.Fatalf("decoded %d of %d bytes, %d messages for count %d", info.Bytes, len(seg), len(msgs), info.Count)
		}
		for i, m := range msgs {
			if m.Offset != info.FirstOffset+uint64(i) {
				t.Fatalf("message %d at offset %d, base %d", i, m.Offset, info.FirstOffset)
			}
		}
	})
}
