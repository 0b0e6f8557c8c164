package walentry

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/meta"
)

func TestMetaRoundTrip(t *testing.T) {
	recs := []meta.Record{
		{Kind: meta.KindQueuePut, ID: [16]byte{1}, Name: "q", Opts: meta.DefaultQueueOptions()},
		{Kind: meta.KindPartitionCreate, ID: [16]byte{2}, QueueID: [16]byte{1}, Name: "p"},
	}
	b, err := EncodeMeta(recs...)
	require.NoError(t, err)
	got, err := DecodeMeta(b)
	require.NoError(t, err)
	require.Equal(t, recs, got)
	_, _, err = SplitLog(make([]byte, 15))
	require.Error(t, err)
}

func FuzzDecodeMeta(f *testing.F) {
	b, _ := EncodeMeta(meta.Record{Kind: meta.KindQueueDelete, ID: [16]byte{9}})
	f.Add(b)
	f.Fuzz(func(t *testing.T, payload []byte) {
		recs, err := DecodeMeta(payload)
		if err != nil {
			return
		}
		again, err := EncodeMeta(recs...)
		require.NoError(t, err)
		_, err = DecodeMeta(again)
		require.NoError(t, err)
	})
}
