package segment

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAppendReadRoundTripMem(t *testing.T) {
	fs := newMemFS()
	l, rep := openMem(t, fs, Options{Codec: CodecS2})
	assert.False(t, rep.Repaired())
	assert.Equal(t, uint64(1), l.NextOffset())
	assert.Equal(t, uint64(1), l.FirstOffset())
	var want []Record
	for i := 0; i < 10; i++ {
		rs := recs(i*100, 100, 200)
		first, err := l.Append(int64(1000+i), rs)
		require.NoError(t, err)
		assert.Equal(t, uint64(i*100+1), first)
		want = append(want, rs...)
	}
	got := readAll(t, l, 0)
	require.Len(t, got, len(want))
	for i := range want {
		assert.Equal(t, uint64(i+1), got[i].Offset)
		assert.Equal(t, int64(1000+i/100), got[i].TimestampMicros)
		requireRecord(t, want[i], got[i])
	}
	require.NoError(t, l.Close())
	l2, rep := openMem(t, fs, Options{})
	assert.False(t, rep.Repaired(), "%+v", rep)
	assert.Equal(t, uint64(1001), l2.NextOffset())
	got = readAll(t, l2, 555)
	require.Len(t, got, 1000-554)
	requireRecord(t, want[554], got[0])
}
