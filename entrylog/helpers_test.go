package entrylog

import (
	"fmt"
	"testing"

	"github.com/combmq/comb/segment"
	"github.com/combmq/comb/vfs"
	"github.com/stretchr/testify/require"
)

// segs makes partition segments byte for byte as the broker's push path
// does (segment.Log.AppendTo): n segments of per records each, payloads
// naming the partition tag and offset so a read-back checks exact values.
type segs struct {
	t   testing.TB
	log *segment.Log
	tag string
}

func newSegs(t testing.TB, tag string) *segs {
	t.Helper()
	l, _, err := segment.Open("/seg/"+tag, segment.Options{FS: vfs.NewMem()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return &segs{t: t, log: l, tag: tag}
}

// next returns the next segment of per records.
func (s *segs) next(per int) []byte {
	s.t.Helper()
	first := s.log.NextOffset()
	recs := make([]segment.Record, per)
	for i := range recs {
		off := first + uint64(i)
		recs[i] = segment.Record{TransactionID: fmt.Sprintf("%s-%d", s.tag, off), Payload: []byte(fmt.Sprintf(`{"p":%q,"o":%d}`, s.tag, off))}
		recs[i].ID[0], recs[i].ID[1] = byte(off), byte(off>>8)
	}
	_, out, err := s.log.AppendTo(nil, int64(1000+first), recs)
	require.NoError(s.t, err)
	return out
}

// pid is a partition id derived from n.
func pid(n int) [16]byte {
	var id [16]byte
	id[0], id[1], id[15] = byte(n), byte(n>>8), 0xee
	return id
}

// checkSegment decodes seg and checks it holds tag's records from base on.
func checkSegment(t testing.TB, seg []byte, tag string, base uint64, count int) {
	t.Helper()
	var rb segment.ReadBuffer
	info, msgs, err := segment.DecodeSegment(seg, &rb)
	require.NoError(t, err)
	require.Equal(t, base, info.FirstOffset)
	require.Len(t, msgs, count)
	for i, m := range msgs {
		off := base + uint64(i)
		require.Equal(t, fmt.Sprintf("%s-%d", tag, off), m.TransactionID)
		require.Equal(t, fmt.Sprintf(`{"p":%q,"o":%d}`, tag, off), string(m.Payload))
	}
}

func openMem(t testing.TB, fs *vfs.Mem, opts Options) (*Log, *Report) {
	t.Helper()
	opts.FS = fs
	l, rep, err := Open("/data/small", opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l, rep
}

// readAllOf reads every live segment of id and checks them against tag:
// contiguous from the first extent's base, per records each.
func readAllOf(t testing.TB, l *Log, id [16]byte, tag string, per int) uint64 {
	t.Helper()
	var next uint64
	for _, e := range l.Extents(id) {
		if next != 0 {
			require.Equal(t, next, e.Base, "extents of %s are contiguous", tag)
		}
		seg, err := l.Segment(id, e.Base, nil)
		require.NoError(t, err)
		checkSegment(t, seg, tag, e.Base, per)
		next = e.Next()
	}
	return next
}
