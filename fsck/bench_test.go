package fsck

import (
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/segment"
)

// BenchmarkCheck measures a read-only fsck of one partition of 32 MiB of segments
// (100 records of ~330 B per segment, uncompressed): bytes/s is the scan speed an
// operator can expect per core from a warm page cache.
func BenchmarkCheck(b *testing.B) {
	d := newTestDir(b)
	root := d.root
	id := uuid.Must(uuid.NewV7())
	d.appendMeta(metaPartCreate, id, metaPartitionBody(d.queue, 1, "p0"))
	l, _, err := segment.Open(d.partitionDir(id), segment.Options{MaxFileBytes: 8 << 20})
	require.NoError(b, err)
	payload := []byte(fmt.Sprintf(`{"pad":%q}`, make([]byte, 300)))
	recs := make([]segment.Record, 100)
	var total int64
	for ts := int64(1); total < 32<<20; ts++ {
		for i := range recs {
			recs[i] = segment.Record{ID: uuid.Must(uuid.NewV7()), TransactionID: fmt.Sprintf("tx-%d-%d", ts, i), Payload: payload}
		}
		_, err := l.Append(ts, recs)
		require.NoError(b, err)
		total += int64(len(recs) * (len(payload) + 40))
	}
	require.NoError(b, l.Close())
	b.SetBytes(total)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		rep, err := Run(root, Options{})
		if err != nil || rep.ExitCode != ExitClean {
			b.Fatalf("%v %+v", err, rep)
		}
	}
}
