package segment

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A summaries file round-trips every field; one that does not verify, is cut short,
// has another magic or version, or holds offsets no log can have is refused with
// ErrBadSummaries (its readers then verify every log: it is a cache).
func TestSummariesDecoding(t *testing.T) {
	sums := map[[16]byte]Summary{
		{1}: {FirstOffset: 1, NextOffset: 1},
		{2}: {FirstOffset: 7, NextOffset: 4100, LastTimestampMicros: 1_700_000_000_123_456, ActiveBase: 4001, Stamp: 99},
	}
	got, err := DecodeSummaries(EncodeSummaries(sums))
	require.NoError(t, err)
	assert.Equal(t, sums, got)

	good := EncodeSummaries(nil)
	bad := func(edit func(b []byte) []byte) []byte { return edit(append([]byte(nil), good...)) }
	badOffsets := EncodeSummaries(map[[16]byte]Summary{{3}: {FirstOffset: 9, NextOffset: 5}})
	zeroNext := EncodeSummaries(map[[16]byte]Summary{{3}: {}})
	cases := []struct {
		name string
		data []byte
		ok   bool
	}{
		{"an empty file of summaries decodes", good, true},
		{"a short file is refused", good[:5], false},
		{"a flipped byte fails the checksum", bad(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), false},
		{"another magic is refused", bad(func(b []byte) []byte { return append([]byte("XXXX"), b[4:]...) }), false},
		{"bytes after the frame are refused", append(append([]byte(nil), good...), 0), false},
		{"nothing is refused", nil, false},
		{"a first offset past the next is refused", badOffsets, false},
		{"a next offset of 0 is refused", zeroNext, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeSummaries(tc.data)
			if tc.ok {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, ErrBadSummaries)
			}
		})
	}
}

// FuzzSummaries: any bytes decode without panicking, and what decodes encodes back to
// a file that decodes to the same summaries.
func FuzzSummaries(f *testing.F) {
	f.Add(EncodeSummaries(nil))
	f.Add(EncodeSummaries(map[[16]byte]Summary{{1}: {FirstOffset: 1, NextOffset: 5, Stamp: 3}}))
	f.Add([]byte("CMBC\x01\x00\x00\x00\x01\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		sums, err := DecodeSummaries(b)
		if err != nil {
			return
		}
		again, err := DecodeSummaries(EncodeSummaries(sums))
		require.NoError(t, err)
		require.Equal(t, sums, again)
	})
}
