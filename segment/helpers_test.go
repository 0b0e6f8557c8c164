package segment

import (
	"fmt"
	"testing"

	"github.com/combmq/comb/index"
	"github.com/combmq/comb/vfs"
	"github.com/stretchr/testify/require"
)

// rec builds a record whose fields all derive from n, so tests can check
// exact values after a round trip.
func rec(n int, payloadBytes int) Record {
	r := Record{TransactionID: fmt.Sprintf("tx-%d", n)}
	r.ID[0], r.ID[1], r.ID[15] = byte(n), byte(n>>8), 0x7
	if n%3 == 0 {
		r.TraceID = fmt.Sprintf("trace-%d", n)
	}
	if n%4 == 0 {
		r.ProducerSub = "producer"
	}
	if n%5 == 0 {
		r.Extra = []byte(fmt.Sprintf(`{"dlq":%d}`, n))
	}
	p := fmt.Sprintf(`{"n":%d,"pad":"`, n)
	for len(p) < payloadBytes-2 {
		p += "x"
	}
	r.Payload = []byte(p + `"}`)
	return r
}

func recs(first, n, payloadBytes int) []Record {
	out := make([]Record, n)
	for i := range out {
		out[i] = rec(first+i, payloadBytes)
	}
	return out
}

// requireRecord checks a message against the record it must round-trip.
func requireRecord(t testing.TB, want Record, got Message) {
	t.Helper()
	require.Equal(t, want.ID, got.ID)
	require.Equal(t, want.TransactionID, got.TransactionID)
	require.Equal(t, want.TraceID, got.TraceID)
	require.Equal(t, want.ProducerSub, got.ProducerSub)
	require.Equal(t, string(want.Payload), string(got.Payload))
	require.Equal(t, string(want.Extra), string(got.Extra))
}

// readAll reads every message of l from offset from.
func readAll(t testing.TB, l *Log, from uint64) []Message {
	t.Helper()
	var out []Message
	var rb ReadBuffer
	for {
		msgs, err := l.Read(from, 1000, 0, &rb)
		require.NoError(t, err)
		if len(msgs) == 0 {
			return out
		}
		for _, m := range msgs {
			m.Payload = append([]byte(nil), m.Payload...)
			m.Extra = append([]byte(nil), m.Extra...)
			if len(m.Extra) == 0 {
				m.Extra = nil
			}
			out = append(out, m)
		}
		from = msgs[len(msgs)-1].Offset + 1
	}
}

func openMem(t testing.TB, fs *vfs.Mem, opts Options) (*Log, *RecoveryReport) {
	t.Helper()
	l, rep, err := openLog(fs, "/p", opts)
	require.NoError(t, err)
	return l, rep
}

// withIndexFiles makes every active file get its index file from its first
// segment (the lazy threshold lowered to 1) for the rest of t: tests of
// recovery against an existing index file.
func withIndexFiles(t testing.TB) {
	old := indexFileSegments
	indexFileSegments = 1
	t.Cleanup(func() { indexFileSegments = old })
}

// dedupBytes is a dedup file holding the given (hash, offset) entries.
func dedupBytes(entries ...[2]uint64) []byte {
	b := make([]byte, index.DedupHeaderSize)
	chain := index.PutDedupHeader(b, 0)
	for _, e := range entries {
		b = index.AppendDedupEntry(b, &chain, e[0], e[1])
	}
	return b
}

// The package's dedup tests are about dedup.idx: every log gets one from its
// first load, whatever its size (TestSmallLogKeepsNoDedupFile covers the
// threshold itself).
func init() { dedupFileMinRecords = 0 }

// withDedupFileMin sets the record count from which a load creates
// dedup.idx for the rest of t.
func withDedupFileMin(t testing.TB, n uint64) {
	old := dedupFileMinRecords
	dedupFileMinRecords = n
	t.Cleanup(func() { dedupFileMinRecords = old })
}
